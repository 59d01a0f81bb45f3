"""Parse a T-minus worklog into typed entries.

A worklog is markdown: optional YAML front matter (plain, or wrapped in an HTML
comment as Jekyll/al-folio exports leave it, see :mod:`worklog_gen.log.front_matter`), a
preamble, then entries, each starting at a header line such as ``12/09/25 (T - 154)``.
The date is followed by the *countdown*: days left to the *target date*, so
``target_date = date + countdown`` for every entry.

This module runs the parse; each rule lives in the module named after it:
:mod:`~worklog_gen.log.shapes` (header lines, dates, month/day order),
:mod:`~worklog_gen.log.repair` (damaged exports), :mod:`~worklog_gen.log.markdown_scan`
(links, prose and code: one markdown-it-py parse per entry), :mod:`~worklog_gen.log.words`
(word counts), :mod:`~worklog_gen.log.tasks` (status markers). The data model is in
:mod:`~worklog_gen.log.model` and re-exported here. Data flows one way: this module
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
:mod:`worklog_gen.log.repair`), invalid dates, contradictory month/day order, bad front
matter and duplicate days (errors), and entries whose target date disagrees with the
log's (warnings here; :func:`worklog_gen.log.lint.check` makes them errors). Duplicate
days are all kept: the first by date, then file, then line, is the day's page; each
later one gets ``duplicate_index`` 1, 2, ... (slug ``2025-12-09-2``) and an error.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime as dt
import gc
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from worklog_gen.log import repair
from worklog_gen.log.front_matter import (
    Span,
    front_matter_span,
    front_matter_target,
    per_file_date,
    read_front_matter,
    title_heading,
)
from worklog_gen.log.shapes import (
    DATE_LINE_RE,
    HEADER_RE,
    NEAR_DATE_RE,
    NEAR_HEADER_RE,
    SHAPES,
    DateContext,
    Header,
    HeaderShape,
    infer_date_order,
    shape_of,
    shapes_help,
)
from worklog_gen.log.diagnostics import Diagnostic, DiagnosticCode
from worklog_gen.log.files import Exclusion, display_name, read_log_file, worklog_files
from worklog_gen.log.model import DateOrder, Entry, SourceFile, Worklog
from worklog_gen.log.markdown_scan import scan
from worklog_gen.log import internal_links, local_files, logseq, obsidian
from worklog_gen.log.shortcodes import Image, find_image, find_problems, has_markup, resolve_urls
from worklog_gen.log.tasks import entry_tasks

__all__ = ["load", "parse", "worklog_files"]


@dataclass
class _Prepared:
    """A file's repaired lines and header lines, before dates are read."""

    path: str
    lines: list[str]
    fm: Span
    shape: HeaderShape | None
    """The file's header shape (:func:`~worklog_gen.log.shapes.shape_of`); ``None``: one entry, or none."""
    headers: list[Header]
    diagnostics: list[Diagnostic]
    front_matter: dict


def _prepare(text: str, path: str) -> _Prepared:
    """The file's lines repaired, its front matter read, and its shape and header lines found. A
    file whose front matter gives its ``date:`` (a post) is one entry even where a line of it
    holds only a date (a dated note's header): such a line is its text."""
    text, diagnostics = repair.normalize_line_ends(text, path)
    lines = text.split("\n")
    diagnostics += repair.fix_encoding_lines(lines, path)
    fm = front_matter_span(lines)
    front_matter, more = read_front_matter(lines, fm, path)
    diagnostics += more
    shape, headers = shape_of(lines, fm[0])
    if shape is SHAPES[2] and "date" in front_matter:
        shape, headers = None, []
    diagnostics += repair.fix_link_lines(lines, path, start=fm[0], boundaries=[h.index for h in headers])
    return _Prepared(path, lines, fm, shape, headers, diagnostics, front_matter)


def _build(p: _Prepared, order: Literal["mdy", "dmy"], year: int | None = None,
           today: dt.date | None = None) -> tuple[SourceFile, list[Diagnostic]]:
    """Entries of one prepared file (dates read by its shape: T-minus dates with ``order``, a
    progress log's years from ``year`` or ``today``), before their links, tasks and words."""
    lines, fm_end = p.lines, p.fm[0]
    diagnostics, fm = list(p.diagnostics), p.front_matter
    src = SourceFile(path=p.path, front_matter_text="\n".join(lines[:fm_end]), front_matter_lines=fm_end,
                     front_matter=fm, line_count=len(lines))
    if any(d.code is DiagnosticCode.FILE_REFUSED for d in p.diagnostics):  # a YAML alias: the file is left out
        src.refused = True
        src.preamble, src.preamble_lines = "\n".join(lines[fm_end:]), len(lines) - fm_end
        return src, diagnostics
    if p.shape is None:
        src.entries = _whole_file(p, src, fm, order, diagnostics)
        return src, diagnostics
    ctx = DateContext(order, year, today or dt.date.today(), fm, p.path)
    dates, more = p.shape.read_dates(p.headers, ctx)
    diagnostics += more
    dated = [(h, d) for h, d in zip(p.headers, dates) if d is not None]  # a line with no such date stays text
    first = dated[0][0].index if dated else len(lines)
    src.preamble, src.preamble_lines = "\n".join(lines[fm_end:first]), first - fm_end
    bounds = [h.index for h, _ in dated[1:]] + [len(lines)]
    for (h, date), end in zip(dated, bounds):
        body_lines = lines[h.index + 1 : end]
        entry = Entry(date, None, lines[h.index], "\n".join(body_lines), p.path, h.index + 1, end_line=end,
                      shape=p.shape.name)
        p.shape.fill(entry, h.match, body_lines)
        src.entries.append(entry)
    diagnostics += p.shape.check(p.path, src.entries)
    diagnostics += _near_headers(p, src)
    return src, diagnostics


def _near_headers(p: _Prepared, src: SourceFile) -> list[Diagnostic]:
    """A warning for each line outside fenced code that looks like an entry header but is not one
    of its file's, naming what it is read as (text of the entry above it, or of the preamble) and
    how a header of the file is written: a line that starts like a T-minus header
    (:data:`~worklog_gen.log.shapes.NEAR_HEADER_RE`: ``Tue 12/09/25 (T - 154)``), or one that holds
    only a date (:data:`~worklog_gen.log.shapes.NEAR_DATE_RE`: ``Jan 7`` without its year, or a date
    line in a T-minus or progress log)."""
    heads = {h.index for h in p.headers}
    near = []
    for i in range(p.fm[0], len(p.lines)):
        line = p.lines[i]
        if i in heads:
            continue
        if "(" in line and NEAR_HEADER_RE.match(line) and not HEADER_RE.match(line):
            near.append((i, "a header starts its line with the date and the countdown (`12/09/25 (T - 154)`), "
                            "and may go on with a title"))
        elif len(line) <= 64 and NEAR_DATE_RE.match(line):  # a date alone is short: most lines are not tried
            near.append((i, _date_hint(p.shape, line)))
    if not near:
        return []
    in_code, fence = set(), None
    for i in range(p.fm[0], near[-1][0] + 1):
        fence, marker = repair.track_fence(p.lines[i], fence)
        if marker or fence is not None:
            in_code.add(i)
    out, starts = [], [e.line for e in src.entries]
    for i, hint in near:
        if i in in_code:
            continue
        k = bisect.bisect_right(starts, i + 1) - 1  # the last entry whose header is above the line
        owner = src.entries[k] if k >= 0 else None
        where = f"the entry of {owner.date} (line {owner.line})" if owner else "the preamble"
        out.append(Diagnostic(p.path, i + 1, f"“{p.lines[i].strip()[:60]}” looks like an entry header but is not "
                              f"one, so it is read as text of {where}: {hint}", DiagnosticCode.NOT_A_HEADER))
    return out


def _date_hint(shape: HeaderShape | None, line: str) -> str:
    """How a line holding only a date (``line``) would start an entry of a file of ``shape``."""
    if shape is SHAPES[2]:
        return ("a date line starts an entry when it holds the date with its year, alone "
                "(`2025-01-20`, `1/20/2025`, `January 20, 2025`)")
    other = "it is a date line, which starts an entry of dated notes, but " if DATE_LINE_RE.match(line) else ""
    kind = {"t-minus": "T-minus", "progress": "progress-log"}.get(shape.name, shape.name)
    return (f"{other}this file's entries start with {kind} headers (`{shape.example}`)"
            f"{'; keep dated notes in a file of their own' if other else ''}")


def _whole_file(p: _Prepared, src: SourceFile, fm: dict, order: Literal["mdy", "dmy"],
                diagnostics: list[Diagnostic]) -> list[Entry]:
    """A file without header lines: one entry (a post when its front matter has a title, or has a
    date and its text starts with a ``# heading``, as Material's blog writes one), dated by
    its front matter or its name; the whole text is the preamble when neither gives a date."""
    lines, fm_end = p.lines, p.fm[0]
    date, countdown, more = per_file_date(lines, p.fm, p.path, fm, order)
    diagnostics += more
    if date is None:
        src.preamble, src.preamble_lines = "\n".join(lines[fm_end:]), len(lines) - fm_end
        return []
    entry = Entry(date, countdown, "", "\n".join(lines[fm_end:]), p.path, fm_end + 1, end_line=len(lines),
                  shape="file")
    title = fm.get("title")
    if title in (None, "") and "date" in fm and (heading := title_heading(lines[fm_end:])):
        title = heading[1]  # Material's blog: the first heading (the page shows it once, as the title)
    entry.tags = _tags(fm)  # a post's, or a daily note's (Obsidian's tags: [daily, cuda])
    if title not in (None, ""):
        entry.shape, entry.title = "post", str(title).strip()
        entry.draft = fm.get("draft") is True or str(fm.get("draft")).lower() == "true"
    return [entry]


def _tags(fm: dict) -> list[str]:
    """Front matter ``tags`` then ``categories``, each once: a list, or a string of several, as
    Jekyll reads one (``tags: cuda reduction`` is two, https://jekyllrb.com/docs/posts/#tags-and-categories),
    or split at its commas when it has any (``tags: cuda, warp shuffles``)."""
    out: list[str] = []
    for key in ("tags", "categories"):
        value = fm.get(key)
        if isinstance(value, str):
            value = value.split(",") if "," in value else value.split()
        for tag in (value if isinstance(value, list) else []):
            tag = str(tag).strip()
            if tag and tag not in out:
                out.append(tag)
    return out


def _empty_entries(entries: list[Entry]) -> list[Diagnostic]:
    return [Diagnostic(e.path, e.line, f"entry {e.date} has no text; kept as an empty entry",
                       DiagnosticCode.EMPTY_ENTRY) for e in entries if not e.body.strip()]


def _file_problems(src: SourceFile, file: Path, folder: Path, exclude: Exclusion | None = None,
                   repository: local_files.Repository | None = None) -> list[Diagnostic]:
    """Unknown Hugo shortcodes, and figures, images and linked files (:mod:`~worklog_gen.log.local_files`)
    that are missing (or left out by ``exclude``) or lead outside ``folder`` (the worklog folder) but
    not to a file of ``repository``, in the entries of ``src``, read from ``file``."""
    out = []

    def find(image: str) -> Image:
        return find_image(image, file, folder, exclude)

    def in_repository(target: str) -> bool:
        return repository is not None and repository.file(target, file.absolute().parent) is not None

    for e in src.entries:
        if has_markup(e.body):
            out += find_problems(resolve_urls(e.body), e.path, e.line + 1 if e.header else e.line, find)
        if e.images or e.links:
            out += local_files.problems(e.path, e.images, e.links, find, in_repository)
    if has_markup(src.preamble) and not src.refused:
        out += find_problems(resolve_urls(src.preamble), src.path, src.front_matter_lines + 1, find)
    if src.preamble_images or src.preamble_links:
        out += local_files.problems(src.path, src.preamble_images, src.preamble_links, find, in_repository)
    return out


def _analyse(src: SourceFile, file: Path, vault: internal_links.Vault | None) -> list[Diagnostic]:
    """Set the links, words and tasks of every entry of ``src`` (read from ``file``), and the
    links and images of its preamble: one markdown-it-py parse each
    (:func:`worklog_gen.log.markdown_scan.scan`), of the text as its page shows it (wikilinks and
    cross-references found in ``vault``, :mod:`~worklog_gen.log.internal_links`, a Jekyll post's
    linked Liquid written as markdown, Logseq's hidden properties left out); a warning for each
    link of an entry that runs script, and a diagnostic for each internal link that names no file.
    In an Obsidian vault the comments and block ids are taken out of the text first, and in a vault
    or a Logseq graph each entry's ``#tags`` join its tags."""
    diagnostics = []
    if vault is not None and vault.hides_comments:  # Obsidian hides comments and block ids: so does the site
        src.preamble = obsidian.without_block_ids(obsidian.without_comments(src.preamble))
        for e in src.entries:
            e.body = obsidian.without_block_ids(obsidian.without_comments(e.body))
    if vault is not None and vault.reads_hashtags:  # Obsidian's and Logseq's #tags, and Logseq's tags::
        for e in src.entries:
            e.tags += [t for t in dict.fromkeys([*logseq.page_tags(e.body), *obsidian.hashtags(e.body)])
                       if t not in e.tags]
    if src.preamble.strip() and not src.refused:
        first_line = src.front_matter_lines + 1
        text, src.preamble_internal_links, more = internal_links.resolve(src.preamble, file, vault, src.path,
                                                                         first_line)
        found = scan(logseq.without_hidden_properties(resolve_urls(text)), first_line)
        src.preamble_links, src.preamble_images = found.links, found.images
        diagnostics += more
    for e in src.entries:
        first_line = e.line + 1 if e.header else e.line
        text, e.internal_links, more = internal_links.resolve(e.body, file, vault, e.path, first_line)
        # a Jekyll post's {{ site.baseurl }}/x.png is /x.png; Logseq's hidden properties are no words
        found = scan(logseq.without_hidden_properties(resolve_urls(text)), first_line)
        e.links, e.words, e.images = found.links, found.words, found.images
        e.tasks = entry_tasks(e.body.split("\n"), first_line, found.code_lines)
        diagnostics += more
        diagnostics += [Diagnostic(e.path, link.line, f"a link that runs script ({link.url[:60]!r}): dropped from "
                                   "the page", DiagnosticCode.UNSAFE_LINK) for link in found.script_links]
    return diagnostics


def _assemble(files: list[SourceFile], diagnostics: list[Diagnostic], order: Literal["mdy", "dmy"]) -> Worklog:
    """One :class:`Worklog` from parsed files: entries sorted by date, duplicates and target date checked."""
    entries = sorted((e for f in files for e in f.entries), key=lambda e: e.date)  # stable: file order within a day
    first_on_page: dict[str, Entry] = {}
    earlier: Counter[tuple[str, str]] = Counter()  # (page, file) -> entries of that page seen so far
    for e in entries:
        page = e.slug
        first = first_on_page.setdefault(page, e)
        # a second entry of a day in the same file (or a post of the same title and date) is a
        # mistake: its own page and an error; a day from another source shares the day's page
        key = (page, e.path if e.kind == "day" else "")
        e.duplicate_index = earlier[key]
        earlier[key] += 1
        if e.duplicate_index:
            msg = f"duplicate day {e.date}: also at {first.source}; both are kept, this one as page {e.slug}"
            diagnostics.append(Diagnostic(e.path, e.line, msg, DiagnosticCode.DUPLICATE_DAY))
        elif first is not e:
            msg = (f"day {e.date} is also written at {first.source}: both are kept, on the day's one page, "
                   f"each under its source")
            diagnostics.append(Diagnostic(e.path, e.line, msg, DiagnosticCode.SAME_DAY))
    # The log's preamble and front matter are those of its first file with a preamble
    # (in a folder of one-entry files, an index or README), else of its first file of header lines
    # (a log of many days), else none: a post's or a day file's front matter (its title) is its
    # own, not the log's. Each file keeps its own (SourceFile), and its target date applies to its
    # own entries. A refused file (a YAML alias in its front matter) has no part in either.
    kept = [f for f in files if not f.refused]
    main = (next((f for f in kept if f.preamble.strip()), None)
            or next((f for f in kept if any(e.header for e in f.entries)), None) or SourceFile(""))
    for f in kept:
        diagnostics += _file_target(f)
    target = _log_target(kept, entries, diagnostics)
    diagnostics += _unrecognised(files, entries)
    rank = {f.path: k for k, f in enumerate(files)}
    diagnostics.sort(key=lambda d: (rank.get(d.path, len(rank)), d.line, d.severity.rank))
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
        if f.entries or f.refused or (entries and Path(f.path).stem.lower() in INDEX_NAMES):
            continue
        lines = (f.front_matter_text + "\n" + f.preamble).split("\n") if f.front_matter_lines else f.preamble.split("\n")
        near = [f"line {n}: “{line.strip()[:60]}”" for n, line in enumerate(lines, start=1)
                if _DATE_LIKE.search(line)][:3]
        hint = f" The lines that look most like a date: {'; '.join(near)}" if near else " No line looks like a date"
        out.append(Diagnostic(f.path, 1, f"no entry recognised in this file. Entry headers understood: {shapes_help()}."
                              + hint + ". A file that is no part of the log (a template, a note) can be left out "
                              "with the plugin's `exclude` option.", DiagnosticCode.NO_ENTRIES))
    if files and not entries and not out:
        why = (": every file was refused (see above)" if all(f.refused for f in files)
               else f". Entry headers understood: {shapes_help()}.")
        out.append(Diagnostic(files[0].path, 1, f"no entry in the log{why}", DiagnosticCode.NO_ENTRIES))
    return out


def _file_target(f: SourceFile) -> list[Diagnostic]:
    """Set ``f.target_date`` to the target its front matter names (``None`` without one), and
    return the diagnostics: a bad front matter value, and each of its entries whose countdown
    gives another date. Entries of files that name no target are checked by :func:`_log_target`."""
    target, diagnostics = front_matter_target(f.front_matter, f.front_matter_text, f.path)
    f.target_date = target
    return diagnostics + _off_target(f.entries, target, f"the front matter of {f.path} gives")


def _off_target(entries: list[Entry], target: dt.date | None, given_by: str) -> list[Diagnostic]:
    """A warning for each of ``entries`` whose countdown gives another date than ``target``."""
    out = []
    for e in entries if target is not None else ():
        t = e.target_date
        if t is not None and t != target:
            msg = (f"countdown {_t_minus(e.countdown)} gives target date {t}, but {given_by} "
                   f"{target} (expected {_t_minus((target - e.date).days)})")
            out.append(Diagnostic(e.path, e.line, msg, DiagnosticCode.TARGET_DATE))
    return out


def _log_target(files: list[SourceFile], entries: list[Entry], diagnostics: list[Diagnostic]) -> dt.date | None:
    """The log's target date, and the check of the entries of files that name none.

    The target the files' front matter names (:func:`_file_target`); without one, the one most
    entries of the other files give (on a tie, the latest's). When two files name different
    targets, a warning naming each file and its date, and the target of the file with the newest
    entry. Entries of files that name no target are checked against the log's."""
    named = [f for f in files if f.target_date is not None]
    loose = [e for f in files if f.target_date is None for e in f.entries]
    distinct = list(dict.fromkeys(f.target_date for f in named))
    if not distinct:
        target = _majority_target(loose)
        diagnostics += _off_target(loose, target, "most entries give")
        return target
    owner = named[0]
    if len(distinct) > 1:
        by_path = {f.path: f for f in named}
        owner = next((by_path[e.path] for e in reversed(entries) if e.path in by_path), named[-1])
        which = "; ".join(f"{f.path} gives {f.target_date}" for f in named)
        diagnostics.append(Diagnostic(named[0].path, 1, f"the files name different target dates: {which}; the home "
                                      f"counts down to {owner.target_date} (that of {owner.path}, which has the "
                                      "newest entry)", DiagnosticCode.TARGETS))
    diagnostics += _off_target(loose, owner.target_date, f"the front matter of {owner.path} gives")
    return owner.target_date


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
    files: dict[str, tuple[Path, Path]] | None = None,
    exclude: Exclusion | None = None,
    repository: local_files.Repository | None = None,
) -> Worklog:
    """Parse ``(path, text)`` pairs into one :class:`Worklog`; ``extra`` diagnostics
    (from decoding) join the parser's; ``year`` and ``today`` date a progress log's
    headings (see :func:`load`)."""
    with _no_cycle_collection():
        prepared = [_prepare(text, path) for path, text in texts]
        order, diagnostics = infer_date_order(((p.path, h.index, h.match) for p in prepared if p.shape and p.shape.numeric
                                              for h in p.headers), date_order)
        diagnostics += extra or []
        sources, vaults = [], {}
        for p in prepared:
            src, more = _build(p, order, year, today)
            file, folder = (files or {}).get(p.path, (None, None))
            vault = vaults.setdefault(folder, internal_links.Vault(folder, exclude)) if folder is not None else None
            more += _analyse(src, file or Path(p.path), vault)
            src.file = file
            more += _file_problems(src, file or Path(p.path), folder or Path(p.path).parent, exclude, repository)
            more += _empty_entries(src.entries)
            sources.append(src)
            diagnostics += more
        return _assemble(sources, diagnostics, order)


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


def load(paths: list[str | Path] | str | Path, *, date_order: DateOrder = "auto", year: int | None = None,
         today: dt.date | None = None, relative_to: str | Path | None = None,
         exclude: Exclusion | None = None, repository: local_files.Repository | None = None) -> Worklog:
    """Parse files and folders of ``*.md`` files into one :class:`Worklog`.

    Files are read as bytes and decoded as UTF-8 (other encodings with a warning, see
    :func:`worklog_gen.log.repair.decode_bytes`); month/day order is inferred over all of
    them together. Entries from all files are sorted by date. The target date is
    the front matter's ``target_date:`` or ``target:`` (YYYY-MM-DD), else the one
    most entries give (``date + countdown``; on a tie, the latest entry's). Each entry
    whose target date differs gets a *warning* naming both dates; two entries on one
    day in one file get an *error*, in two files a *note* (``same-day``), and both are kept (see
    the module docstring).
    :attr:`Worklog.preamble` and :attr:`Worklog.front_matter` come from the first
    file with a preamble (else the first file); :attr:`Worklog.files` has each file's.
    Files below ``relative_to`` (the folder of ``mkdocs.yml``) are named relative to it in
    entries and diagnostics (``worklog/log.md:12``); others as given.

    A file that is too large, not text, nested too deep, or a link that leads outside its
    folder is refused with a warning and left out (:mod:`worklog_gen.log.files`). A file that
    ``exclude`` (the plugin's option) leaves out is not read, found or published. A link to a
    file of ``repository`` (:class:`~worklog_gen.log.local_files.Repository`, when ``mkdocs.yml``
    sets ``repo_url``) outside the worklog folder is no problem: the page links it there.

    Raises:
        FileNotFoundError: a path does not exist.
        OSError: a file cannot be read.
        ValueError: ``date_order`` is not ``"auto"``, ``"mdy"`` or ``"dmy"``.
    """
    texts, diagnostics, files = [], [], {}
    folders = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    for q in worklog_files(paths, exclude):
        name = display_name(q, relative_to)
        folder = next((f for f in folders if f.is_dir() and q.is_relative_to(f)), None)
        text, diags = read_log_file(q, name, folder)
        diagnostics += diags
        if text is not None:
            texts.append((name, text))
            files[name] = (q, folder or q.parent)
    if not texts:  # nothing to read is an error, never an empty site
        where = display_name(folders[0], relative_to) if folders else "<worklog>"
        why = "every file was refused (see above)" if diagnostics else "it holds no .md file"
        diagnostics.append(Diagnostic(where, 1, f"no entry in the log: {why}", DiagnosticCode.NO_ENTRIES))
    return _parse_texts(texts, date_order=date_order, extra=diagnostics, year=year, today=today, files=files,
                        exclude=exclude, repository=repository)
