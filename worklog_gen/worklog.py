"""Parse a T-minus worklog into typed entries.

A worklog is markdown: optional YAML front matter (plain, or wrapped in an HTML
comment as Jekyll/al-folio exports leave it, see :mod:`worklog_gen.front_matter`), a
preamble, then entries, each starting at a header line such as ``12/09/25 (T - 154)``.
The date is followed by the *countdown*: days left to the *target date*, so
``target_date = date + countdown`` for every entry.

This module runs the parse; each rule lives in the module named after it:
:mod:`~worklog_gen.headers` (header lines, dates, month/day order),
:mod:`~worklog_gen.repair` (damaged exports), :mod:`~worklog_gen.markdown_scan`
(links, prose and code: one markdown-it-py parse per entry), :mod:`~worklog_gen.words`
(word counts), :mod:`~worklog_gen.tasks` (status markers). The data model is in
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
    HEADER_RE,
    SHAPES,
    HeaderStyle,
    assign_years,
    day_number,
    format_header,
    header_countdown,
    header_date,
    header_style,
    infer_date_order,
    progress_month_day,
    progress_title,
    shapes_help,
)
from worklog_gen.model import DateOrder, Diagnostic, Entry, Link, SourceFile, Task, TaskStatus, Worklog
from worklog_gen.markdown_scan import scan
from worklog_gen.shortcodes import find_image, find_problems, is_url
from worklog_gen.tasks import entry_tasks, parse_task
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
    shape: str = "t-minus"
    """The file's header shape (:data:`worklog_gen.headers.SHAPES`): the first with a match."""
    other: list[tuple[int, re.Match]] | None = None
    """Header lines of a file whose shape is not T-minus."""


def _other_headers(lines: list[str], start: int) -> tuple[str, list[tuple[int, re.Match]]]:
    """The first shape after T-minus with header lines in ``lines[start:]``, and those lines;
    ``("", [])`` if none. Lines inside fenced code blocks are not headers."""
    for shape in SHAPES[1:]:
        if shape.pattern is None:
            continue
        found, fence = [], None
        for i in range(start, len(lines)):
            fence, marker = repair.track_fence(lines[i], fence)
            if not marker and fence is None and (m := shape.pattern.match(lines[i])):
                found.append((i, m))
        if found:
            return shape.name, found
    return "", []


def _prepare(text: str, path: str) -> _Prepared:
    text, diagnostics = repair.normalize_line_ends(text, path)
    lines = text.split("\n")
    diagnostics += repair.fix_encoding_lines(lines, path)
    fm = front_matter_span(lines)
    header_like = []
    for i in range(fm[0], len(lines)):
        if m := HEADER_RE.match(lines[i]):
            header_like.append((i, m))
    shape, other = ("t-minus", None) if header_like else _other_headers(lines, fm[0])
    boundaries = [i for i, _ in header_like or other or []]
    diagnostics += repair.fix_link_lines(lines, path, start=fm[0], boundaries=boundaries)
    return _Prepared(path, lines, fm, header_like, diagnostics, shape or "", other)


def _build(p: _Prepared, order: Literal["mdy", "dmy"], year: int | None = None,
           today: dt.date | None = None) -> tuple[SourceFile, list[Diagnostic]]:
    """Entries of one prepared file (dates read with ``order``; a progress log's years from
    ``year`` or ``today``), before their links, tasks and words."""
    today = today or dt.date.today()
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
    if p.other:
        entries = _other_entries(p, src, fm, year, today, diagnostics)
    elif headers:
        first = headers[0][0]
        src.preamble, src.preamble_lines = "\n".join(lines[fm_end:first]), first - fm_end
        bounds = [h[0] for h in headers[1:]] + [len(lines)]
        for (i, date, countdown), end in zip(headers, bounds):
            body = "\n".join(lines[i + 1 : end])
            entries.append(Entry(date, countdown, lines[i], body, p.path, i + 1, end_line=end, shape="t-minus"))
    else:
        date, countdown, more = per_file_date(lines, p.fm, p.path, fm, order)
        diagnostics += more
        if date is None:
            src.preamble, src.preamble_lines = "\n".join(lines[fm_end:]), len(lines) - fm_end
        else:
            body = "\n".join(lines[fm_end:])
            entry = Entry(date, countdown, "", body, p.path, fm_end + 1, end_line=len(lines), shape="file")
            if fm.get("title") not in (None, ""):
                entry.kind, entry.shape, entry.title = "post", "post", str(fm["title"]).strip()
                entry.tags = _tags(fm)
                entry.draft = fm.get("draft") is True or str(fm.get("draft")).lower() == "true"
            entries.append(entry)
    src.entries = entries
    return src, diagnostics


def _tags(fm: dict) -> list[str]:
    """Front matter ``tags`` then ``categories`` (a list or one string), each once."""
    out: list[str] = []
    for key in ("tags", "categories"):
        value = fm.get(key)
        for tag in ([value] if isinstance(value, str) else value if isinstance(value, list) else []):
            tag = str(tag).strip()
            if tag and tag not in out:
                out.append(tag)
    return out


def _other_entries(p: _Prepared, src: SourceFile, fm: dict, year: int | None, today: dt.date,
                   diagnostics: list[Diagnostic]) -> list[Entry]:
    """Entries of a file of progress-log headings or dated notes (:attr:`_Prepared.other`)."""
    lines, fm_end = p.lines, p.fm[0]
    found = p.other or []
    first = found[0][0]
    src.preamble, src.preamble_lines = "\n".join(lines[fm_end:first]), first - fm_end
    bounds = [i for i, _ in found[1:]] + [len(lines)]
    dates: list[dt.date | None] = []
    if p.shape == "progress":
        month_days = [progress_month_day(m) for _, m in found]
        given = fm.get("year", year)
        if given is not None and not (isinstance(given, int) and not isinstance(given, bool)):
            diagnostics.append(Diagnostic(p.path, 1, f"front matter year {given!r} is not a year", "error",
                                          "front-matter"))
            given = None
        years, chosen = assign_years(month_days, year=given, today=today)
        if chosen is not None and given is None:
            msg = (f"the headings have no year; read from {chosen} on, the latest year that puts no entry after "
                   f"{today.isoformat()} (set `year:` in the front matter or the plugin's `year` option)")
            diagnostics.append(Diagnostic(p.path, found[0][0] + 1, msg, "warning", "year"))
        for (i, m), (month, day, _), y in zip(found, month_days, years):
            try:
                dates.append(dt.date(y, month, day))
            except ValueError as exc:
                msg = f"invalid date {m['month']} {day} in {y}: {exc}; the line is kept as text"
                diagnostics.append(Diagnostic(p.path, i + 1, msg, "error", "invalid-date"))
                dates.append(None)
    else:
        for i, m in found:
            try:
                dates.append(dt.date(int(m["y"]), int(m["m"]), int(m["d"])))
            except ValueError as exc:
                msg = f"invalid date {m['date']}: {exc}; the line is kept as text"
                diagnostics.append(Diagnostic(p.path, i + 1, msg, "error", "invalid-date"))
                dates.append(None)
    entries: list[Entry] = []
    for (i, m), date, end in zip(found, dates, bounds):
        if date is None:  # the line stays in the body of the entry above (or the preamble)
            if entries:
                e = entries[-1]
                e.body = "\n".join(lines[e.line : end])
                e.end_line = end
            else:
                src.preamble, src.preamble_lines = "\n".join(lines[fm_end:end]), end - fm_end
            continue
        body = "\n".join(lines[i + 1 : end])
        entry = Entry(date, None, lines[i], body, p.path, i + 1, end_line=end, shape=p.shape)
        if p.shape == "progress":
            entry.title = progress_title(m)
            first_line = next((line for line in lines[i + 1 : end] if line.strip()), "")
            entry.day_number = day_number(entry.title, first_line)
        entries.append(entry)
    if p.shape == "progress":
        diagnostics += _day_number_warnings(p.path, entries)
    for e in entries:
        if not e.body.strip():
            diagnostics.append(Diagnostic(p.path, e.line, f"entry {e.date} has no text; kept as an empty entry",
                                          "warning", "empty-entry"))
    return entries


def _shortcode_problems(src: SourceFile) -> list[Diagnostic]:
    """Unknown Hugo shortcodes and figures whose image is missing, in a file's entries."""
    out = []
    for e in src.entries:
        if "{{" in e.body:
            out += find_problems(e.body, e.path, e.line + 1 if e.header else e.line,
                                 lambda image: is_url(image) or find_image(image, Path(e.path)) is not None)
    return out


def _day_number_warnings(path: str, entries: list[Entry]) -> list[Diagnostic]:
    """Warnings for a count-up log's mistakes: the same ``Day N`` twice, and entries without
    a counter among entries that have one."""
    counted = [e for e in entries if e.day_number is not None]
    if not counted:
        return []
    out, seen = [], {}
    for e in entries:
        if e.day_number is None:
            out.append(Diagnostic(path, e.line, f"entry {e.date} has no \"Day N\" counter, unlike "
                                  f"{len(counted)} other entries of this file", "warning", "day-number"))
        elif e.day_number in seen:
            out.append(Diagnostic(path, e.line, f"Day {e.day_number} again: {seen[e.day_number].date} at line "
                                  f"{seen[e.day_number].line} says it too", "warning", "day-number"))
        else:
            seen[e.day_number] = e
    return out


def _analyse(src: SourceFile) -> None:
    """Set the links, words and tasks of every entry of ``src``: one markdown-it-py
    parse per entry (:func:`worklog_gen.markdown_scan.scan`)."""
    for e in src.entries:
        first_line = e.line + 1 if e.header else e.line
        found = scan(e.body, first_line)
        e.links, e.words = found.links, found.words
        e.tasks = entry_tasks(e.body.split("\n"), first_line, found.code_lines)


def _assemble(files: list[SourceFile], diagnostics: list[Diagnostic], order: Literal["mdy", "dmy"]) -> Worklog:
    """One :class:`Worklog` from parsed files: entries sorted by date, duplicates and target date checked."""
    entries = sorted((e for f in files for e in f.entries), key=lambda e: e.date)  # stable: file order within a day
    by_page: dict[str, list[Entry]] = {}
    for e in entries:
        same = by_page.setdefault(e.slug, [])
        same.append(e)
        first = same[0]
        # a second entry of a day in the same file (or a post of the same title and date) is a
        # mistake: its own page and an error; a day from another source shares the day's page
        e.duplicate_index = sum(x.path == e.path for x in same[:-1]) if e.kind == "day" else len(same) - 1
        if e.duplicate_index:
            msg = f"duplicate day {e.date}: also at {first.source}; both are kept, this one as page {e.slug}"
            diagnostics.append(Diagnostic(e.path, e.line, msg, "error", "duplicate-day"))
        elif len(same) > 1:
            msg = (f"day {e.date} is also written at {first.source}: both are kept, on the day's one page, "
                   f"each under its source")
            diagnostics.append(Diagnostic(e.path, e.line, msg, "warning", "same-day"))
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
    diagnostics += _unrecognised(files, entries)
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


INDEX_NAMES = {"index", "readme"}
"""Stems of a file that may hold only the log's preamble (the home page's text) beside
files of entries."""
_DATE_LIKE = re.compile(r"\d{1,4}[-/.]\d{1,2}(?:[-/.]\d{1,4})?|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
                        r"[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?\b|\bday\s+\d+\b|\(\s*t\s*[-+]", re.IGNORECASE)


def _unrecognised(files: list[SourceFile], entries: list[Entry]) -> list[Diagnostic]:
    """Errors for files in which no entry is recognised (a file named index.md or README.md
    may hold only the preamble, when other files have entries) and for a log with no entries
    at all, each listing the header shapes understood and the lines that look most like a date."""
    out = []
    for f in files:
        if f.entries or (entries and Path(f.path).stem.lower() in INDEX_NAMES):
            continue
        lines = (f.front_matter_text + "\n" + f.preamble).split("\n") if f.front_matter_lines else f.preamble.split("\n")
        near = [f"line {n}: “{line.strip()[:60]}”" for n, line in enumerate(lines, start=1)
                if _DATE_LIKE.search(line)][:3]
        hint = f" The lines that look most like a date: {'; '.join(near)}" if near else " No line looks like a date"
        out.append(Diagnostic(f.path, 1, f"no entry recognised in this file. Entry headers understood: {shapes_help()}."
                              + hint + ".", "error", "no-entries"))
    if files and not entries and not out:
        out.append(Diagnostic(files[0].path, 1, f"no entry in the log. Entry headers understood: {shapes_help()}.",
                              "error", "no-entries"))
    return out


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


def parse(text: str, path: str | Path = "<string>", *, date_order: DateOrder = "auto", year: int | None = None,
          today: dt.date | None = None) -> Worklog:
    """Parse the text of one worklog file.

    ``path`` names the file in diagnostics and entries (and gives the date of a
    one-entry file named ``2025-12-09.md``). Never raises on content: problems are
    :attr:`Worklog.diagnostics`.

    Raises:
        ValueError: ``date_order`` is not ``"auto"``, ``"mdy"`` or ``"dmy"``.
    """
    return _parse_texts([(str(path), text)], date_order=date_order, year=year, today=today)


def _parse_texts(
    texts: list[tuple[str, str]],
    *,
    date_order: DateOrder,
    extra: list[Diagnostic] | None = None,
    year: int | None = None,
    today: dt.date | None = None,
) -> Worklog:
    """Parse ``(path, text)`` pairs into one :class:`Worklog`; ``extra`` diagnostics
    (from decoding) join the parser's; ``year`` and ``today`` date a progress log's
    headings (see :func:`load`)."""
    with _no_cycle_collection():
        prepared = [_prepare(text, path) for path, text in texts]
        order, diagnostics = infer_date_order(((p.path, i, m) for p in prepared for i, m in p.header_like), date_order)
        diagnostics += extra or []
        files = []
        for p in prepared:
            src, more = _build(p, order, year, today)
            _analyse(src)
            more += _shortcode_problems(src)
            files.append(src)
            diagnostics += more
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


def load(paths: list[str | Path] | str | Path, *, date_order: DateOrder = "auto", year: int | None = None,
         today: dt.date | None = None) -> Worklog:
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
    return _parse_texts(texts, date_order=date_order, extra=diagnostics, year=year, today=today)
