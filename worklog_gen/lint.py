"""Lint a worklog: what :func:`~worklog_gen.worklog.load` reports, made stricter, plus
checks of the log's order and content.

Errors (``worklog-gen check`` exits 1):

* invalid dates on header lines (``02/30/2025``), contradictory month/day order;
* countdowns that disagree with the log's target date (a warning in ``load``);
* two entries on the same day; invalid front matter.

Warnings:

* days out of order within a file (a day before one already written above it);
* empty entries (a header with no text under it);
* damaged text that was repaired (mojibake, backwards links, bare URLs, CRLF line
  ends, a byte-order mark, bytes that are not UTF-8).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from worklog_gen.worklog import DateOrder, Diagnostic, Worklog, load

ERROR_CODES = frozenset({"target-date"})
"""Codes that ``load`` reports as warnings and the linter as errors."""


def check(paths: list[str | Path] | str | Path, *, date_order: DateOrder = "auto", year: int | None = None,
          today=None) -> list[Diagnostic]:
    """All diagnostics for the worklog files and folders ``paths``, in file and line order
    (``year`` and ``today`` as :func:`worklog_gen.worklog.load` takes them).

    Raises:
        FileNotFoundError: a path does not exist.
        ValueError: ``date_order`` is not ``"auto"``, ``"mdy"`` or ``"dmy"``.
    """
    return lint(load(paths, date_order=date_order, year=year, today=today))


def lint(log: Worklog) -> list[Diagnostic]:
    """The diagnostics of an already loaded ``log``, with the linter's own checks."""
    diagnostics = [replace(d, severity="error") if d.code in ERROR_CODES else d for d in log.diagnostics]
    empty_reported = {(d.path, d.line) for d in diagnostics if d.code == "empty-entry"}
    for f in log.files:
        # a file runs forward in time, or newest first (as progress logs often do): what most
        # of its steps say; a step the other way is out of order
        steps = [b.date > a.date for a, b in zip(f.entries, f.entries[1:]) if a.date != b.date]
        newest_first = sum(not s for s in steps) > sum(steps)
        latest = None
        for e in f.entries:
            if latest is not None and (e.date > latest.date if newest_first else e.date < latest.date):
                way = "back in time, newest first" if newest_first else "forward in time"
                msg = f"day {e.date} comes after {latest.date} (line {latest.line}); entries of this file run {way}"
                diagnostics.append(Diagnostic(e.path, e.line, msg, "warning", "out-of-order"))
            if latest is None or (e.date < latest.date if newest_first else e.date > latest.date):
                latest = e
            if not e.body.strip() and (e.path, e.line) not in empty_reported:
                diagnostics.append(Diagnostic(e.path, e.line, f"entry {e.date} is empty", "warning", "empty-entry"))
    rank = {path: k for k, path in enumerate(log.paths)}
    diagnostics.sort(key=lambda d: (rank.get(d.path, len(rank)), d.line))
    return diagnostics
