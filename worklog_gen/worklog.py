"""Parse a T-minus worklog into typed entries.

A worklog is markdown: optional YAML front matter (plain, or wrapped in an HTML
comment as Jekyll/al-folio exports leave it, see :mod:`worklog_gen.front_matter`), a
preamble, then entries, each starting at a header line such as ``12/09/25 (T - 154)``.
The date is followed by the *countdown*: days left to the *target date*, so
``target_date = date + countdown`` for every entry.

This module runs the parse; each rule lives in the module named after it:
:mod:`~worklog_gen.headers` (header lines, dates, month/day order),
:mod:`~worklog_gen.repair` (damaged exports), :mod:`~worklog_gen.markdown_scan`
(links and prose, with markdown-it-py), :mod:`~worklog_gen.words` (word counts),
:mod:`~worklog_gen.tasks` (status markers), :mod:`~worklog_gen.parallel` (links,
words and tasks of a large log's entries in several processes). The data model is in
:mod:`~worklog_gen.model` and re-exported here. Data flows one way: this module
knows nothing of pages, MkDocs or notebooks.

**Header lines** always start an entry, even inside a fenced code block (an entry
never runs past the next header). A line of that shape whose date does not exist
(``02/30/2025``) is not a header: it stays as text where it is and is reported as an
error. ``T - X Days`` in the preamble has no date and is plain text.

**Target date.** The front matter's ``target_date:`` or ``target:`` (YYYY-MM-DD) if
given, else the one most entries give (on a tie, the one the latest entry gives).

**Lines.** A line ends at LF, CRLF or a lone CR, as in CommonMark; repairs keep the
number of lines, so every ``line`` here is a line of the author's file. The parts
of a file (front matter, preamble, each entry's header and body) cover each of its
lines exactly once: :meth:`Worklog.reassemble` puts them back together.

**One entry per file.** A file with no header line whose front matter has ``date:``
or whose name starts with an ISO date (``2025-12-09.md``) is one entry: the whole
text after the front matter, countdown from the front matter's ``countdown:`` (or
none). Its :attr:`Entry.header` is ``""``. Front matter ``date``/``countdown`` are
ignored in files that have header lines.

**Diagnostics.** :func:`parse` and :func:`load` report repairs (warnings, see
:mod:`worklog_gen.repair`), invalid dates, contradictory month/day order, bad front
matter and duplicate days (errors), and entries whose target date disagrees with the
log's (warnings here; :func:`worklog_gen.lint.check` makes them errors). Duplicate
days are all kept: the first by date, then file, then line, is the day's page; each
later one gets ``duplicate_index`` 1, 2, ... (slug ``2025-12-09-2``) and an error.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from worklog_gen import repair
from worklog_gen.front_matter import (
    Span,
    front_matter_span,
    front_matter_target,
    per_file_date,
    read_front_matter,
)
from worklog_gen.headers import (
    HEADER_HINT,
    HEADER_RE,
    HeaderStyle,
    format_header,
    header_countdown,
    header_date,
    header_style,
    infer_date_order,
)
from worklog_gen.line_index import LineIndex
from worklog_gen.model import DateOrder, Diagnostic, Entry, Link, SourceFile, Task, TaskStatus, Worklog
from worklog_gen.parallel import FileBodies, analyse
from worklog_gen.tasks import parse_task
from worklog_gen.words import count_words

__all__ = [
    "HEADER_RE",
    "DateOrder",
    "Diagnostic",
    "Entry",
    "HeaderStyle",
    "Link",
    "SourceFile",
    "Task",
    "TaskStatus",
    "Worklog",
    "count_words",
    "format_header",
    "header_style",
    "load",
    "parse",
    "parse_task",
    "worklog_files",
]


@dataclass
class _Prepared:
    """A file's repaired lines and header-shaped lines, before dates are read."""

    path: str
    lines: list[str]
    fm: Span
    header_like: list[tuple[int, re.Match]]
    diagnostics: list[Diagnostic]
    index: LineIndex
    """Index of :attr:`lines` (its ``text`` is ``"\\n".join(lines)``)."""


def _prepare(text: str, path: str) -> _Prepared:
    text, diagnostics = repair.normalize_line_ends(text, path)
    lines = text.split("\n")
    index = LineIndex(lines, text=text)
    mojibake = repair.fix_encoding_lines(lines, path, index=index)
    if mojibake:
        index = LineIndex(lines)
    diagnostics += mojibake
    fm = front_matter_span(lines)
    header_like = []
    for i in index.matching(HEADER_HINT):
        if i >= fm[0] and (m := HEADER_RE.match(lines[i])):
            header_like.append((i, m))
    boundaries = [i for i, _ in header_like]
    repaired = repair.fix_link_lines(lines, path, start=fm[0], boundaries=boundaries, index=index)
    if repaired:
        index = LineIndex(lines)
    diagnostics += repaired
    return _Prepared(path, lines, fm, header_like, diagnostics, index)


def _build(p: _Prepared, order: Literal["mdy", "dmy"]) -> tuple[SourceFile, list[Diagnostic]]:
    """Entries of one prepared file (dates read with ``order``), before their links, tasks and words."""
    lines = p.lines
    diagnostics = list(p.diagnostics)
    fm, fm_diags = read_front_matter(lines, p.fm, p.path)
    diagnostics += fm_diags
    fm_end = p.fm[0]
    src = SourceFile(
        path=p.path,
        front_matter_text="\n".join(lines[:fm_end]),
        front_matter_lines=fm_end,
        front_matter=fm,
        line_count=len(lines),
    )
    headers: list[tuple[int, dt.date, int]] = []
    for i, m in p.header_like:
        try:
            date = header_date(m, order)
        except ValueError as exc:
            words = {"mdy": "month-first", "dmy": "day-first"}[order] if not m["iy"] else "ISO"
            msg = f"invalid date {m['date']} ({words}): {exc}; the line is kept as text"
            diagnostics.append(Diagnostic(p.path, i + 1, msg, "error", "invalid-date"))
            continue
        headers.append((i, date, header_countdown(m)))
    entries: list[Entry] = []
    if headers:
        first = headers[0][0]
        src.preamble, src.preamble_lines = "\n".join(lines[fm_end:first]), first - fm_end
        bounds = [h[0] for h in headers[1:]] + [len(lines)]
        text, starts = p.index.text, p.index.starts  # a body is a slice of the text: no join per line
        for (i, date, countdown), end in zip(headers, bounds):
            body = text[starts[i + 1] : starts[end] - 1]
            entries.append(Entry(date, countdown, lines[i], body, p.path, i + 1, end_line=end))
    else:
        date, countdown, more = per_file_date(lines, p.fm, p.path, fm, order)
        diagnostics += more
        if date is None:
            src.preamble, src.preamble_lines = "\n".join(lines[fm_end:]), len(lines) - fm_end
        else:
            body = "\n".join(lines[fm_end:])
            entries.append(Entry(date, countdown, "", body, p.path, fm_end + 1, end_line=len(lines)))
    src.entries = entries
    return src, diagnostics


def _analyse(
    prepared: list[_Prepared], files: list[SourceFile], *, fast: bool, min_entries: int | None, processes: int | None
) -> None:
    """Set the links, words and tasks of every entry of ``files`` (built from ``prepared``),
    on several cores for a large log (:func:`worklog_gen.parallel.analyse`)."""
    jobs = [
        (src, FileBodies(p.lines, p.index, [(e.line if e.header else e.line - 1, e.end_line) for e in src.entries]))
        for p, src in zip(prepared, files)
        if src.entries
    ]
    found = analyse([job for _, job in jobs], fast=fast, min_entries=min_entries, processes=processes)
    for (src, _), (links, words, tasks) in zip(jobs, found):
        for e, e_links, e_words, e_tasks in zip(src.entries, links, words, tasks):
            e.links, e.words, e.tasks = e_links, e_words, e_tasks


def _assemble(files: list[SourceFile], diagnostics: list[Diagnostic], order: Literal["mdy", "dmy"]) -> Worklog:
    """One :class:`Worklog` from parsed files: entries sorted by date, duplicates and target date checked."""
    entries = sorted((e for f in files for e in f.entries), key=lambda e: e.date)  # stable: file order within a day
    by_day: dict[dt.date, list[Entry]] = {}
    for e in entries:
        same_day = by_day.setdefault(e.date, [])
        same_day.append(e)
        e.duplicate_index = len(same_day) - 1
        if e.duplicate_index:
            first = same_day[0]
            msg = f"duplicate day {e.date}: also at {first.source}; both are kept, this one as page {e.slug}"
            diagnostics.append(Diagnostic(e.path, e.line, msg, "error", "duplicate-day"))
    # The log's preamble and front matter are those of its first file with a preamble
    # (in a folder of one-entry files, an index or README), else of its first file.
    main = next((f for f in files if f.preamble.strip()), files[0] if files else SourceFile(""))
    target, more = front_matter_target(main.front_matter, main.front_matter_text, main.path)
    diagnostics += more
    given_by = f"the front matter of {main.path} gives"
    if target is None:
        target, given_by = _majority_target(entries), "most entries give"
    if target is not None:
        for e in entries:
            t = e.target_date
            if t is not None and t != target:
                msg = (
                    f"countdown {_t_minus(e.countdown)} gives target date {t}, but {given_by} "
                    f"{target} (expected {_t_minus((target - e.date).days)})"
                )
                diagnostics.append(Diagnostic(e.path, e.line, msg, "warning", "target-date"))
    rank = {f.path: k for k, f in enumerate(files)}
    diagnostics.sort(key=lambda d: (rank.get(d.path, len(rank)), d.line))
    return Worklog(
        entries=entries,
        preamble=main.preamble,
        front_matter=main.front_matter,
        target_date=target,
        diagnostics=diagnostics,
        paths=[f.path for f in files],
        files=files,
        date_order=order,
    )


def _t_minus(countdown: int) -> str:
    return f"T - {countdown}" if countdown >= 0 else f"T + {-countdown}"


def _majority_target(entries: list[Entry]) -> dt.date | None:
    """The target date most entries give; on a tie, the one the latest of them gives."""
    counts: Counter[dt.date] = Counter()
    latest: dict[dt.date, dt.date] = {}
    for e in entries:
        t = e.target_date
        if t is not None:
            counts[t] += 1
            latest[t] = max(latest.get(t, e.date), e.date)
    if not counts:
        return None
    return max(counts, key=lambda t: (counts[t], latest[t]))


def parse(text: str, path: str | Path = "<string>", *, date_order: DateOrder = "auto") -> Worklog:
    """Parse the text of one worklog file.

    ``path`` names the file in diagnostics and entries (and gives the date of a
    one-entry file named ``2025-12-09.md``). Never raises on content: problems are
    :attr:`Worklog.diagnostics`.

    Raises:
        ValueError: ``date_order`` is not ``"auto"``, ``"mdy"`` or ``"dmy"``.
    """
    return _parse_texts([(str(path), text)], date_order=date_order)


def _parse_texts(
    texts: list[tuple[str, str]],
    *,
    date_order: DateOrder,
    fast: bool = True,
    extra: list[Diagnostic] | None = None,
    parallel_min_entries: int | None = None,
    parallel_processes: int | None = None,
) -> Worklog:
    """Parse ``(path, text)`` pairs into one :class:`Worklog`; ``extra`` diagnostics
    (from decoding) join the parser's. ``fast=False`` is the reference analysis.
    ``parallel_min_entries`` and ``parallel_processes`` override the size from which
    entries are analysed in several processes, and how many (``min_entries`` and
    ``processes`` of :func:`worklog_gen.parallel.analyse`)."""
    with _no_cycle_collection():
        prepared = [_prepare(text, path) for path, text in texts]
        order, diagnostics = infer_date_order(((p.path, i, m) for p in prepared for i, m in p.header_like), date_order)
        diagnostics += extra or []
        files = []
        for p in prepared:
            src, more = _build(p, order)
            files.append(src)
            diagnostics += more
        _analyse(prepared, files, fast=fast, min_entries=parallel_min_entries, processes=parallel_processes)
        return _assemble(files, diagnostics, order)


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause Python's cycle collector for the parse, and restore it after.

    The parse allocates millions of short-lived objects (markdown-it-py tokens, lines,
    matches), which reference counting frees; each allocation burst also triggers the
    cycle collector, which re-scans every live container (the lines, the entries) and
    finds nothing to free. Pausing it saved 0.09 s of 1.49 s CPU on the 10,000-entry
    benchmark. Memory is still freed as the parse goes; any cycle left is collected
    once the collector resumes.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def worklog_files(paths: list[str | Path] | str | Path) -> list[Path]:
    """The ``*.md`` files named by ``paths``: files as given, folders searched
    recursively (sorted, skipping hidden files and folders), each file once.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(
                q
                for q in p.rglob("*.md")
                if q.is_file() and not any(part.startswith(".") for part in q.relative_to(p).parts)
            )
        elif p.is_file():
            found.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or folder")
    seen: set[Path] = set()
    unique = []
    for q in found:
        key = q.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(q)
    return unique


def load(paths: list[str | Path] | str | Path, *, date_order: DateOrder = "auto") -> Worklog:
    """Parse files and folders of ``*.md`` files into one :class:`Worklog`.

    Files are read as bytes and decoded as UTF-8 (other encodings with a warning, see
    :func:`worklog_gen.repair.decode_bytes`); month/day order is inferred over all of
    them together. Entries from all files are sorted by date. The target date is
    the front matter's ``target_date:`` or ``target:`` (YYYY-MM-DD), else the one
    most entries give (``date + countdown``; on a tie, the latest entry's). Each entry
    whose target date differs gets a *warning* naming both dates; two entries on one
    day get an *error* and both are kept (see the module docstring).
    :attr:`Worklog.preamble` and :attr:`Worklog.front_matter` come from the first
    file with a preamble (else the first file); :attr:`Worklog.files` has each file's.

    Raises:
        FileNotFoundError: a path does not exist.
        OSError: a file cannot be read.
        ValueError: ``date_order`` is not ``"auto"``, ``"mdy"`` or ``"dmy"``.
    """
    texts, diagnostics = [], []
    for q in worklog_files(paths):
        text, diags = repair.decode_bytes(q.read_bytes(), str(q))
        texts.append((str(q), text))
        diagnostics += diags
    return _parse_texts(texts, date_order=date_order, extra=diagnostics)
