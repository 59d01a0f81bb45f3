"""Freezing notebooks: run once on a GPU, kept in a store, rendered anywhere.

``source_hash`` (what a result depends on), ``record`` (the typed records of the store),
``store`` (its layout and where each notebook stands), ``execute`` (running a notebook with
nbclient and freezing it) and ``render`` (a frozen notebook to a page, without executing).
"""
