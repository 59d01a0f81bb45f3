"""worklog-gen: a learning log (T-minus, progress log, dated notes, posts) and its GPU-kernel
notebooks, made into a MkDocs-Material site.

The package is four rooms, and data flows one way through them:

- :mod:`worklog_gen.log` reads the author's files into typed entries;
- :mod:`worklog_gen.site` makes the pages and files of the site from them;
- :mod:`worklog_gen.freeze` runs topic notebooks once on a GPU, keeps their results in a store
  and renders them as pages, with no GPU;
- :mod:`worklog_gen.kit` is what the notebooks import while they run (timing, ceilings, charts).

On top: :mod:`worklog_gen.plugin` (the MkDocs plugin, a thin adapter over
:func:`worklog_gen.site.generate.generate`), :mod:`worklog_gen.cli` (``worklog-gen``) and
:mod:`worklog_gen.config` (the plugin's options, shared by both).

The names below are importable from here; each is loaded on first use, so ``import
worklog_gen`` stays cheap and a notebook's kernel never imports MkDocs through it. So is
``__version__``: the installed distribution's version (:mod:`importlib.metadata`), which
setuptools-scm takes from the git tag at build time; no file here holds it.
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    "load": "worklog_gen.log", "parse": "worklog_gen.log", "Worklog": "worklog_gen.log",
    "Entry": "worklog_gen.log", "Diagnostic": "worklog_gen.log", "DiagnosticCode": "worklog_gen.log",
    "Severity": "worklog_gen.log",
    "generate": "worklog_gen.site.generate", "GeneratedSite": "worklog_gen.site.generate",
    "WorklogConfig": "worklog_gen.config", "load_plugin_config": "worklog_gen.config",
    "source_hash": "worklog_gen.freeze.source_hash", "FreezeRecord": "worklog_gen.freeze.record",
    "NotebookState": "worklog_gen.freeze.record", "execute_notebook": "worklog_gen.freeze.execute",
    "render_topic": "worklog_gen.freeze.render", "status": "worklog_gen.freeze.store",
}
__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str):
    """The public names, imported from their modules on first use (PEP 562)."""
    if name == "__version__":
        from importlib import metadata

        try:
            return metadata.version("worklog-gen")
        except metadata.PackageNotFoundError:  # this source tree on sys.path, never installed
            return "0+unknown"
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'worklog_gen' has no attribute {name!r}")
