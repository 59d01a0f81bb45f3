"""Making the site: parsed entries and frozen notebooks to pages and files.

``layout`` (every generated path and URL), ``generate`` (every file, for any engine), ``pages``
(the worklog's pages), ``stats``, ``heatmap``, ``feed``, ``export``, ``topics`` (which topics an
entry mentions), ``kernels`` (the Kernels page), ``markup`` and ``old_links``.
"""
