"""``worklog-gen check``: what :func:`~worklog_gen.log.parse.load` reports, made stricter, plus
checks of the log's order.

Every diagnostic has a code and a severity (:mod:`worklog_gen.log.diagnostics`): errors (``check``
exits 1), warnings (the author must act; ``--strict`` builds fail) and info notes (style and
habits). ``check`` makes one warning an error: a countdown that disagrees with the target date.
It adds: days out of order within a file (a day before one already written above it).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from worklog_gen.log.diagnostics import Diagnostic, DiagnosticCode, Severity
from worklog_gen.log.model import DateOrder, Worklog
from worklog_gen.log.parse import load

ERROR_CODES = frozenset({DiagnosticCode.TARGET_DATE})
"""Codes that ``load`` reports as warnings and the linter as errors."""


def check(paths: list[str | Path] | str | Path, *, date_order: DateOrder = "auto", year: int | None = None,
          today=None) -> list[Diagnostic]:
    """All diagnostics for the worklog files and folders ``paths``, in file and line order
    (``year`` and ``today`` as :func:`worklog_gen.log.parse.load` takes them).

    Raises:
        FileNotFoundError: a path does not exist.
        ValueError: ``date_order`` is not ``"auto"``, ``"mdy"`` or ``"dmy"``.
    """
    return lint(load(paths, date_order=date_order, year=year, today=today))


def lint(log: Worklog) -> list[Diagnostic]:
    """The diagnostics of an already loaded ``log``, with the linter's own checks."""
    diagnostics = [replace(d, severity=Severity.ERROR) if d.code in ERROR_CODES else d for d in log.diagnostics]
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
                diagnostics.append(Diagnostic(e.path, e.line, msg, DiagnosticCode.OUT_OF_ORDER))
            if latest is None or (e.date < latest.date if newest_first else e.date > latest.date):
                latest = e
    rank = {path: k for k, path in enumerate(log.paths)}
    diagnostics.sort(key=lambda d: (rank.get(d.path, len(rank)), d.line, d.severity.rank))
    return diagnostics


def report(diagnostics: list[Diagnostic]) -> str:
    """The text ``check`` prints: errors and warnings in file and line order (a repair says how
    to write it back), then the info notes under their own heading."""
    problems = [d for d in diagnostics if d.severity is not Severity.INFO]
    notes = [d for d in diagnostics if d.severity is Severity.INFO]
    lines = [str(d) + ("  [check --fix writes this repair]" if d.code.repair else "") for d in problems]
    if notes:
        lines += ["" if lines else None, "Notes (style and habits; they never fail a build):"]
        lines += [str(d) for d in notes]
    return "\n".join(line for line in lines if line is not None)


def summary(diagnostics: list[Diagnostic]) -> dict[str, int]:
    """How many diagnostics of each severity: ``{"error": n, "warning": n, "info": n}``."""
    return {s.value: sum(d.severity is s for d in diagnostics) for s in Severity}
