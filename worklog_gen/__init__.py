"""worklog-gen: turn a T-minus learning worklog into a MkDocs-Material site.

Data flows one way: text -> :mod:`worklog_gen.worklog` (typed entries) ->
:mod:`worklog_gen.pages` (markdown pages) -> :mod:`worklog_gen.plugin` (MkDocs);
notebooks -> :mod:`worklog_gen.freeze` (frozen store) -> :mod:`worklog_gen.render`.
"""

__version__ = "0.1.0"
