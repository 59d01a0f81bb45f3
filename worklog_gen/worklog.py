"""Parse a T-minus worklog into typed entries.

A worklog is markdown: optional YAML front matter (plain, or wrapped in an HTML
comment as Jekyll/al-folio exports leave it), a preamble, then entries, each
starting at a header line such as ``12/09/25 (T - 154)``. The date is followed by
the *countdown*: days left to the *target date*, so ``target_date = date +
countdown`` for every entry.

Data flows one way: this module knows nothing of pages, MkDocs or notebooks.
"""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

DateOrder = Literal["auto", "mdy", "dmy"]


class TaskStatus(str, enum.Enum):
    """Status of a task line: ``done`` ("Done", "- Done;"), ``carried``
    ("-> Tmr", "Next") or ``open`` (neither)."""

    DONE = "done"
    CARRIED = "carried"
    OPEN = "open"


@dataclass(frozen=True)
class Diagnostic:
    """A problem found in the author's text, located at ``path:line`` (1-based)."""

    path: str
    line: int
    message: str
    severity: Literal["error", "warning"] = "warning"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.severity}: {self.message}"


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
    the repairs reported in :attr:`Worklog.diagnostics`.
    """

    date: dt.date
    countdown: int | None
    header: str
    body: str
    path: str
    line: int
    """1-based line of the header in :attr:`path`."""
    links: list[Link] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    words: int = 0

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
        """ISO date, used as the page name (``2025-12-09``)."""
        return self.date.isoformat()


@dataclass
class Worklog:
    """Everything parsed from one or more worklog files, entries sorted by date."""

    entries: list[Entry]
    preamble: str = ""
    front_matter: dict = field(default_factory=dict)
    target_date: dt.date | None = None
    """The target date most entries agree on (see :func:`load`)."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def parse(text: str, path: str | Path = "<string>", *, date_order: DateOrder = "auto") -> Worklog:
    """Parse the text of one worklog file. Implemented by the parser work."""
    raise NotImplementedError


def load(paths: list[str | Path] | str | Path, *, date_order: DateOrder = "auto") -> Worklog:
    """Parse files and folders of ``*.md`` files into one :class:`Worklog`."""
    raise NotImplementedError
