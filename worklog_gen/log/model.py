"""The data model of a parsed worklog: entries, their links and tasks, diagnostics,
and the files they came from.

Plain dataclasses with no parsing in them, so that every other module (the parser's
parts, pages, the export, the feed) can import them without importing the parser.
:mod:`worklog_gen.log.parse` re-exports them.
"""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from worklog_gen.log.diagnostics import Diagnostic

DateOrder = Literal["auto", "mdy", "dmy"]
"""Month/day order of header dates: inferred (``"auto"``), month-first or day-first."""
ShapeName = Literal["t-minus", "progress", "dated-note", "post", "file"]
"""The shape an entry was written in: a header line of :data:`worklog_gen.log.shapes.SHAPES`,
a post (a whole file with a title in its front matter), or a file named by its date."""
EntryKind = Literal["day", "post"]
"""A day of a log, or a blog post."""

class TaskStatus(str, enum.Enum):
    """Status of a task line: ``done`` ("Done", "- Done;"), ``carried``
    ("-> Tmr", "Next") or ``open`` (neither)."""

    DONE = "done"
    CARRIED = "carried"
    OPEN = "open"


@dataclass(frozen=True)
class Link:
    """A markdown link found in an entry (by markdown-it-py, not regexes)."""

    title: str
    url: str
    line: int
    """1-based line of the link in its source file."""

    @property
    def domain(self) -> str:
        """Host of the URL without a leading ``www.``; ``""`` for relative links."""
        host = urlsplit(self.url).hostname or ""
        return host.removeprefix("www.")


@dataclass(frozen=True)
class Task:
    """A line of the entry that reports work, with its status."""

    text: str
    status: TaskStatus
    line: int


@dataclass
class Entry:
    """One day of the log.

    ``body`` is the author's markdown after the header line, verbatim except for
    the repairs reported in :attr:`Worklog.diagnostics` and, in an Obsidian vault, its
    comments (``%%...%%``), which Obsidian hides: their lines are empty
    (:func:`worklog_gen.log.obsidian.without_comments`).
    """

    date: dt.date
    countdown: int | None
    header: str
    body: str
    path: str
    line: int
    """1-based line of the header in :attr:`path` (of the body's first line for an
    entry without a header line)."""
    links: list[Link] = field(default_factory=list)
    images: list[Link] = field(default_factory=list)
    """The entry's markdown images: alt text as ``title``, ``src`` as ``url`` (not reading-list links)."""
    tasks: list[Task] = field(default_factory=list)
    words: int = 0
    end_line: int = 0
    """1-based last line of the entry (its header's line when the body is empty)."""
    duplicate_index: int = 0
    """0, or n for the n-th later entry with the same date (see :func:`load`)."""
    title: str = ""
    """A post's front matter ``title``, the text after the date of a progress-log heading
    (``Day 9 of GPU Programming``) or after a T-minus header's countdown (``CUDA graphs``);
    ``""`` without one, and for a dated note."""
    tags: list[str] = field(default_factory=list)
    """The front matter's ``tags`` and ``categories`` of a post or a file's one entry, in that order,
    then, in an Obsidian vault or a Logseq graph, the ``#tags`` of its text (and Logseq's
    ``tags::``), each once."""
    day_number: int | None = None
    """The N of a count-up ``Day N`` in the heading or the body's first line, else ``None``."""
    draft: bool = False
    """A post with ``draft: true``: parsed and checked, left out of the built site."""
    shape: ShapeName = "t-minus"
    """The shape the entry was written in (:data:`ShapeName`)."""
    internal_links: dict[str, str] = field(default_factory=dict)
    """Each Obsidian wikilink of :attr:`body` (``[[2025-12-08]]``) and the markdown it stands for
    (:func:`worklog_gen.log.internal_links.resolve`); empty without one."""

    @property
    def kind(self) -> EntryKind:
        """``"post"``: a whole file with a title in its front matter (a blog post); else a day of a log."""
        return "post" if self.shape == "post" else "day"

    @property
    def target_date(self) -> dt.date | None:
        """``date + countdown`` days, or ``None`` without a countdown."""
        if self.countdown is None:
            return None
        return self.date + dt.timedelta(days=self.countdown)

    @property
    def source(self) -> str:
        """``file:line`` of the header, for messages and the export."""
        return f"{self.path}:{self.line}"

    @property
    def slug(self) -> str:
        """The page name: the ISO date (``2025-12-09``; ``2025-12-09-2`` for a second entry of
        that day in the same file); a post's date and title (``2025-01-05-warp-shuffles``)."""
        base = self.date.isoformat()
        if self.kind == "post":
            words = re.findall(r"[a-z0-9]+", self.title.lower())
            base += "-" + _capped("-".join(words[:8])) if words else ""
        return f"{base}-{self.duplicate_index + 1}" if self.duplicate_index else base


MAX_SLUG_TITLE = 60
"""Characters of a post's title in its slug: a page's folder name stays far below the 255 bytes
a file name may have, however long the title's words."""


def _capped(text: str) -> str:
    """``text`` (a slug's title part) unchanged up to :data:`MAX_SLUG_TITLE` characters; longer, cut
    there (at a ``-`` when one is in its second half) and followed by 8 hex digits of its SHA-1, so
    that two titles cut alike keep distinct slugs, the same on every build."""
    if len(text) <= MAX_SLUG_TITLE:
        return text
    cut = text[:MAX_SLUG_TITLE]
    if cut.rfind("-") > MAX_SLUG_TITLE // 2:
        cut = cut[: cut.rfind("-")]
    return f"{cut.rstrip('-')}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"


@dataclass
class SourceFile:
    """One file as read: its parts in order, so that it can be put back together."""

    path: str
    front_matter_text: str = ""
    """The front matter lines verbatim, delimiters included (``""`` without)."""
    front_matter_lines: int = 0
    front_matter: dict = field(default_factory=dict)
    preamble: str = ""
    preamble_lines: int = 0
    preamble_links: list[Link] = field(default_factory=list)
    """The preamble's links, as an entry's (:attr:`Entry.links`); not in the reading list."""
    preamble_images: list[Link] = field(default_factory=list)
    """The preamble's images, as an entry's (:attr:`Entry.images`)."""
    preamble_internal_links: dict[str, str] = field(default_factory=dict)
    """The preamble's wikilinks, as an entry's (:attr:`Entry.internal_links`)."""
    entries: list[Entry] = field(default_factory=list)
    """This file's entries in file order."""
    line_count: int = 0
    """Number of lines (``text.split("\\n")``, so a final newline adds an empty one)."""
    file: Path | None = None
    """The file on disk it was read from (``None`` for text given to :func:`~worklog_gen.log.parse.parse`)."""
    target_date: dt.date | None = None
    """The target date this file's front matter names (``target_date:`` or ``target:``); its
    entries' countdowns are checked against it. ``None``: the file names none."""
    refused: bool = False
    """Left out of the log (its front matter holds a YAML alias): no entries, and its text, kept
    as :attr:`preamble` so that it reassembles, is no part of the site."""

    @property
    def title(self) -> str:
        """The file's front matter ``title``, else its name without the extension (``tminus``)."""
        title = str(self.front_matter.get("title") or "").strip()
        return title or Path(self.path).stem

    def reassemble(self) -> str:
        """The repaired text of the file, from front matter, preamble, headers and bodies."""
        out: list[str] = []
        if self.front_matter_lines:
            out += self.front_matter_text.split("\n")
        if self.preamble_lines:
            out += self.preamble.split("\n")
        for e in self.entries:
            if e.header:
                out.append(e.header)
            body_lines = e.end_line - e.line + (0 if e.header else 1)
            if body_lines > 0:
                out += e.body.split("\n")
        return "\n".join(out)


@dataclass
class Worklog:
    """Everything parsed from one or more worklog files, entries sorted by date."""

    entries: list[Entry]
    preamble: str = ""
    front_matter: dict = field(default_factory=dict)
    target_date: dt.date | None = None
    """The log's target date: the one its files give (:attr:`SourceFile.target_date`); when two
    files give different ones (a warning names both), that of the file of the newest entry."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    files: list[SourceFile] = field(default_factory=list)
    """Per file: front matter, preamble and entries in file order (same order as :attr:`paths`)."""
    date_order: Literal["mdy", "dmy"] = "mdy"
    """Month/day order used to read the headers (inferred or given)."""

    @property
    def targets(self) -> dict[dt.date, list[str]]:
        """Each distinct target date the files give -> the paths of the files that give it, in
        file order; more than one key when two files name different targets."""
        out: dict[dt.date, list[str]] = {}
        for f in self.files:
            if f.target_date is not None:
                out.setdefault(f.target_date, []).append(f.path)
        return out

    def reassemble(self, path: str | None = None) -> str:
        """The repaired text of ``path`` (the only file when ``None``).

        Raises:
            KeyError: no such file was read, or ``path`` is ``None`` and several were.
        """
        if path is None:
            if len(self.files) != 1:
                raise KeyError(f"{len(self.files)} files were read; name one")
            return self.files[0].reassemble()
        for f in self.files:
            if f.path == str(path):
                return f.reassemble()
        raise KeyError(str(path))
