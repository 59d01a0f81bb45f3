"""Parse a T-minus worklog into typed entries.

A worklog is markdown: optional YAML front matter (plain, or wrapped in an HTML
comment as Jekyll/al-folio exports leave it), a preamble, then entries, each
starting at a header line such as ``12/09/25 (T - 154)``. The date is followed by
the *countdown*: days left to the *target date*, so ``target_date = date +
countdown`` for every entry.

Data flows one way: this module knows nothing of pages, MkDocs or notebooks.

**Header lines.** A line that holds only a date and a countdown in parentheses:
``12/09/25 (T - 154)``, ``12/10/2025 (T-153)``, ``12/18/2025 (T – 145)`` (any dash,
any spacing, ``T + 3`` for three days past the target), optionally as a markdown
heading (``## 12/09/25 (T - 154)``) or with an ISO date (``2025-12-09 (T - 154)``).
The date fields may be separated by ``/``, ``.`` or ``-``; a two-digit year means
20yy. A header line always starts an entry, even inside a fenced code block (an
entry never runs past the next header). A line of that shape whose date does not
exist (``02/30/2025``) is not a header: it stays as text where it is and is
reported as an error. ``T - X Days`` in the preamble has no date and is plain text.

**Month/day order** (``date_order="auto"``) is inferred from all header lines read
together: a first field above 12 anywhere means day-first, a second field above 12
means month-first, both is an error diagnostic (then month-first); with no evidence,
month-first.

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

**Links** are found with markdown-it-py (CommonMark, plus GFM tables and
strikethrough), each entry as if it were a document of its own: inline links,
reference links (definitions from the same entry), and autolinks (``<https://…>``,
titled with the URL). Links in code spans and code blocks are not links; nor are
links with an empty target. Each occurrence counts, with its exact source line.

**Tasks** are lines of an entry (outside code blocks) that carry a *status marker*:

* ``Done`` is a marker when it stands as its own clause: after `` - `` (a dash with
  a space before it), ``;``, ``.``, ``!``, ``(`` or ``->``, and followed by the end
  of the line or by ``;`` ``.`` ``,`` ``!`` ``)``. So ``... advice - Done``,
  ``Finish Einsum today; - Done``, ``mid-term; Done.``, ``format. Done;``,
  ``Kafka. (Done, edits pending)`` are done, while ``Done two dry runs, ...``,
  ``Done with pre-midterm``, ``Presentation done and did well`` and ``I have done
  two dry runs`` are prose.
* ``Next`` is a *carried* marker in the same positions, but not before a comma
  (``Next, MatMul in Triton`` and ``Next:`` start sentences; ``- Next;`` is a marker).
* ``-> Tmr``, ``->Tmr`` (also ``→``, ``Tomorrow``) is carried.
* A GitHub checkbox ``- [ ]`` is open, ``- [x]`` done.

Markers are case-insensitive. When a line has several, the last one wins
(``First learn, and then finish this. - Next; - Done;`` is done). :attr:`Task.text`
is the line without its list marker or checkbox and without the chain of markers
at its end (``Finish Einsum today; - Done`` gives ``Finish Einsum today``).

**Words** are counted in an entry's prose: the text markdown-it-py finds in
paragraphs, headings, lists, quotes and tables, including link text. Code spans,
code blocks, HTML, autolinks and markdown syntax do not count. A word is a
whitespace-separated run holding at least one letter or digit that does not start
with a URL scheme (``https://``) or ``www.``.

**Diagnostics.** :func:`parse` and :func:`load` report repairs (warnings, see
:mod:`worklog_gen.repair`), invalid dates, contradictory month/day order, bad front
matter and duplicate days (errors), and entries whose target date disagrees with the
log's (warnings here; :func:`worklog_gen.lint.check` makes them errors). Duplicate
days are all kept: the first by date, then file, then line, is the day's page; each
later one gets ``duplicate_index`` 1, 2, ... (slug ``2025-12-09-2``) and an error.
"""

from __future__ import annotations

import bisect
import datetime as dt
import enum
import re
from collections import Counter
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
    code: str = ""
    """Kind of problem, for tools: ``invalid-date``, ``date-order``, ``duplicate-day``,
    ``target-date``, ``front-matter``, ``out-of-order``, ``empty-entry``, ``encoding``,
    ``line-ends``, ``mojibake``, ``backwards-link``, ``bare-url``."""

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
    """1-based line of the header in :attr:`path` (of the body's first line for an
    entry without a header line)."""
    links: list[Link] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    words: int = 0
    end_line: int = 0
    """1-based last line of the entry (its header's line when the body is empty)."""
    duplicate_index: int = 0
    """0, or n for the n-th later entry with the same date (see :func:`load`)."""

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
        """ISO date, used as the page name (``2025-12-09``; ``2025-12-09-2`` for a duplicate day)."""
        iso = self.date.isoformat()
        return f"{iso}-{self.duplicate_index + 1}" if self.duplicate_index else iso


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
    entries: list[Entry] = field(default_factory=list)
    """This file's entries in file order."""
    line_count: int = 0
    """Number of lines (``text.split("\\n")``, so a final newline adds an empty one)."""

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
    """The front matter's ``target_date:`` (or ``target:``), else the target date most
    entries agree on (see :func:`load`)."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    files: list[SourceFile] = field(default_factory=list)
    """Per file: front matter, preamble and entries in file order (same order as :attr:`paths`)."""
    date_order: Literal["mdy", "dmy"] = "mdy"
    """Month/day order used to read the headers (inferred or given)."""

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


# ---------------------------------------------------------------------------
# Header lines and dates

HEADER_RE = re.compile(
    r"^(?P<prefix>[ ]{0,3}(?:\#{1,6}[ \t]+)?)"
    r"(?P<date>(?P<iy>\d{4})-(?P<im>\d{1,2})-(?P<id>\d{1,2})"
    r"|(?P<f1>\d{1,2})(?P<dsep>[/.\-])(?P<f2>\d{1,2})(?P=dsep)(?P<year>\d{4}|\d{2}))"
    r"[ \t]*\([ \t]*(?P<t>[Tt])(?P<csep>[ \t]*[-\u2010-\u2015\u2212+][ \t]*)(?P<n>\d{1,5})"
    r"(?:[ \t]*[Dd]ays?)?[ \t]*\)[ \t]*(?:\#+[ \t]*)?$",
    re.MULTILINE,
)
"""A header-shaped line; the date may still be invalid (see :func:`header_date`)."""

_HEADER_HINT = re.compile(r"\([ \t]*[Tt][ \t]*[-\u2010-\u2015\u2212+]")
"""What every header line holds; found first because it is much faster to search for."""
_ISO_STEM = re.compile(r"^(\d{4}-\d{2}-\d{2})")


@dataclass(frozen=True)
class HeaderStyle:
    """How a log writes its header lines, so that a new one matches the last."""

    order: Literal["mdy", "dmy", "ymd"] = "mdy"
    year_digits: Literal[2, 4] = 2
    zero_pad: bool = True
    date_sep: str = "/"
    countdown_sep: str = " - "
    """Text between ``T`` and the number (``" - "``, ``"-"``, ``" – "``)."""
    prefix: str = ""
    """Markdown heading marker, such as ``"## "``."""


def header_style(header: str, order: Literal["mdy", "dmy"] = "mdy") -> HeaderStyle:
    """The :class:`HeaderStyle` of a header line read with month/day ``order``.

    Raises:
        ValueError: ``header`` is not a header line.
    """
    m = HEADER_RE.match(header)
    if m is None:
        raise ValueError(f"not a header line: {header!r}")
    sep = m["csep"].replace("+", "-")
    if m["iy"]:
        pad = len(m["im"]) == 2 or len(m["id"]) == 2
        return HeaderStyle("ymd", 4, pad, "-", sep, m["prefix"])
    fields = (m["f1"], m["f2"])
    pad = not any(len(f) == 1 for f in fields)
    return HeaderStyle(order, 4 if len(m["year"]) == 4 else 2, pad, m["dsep"], sep, m["prefix"])


def format_header(date: dt.date, countdown: int, *, style: HeaderStyle = HeaderStyle()) -> str:
    """A header line for ``date`` with ``countdown`` days to the target date.

    ``format_header(dt.date(2025, 12, 9), 154)`` is ``"12/09/25 (T - 154)"``; a
    negative countdown (past the target) is written ``T + n``.
    """
    width = 2 if style.zero_pad else 1
    day, month = f"{date.day:0{width}d}", f"{date.month:0{width}d}"
    year = f"{date.year:04d}" if style.year_digits == 4 else f"{date.year % 100:02d}"
    if style.order == "ymd":
        text = f"{date.year:04d}-{month}-{day}"
    elif style.order == "dmy":
        text = style.date_sep.join((day, month, year))
    else:
        text = style.date_sep.join((month, day, year))
    sep = style.countdown_sep
    if countdown < 0:
        sep = re.sub(r"[-\u2010-\u2015\u2212]", "+", sep) if re.search(r"[-\u2010-\u2015\u2212]", sep) else " + "
    return f"{style.prefix}{text} (T{sep}{abs(countdown)})"


def header_date(m: re.Match, order: Literal["mdy", "dmy"]) -> dt.date:
    """The date of a :data:`HEADER_RE` match read with month/day ``order``.

    Raises:
        ValueError: no such date (``02/30/2025``), naming the reason.
    """
    if m["iy"]:
        return dt.date(int(m["iy"]), int(m["im"]), int(m["id"]))
    a, b, year = int(m["f1"]), int(m["f2"]), int(m["year"])
    if len(m["year"]) == 2:
        year += 2000
    month, day = (a, b) if order == "mdy" else (b, a)
    return dt.date(year, month, day)


def header_countdown(m: re.Match) -> int:
    """The countdown of a :data:`HEADER_RE` match; negative for ``T + n``."""
    n = int(m["n"])
    return -n if "+" in m["csep"] else n


# ---------------------------------------------------------------------------
# Tasks and words

_MARKER_STATUS = {
    "done": TaskStatus.DONE,
    "next": TaskStatus.CARRIED,
    "tmr": TaskStatus.CARRIED,
    "tomorrow": TaskStatus.CARRIED,
}
_TASK_WORDS = (*_MARKER_STATUS, "[ ]", "[x]")
"""Lower-case strings one of which every task line holds."""
_LIST_PREFIX = re.compile(r"^[ \t]*(?:>[ \t]?)*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+)?")
_CHECKBOX = re.compile(r"^\[(?P<mark>[ xX])\](?:[ \t]+|$)")


def status_markers(text: str) -> list[tuple[int, int, TaskStatus]]:
    """The status markers in ``text`` as ``(start, end, status)``, in order.

    ``start`` includes the separator before the marker word (`` - ``, ``;``, ``(``,
    ``->``), ``end`` is the end of the word. The rules are in the module docstring.
    """
    low = text.lower()
    found = []
    for word, status in _MARKER_STATUS.items():
        p = low.find(word)
        while p != -1:
            start = _marker_start(text, p, word)
            if start is not None:
                found.append((start, p + len(word), status))
            p = low.find(word, p + 1)
    found.sort()
    return found


def _marker_start(text: str, p: int, word: str) -> int | None:
    """Start of the marker whose word ``word`` is at ``text[p:]``, with its separator; ``None`` if it is prose."""
    q = p + len(word)
    while q < len(text) and text[q] in " \t":
        q += 1
    if q < len(text) and text[q] not in (";.!)" if word == "next" else ";.,!)"):
        return None
    s = p
    while s > 0 and text[s - 1] in " \t":
        s -= 1
    if s == 0:
        return None
    c = text[s - 1]
    if c == "\u2192":
        return s - 1
    if c == ">" and text[s - 2 : s] == "->":
        return s - 2
    if word in ("tmr", "tomorrow"):
        return None
    if c in ";.!(":
        return s - 1
    if c in "-\u2013\u2014" and s >= 2 and text[s - 2].isspace():
        return s - 1
    return None


def parse_task(line: str, lineno: int = 0) -> Task | None:
    """The task a line reports, or ``None`` when it has no status marker or checkbox.

    See the module docstring for the markers. ``lineno`` is stored as :attr:`Task.line`.
    """
    prefix = _LIST_PREFIX.match(line)
    rest = line[prefix.end() :] if prefix else line
    status = None
    box = _CHECKBOX.match(rest) if prefix and prefix.group().strip() else None
    if box:
        status = TaskStatus.OPEN if box["mark"] == " " else TaskStatus.DONE
        rest = rest[box.end() :]
    markers = status_markers(rest)
    if markers:
        status = markers[-1][2]
    if status is None:
        return None
    # Strip the chain of markers that ends the line.
    while markers and not rest[markers[-1][1] :].strip(" \t;.,!)"):
        rest = rest[: markers[-1][0]]
        markers.pop()
    text = rest.rstrip(" \t;,-\u2013\u2014")
    if not text.strip():
        return None
    return Task(text.strip(), status, lineno)


# Runs of non-space characters without a letter or digit ("-", "->", "|"), and URLs,
# each after a whitespace character (count_words puts a space in front).
_NO_ALNUM = re.compile(r"\s(?:[^\w\s]|_)+(?=\s|$)")
_URLISH = re.compile(r"\s(?:[A-Za-z][A-Za-z0-9+.\-]*://|www\.)")


def count_words(text: str) -> int:
    """Words in ``text``: whitespace-separated runs with a letter or digit that do
    not start with a URL scheme (``https://``) or ``www.``."""
    n = len(text.split())
    if not n:
        return 0
    spaced = " " + text
    n -= len(_NO_ALNUM.findall(spaced))
    if "://" in text or "www." in text:
        n -= len(_URLISH.findall(spaced))
    return n


# ---------------------------------------------------------------------------
# Front matter

_FM_COMMENT_OPEN = re.compile(r"^<!--[ \t]*(?:---[ \t]*)?$")
_FM_COMMENT_CLOSE = re.compile(r"^(?:---[ \t]*)?-->[ \t]*$")


def front_matter_span(lines: list[str]) -> tuple[int, int, int]:
    """``(end, yaml_start, yaml_end)`` of the front matter in ``lines``; ``(0, 0, 0)`` if none.

    ``end`` is the number of front matter lines; ``lines[yaml_start:yaml_end]`` is
    the YAML. Recognises ``---``/``---`` (or ``...``) at the top, and the HTML
    comment forms ``<!-- ---`` ... ``--- -->`` and ``<!--``/``---`` ... ``---``/``-->``.
    """
    if not lines:
        return 0, 0, 0
    first = lines[0].rstrip(" \t")
    if first == "---":
        for i in range(1, len(lines)):
            if lines[i].rstrip(" \t") in ("---", "..."):
                return i + 1, 1, i
        return 0, 0, 0
    if not _FM_COMMENT_OPEN.match(first):
        return 0, 0, 0
    yaml_start = 1
    if not first.rstrip().endswith("---"):
        if len(lines) < 2 or lines[1].rstrip(" \t") != "---":
            return 0, 0, 0
        yaml_start = 2
    for i in range(yaml_start, len(lines)):
        line = lines[i].rstrip(" \t")
        if _FM_COMMENT_CLOSE.match(line) and line.startswith("---"):
            return i + 1, yaml_start, i
        if line == "---" and i + 1 < len(lines) and _FM_COMMENT_CLOSE.match(lines[i + 1].rstrip(" \t")):
            return i + 2, yaml_start, i
        if "-->" in line:
            break
    return 0, 0, 0


# ---------------------------------------------------------------------------
# Parsing


@dataclass
class _Prepared:
    """A file's repaired lines and header-shaped lines, before dates are read."""

    path: str
    lines: list[str]
    fm: tuple[int, int, int]
    header_like: list[tuple[int, re.Match]]
    diagnostics: list[Diagnostic]
    index: object = None
    """A :class:`worklog_gen.repair.LineIndex` of :attr:`lines`."""


def _prepare(text: str, path: str) -> _Prepared:
    from worklog_gen import repair

    text, diagnostics = repair.normalize_line_ends(text, path)
    lines = text.split("\n")
    diagnostics += repair.fix_encoding_lines(lines, path)
    fm = front_matter_span(lines)
    index = repair.LineIndex(lines)
    header_like = []
    for i in index.matching(_HEADER_HINT):
        if i >= fm[0] and (m := HEADER_RE.match(lines[i])):
            header_like.append((i, m))
    boundaries = [i for i, _ in header_like]
    repaired = repair.fix_link_lines(lines, path, start=fm[0], boundaries=boundaries, index=index)
    if repaired:
        index = repair.LineIndex(lines)
    diagnostics += repaired
    return _Prepared(path, lines, fm, header_like, diagnostics, index)


def infer_date_order(
    prepared: list[_Prepared], date_order: DateOrder = "auto"
) -> tuple[Literal["mdy", "dmy"], list[Diagnostic]]:
    """Month/day order for the header lines of ``prepared`` files (see the module docstring)."""
    if date_order in ("mdy", "dmy"):
        return date_order, []
    if date_order != "auto":
        raise ValueError(f"date_order must be 'auto', 'mdy' or 'dmy', not {date_order!r}")
    first: dict[str, tuple[str, int, str]] = {}
    for p in prepared:
        for i, m in p.header_like:
            if m["iy"]:
                continue
            a, b = int(m["f1"]), int(m["f2"])
            kind = "dmy" if a > 12 >= b else "mdy" if b > 12 >= a else None
            if kind and kind not in first:
                first[kind] = (p.path, i + 1, m["date"])
    if len(first) == 2:
        (k1, (p1, l1, d1)), (k2, (p2, l2, d2)) = sorted(first.items(), key=lambda kv: kv[1][:2])
        words = {"mdy": "month-first", "dmy": "day-first"}
        msg = (
            f"contradictory month/day order: {d2} is {words[k2]}, but {d1} at {p1}:{l1} is "
            f"{words[k1]}; reading dates month-first (set date_order to choose)"
        )
        return "mdy", [Diagnostic(p2, l2, msg, "error", "date-order")]
    return ("dmy" if "dmy" in first else "mdy"), []


def _front_matter(p: _Prepared) -> tuple[dict, list[Diagnostic]]:
    import yaml

    end, a, b = p.fm
    if not end:
        return {}, []
    try:
        data = yaml.safe_load("\n".join(p.lines[a:b])) if b > a else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = a + (mark.line if mark else 0) + 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return {}, [Diagnostic(p.path, line, f"front matter is not valid YAML: {problem}", "error", "front-matter")]
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        msg = "front matter is not a mapping of keys to values"
        return {}, [Diagnostic(p.path, a + 1, msg, "error", "front-matter")]
    return data, []


def _front_matter_line(p: _Prepared, key: str) -> int:
    end, a, b = p.fm
    for i in range(a, b):
        if re.match(rf"^{key}\s*:", p.lines[i]):
            return i + 1
    return max(a, 1)


def _per_file_date(p: _Prepared, fm: dict, order: str) -> tuple[dt.date | None, int | None, list[Diagnostic]]:
    """Date and countdown of a one-entry file without header lines (``None`` date if it is not one)."""
    from dateutil import parser as dateparser

    diagnostics = []
    date = None
    if "date" in fm:
        value = fm["date"]
        if isinstance(value, dt.datetime):
            date = value.date()
        elif isinstance(value, dt.date):
            date = value
        else:
            try:
                date = dateparser.isoparse(str(value)).date()
            except ValueError:
                try:
                    date = dateparser.parse(str(value), dayfirst=order == "dmy").date()
                except (ValueError, OverflowError):
                    line = _front_matter_line(p, "date")
                    msg = f"front matter date {value!r} is not a date"
                    diagnostics.append(Diagnostic(p.path, line, msg, "error", "invalid-date"))
    if date is None:
        m = _ISO_STEM.match(Path(p.path).name)
        if m:
            try:
                date = dt.date.fromisoformat(m[1])
            except ValueError:
                msg = f"file name date {m[1]} is not a date"
                diagnostics.append(Diagnostic(p.path, 1, msg, "error", "invalid-date"))
    countdown = None
    if date is not None and "countdown" in fm:
        value = fm["countdown"]
        if isinstance(value, int) and not isinstance(value, bool):
            countdown = value
        elif isinstance(value, str) and re.fullmatch(r"[ \t]*[-+]?\d+[ \t]*", value):
            countdown = int(value)
        else:
            line = _front_matter_line(p, "countdown")
            msg = f"front matter countdown {value!r} is not a whole number"
            diagnostics.append(Diagnostic(p.path, line, msg, "error", "front-matter"))
    return date, countdown, diagnostics


def _build(p: _Prepared, order: Literal["mdy", "dmy"], *, fast: bool = True) -> tuple[SourceFile, list[Diagnostic]]:
    """Entries of one prepared file (dates read with ``order``), analysed for links, tasks and words."""
    lines = p.lines
    diagnostics = list(p.diagnostics)
    fm, fm_diags = _front_matter(p)
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
        for (i, date, countdown), end in zip(headers, bounds):
            entries.append(
                Entry(date, countdown, lines[i], "\n".join(lines[i + 1 : end]), p.path, i + 1, end_line=end)
            )
    else:
        date, countdown, more = _per_file_date(p, fm, order)
        diagnostics += more
        if date is None:
            src.preamble, src.preamble_lines = "\n".join(lines[fm_end:]), len(lines) - fm_end
        else:
            body = "\n".join(lines[fm_end:])
            entries.append(Entry(date, countdown, "", body, p.path, fm_end + 1, end_line=len(lines)))
    src.entries = entries
    if entries:
        _analyse(lines, entries, fast=fast, index=p.index)
    return src, diagnostics


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
    target, given_by = _front_matter_target(main, diagnostics), f"the front matter of {main.path} gives"
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


def _front_matter_target(f: SourceFile, diagnostics: list[Diagnostic]) -> dt.date | None:
    """The target date the front matter of ``f`` gives (``target_date:`` or ``target:``), if any."""
    from dateutil import parser as dateparser

    for key in ("target_date", "target"):
        if key not in f.front_matter:
            continue
        value = f.front_matter[key]
        if isinstance(value, dt.datetime):
            return value.date()
        if isinstance(value, dt.date):
            return value
        try:
            return dateparser.isoparse(str(value)).date()
        except ValueError:
            lines = f.front_matter_text.split("\n")
            line = next((i + 1 for i, text in enumerate(lines) if re.match(rf"^{key}\s*:", text)), 1)
            msg = f"front matter {key} {value!r} is not a date (YYYY-MM-DD)"
            diagnostics.append(Diagnostic(f.path, line, msg, "error", "front-matter"))
    return None


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
    texts: list[tuple[str, str]], *, date_order: DateOrder, fast: bool = True, extra: list[Diagnostic] | None = None
) -> Worklog:
    """Parse ``(path, text)`` pairs into one :class:`Worklog`; ``extra`` diagnostics
    (from decoding) join the parser's. ``fast=False`` is the reference analysis."""
    prepared = [_prepare(text, path) for path, text in texts]
    order, diagnostics = infer_date_order(prepared, date_order)
    diagnostics += extra or []
    files = []
    for p in prepared:
        src, more = _build(p, order, fast=fast)
        files.append(src)
        diagnostics += more
    return _assemble(files, diagnostics, order)


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
    from worklog_gen import repair

    texts, diagnostics = [], []
    for q in worklog_files(paths):
        text, diags = repair.decode_bytes(q.read_bytes(), str(q))
        texts.append((str(q), text))
        diagnostics += diags
    return _parse_texts(texts, date_order=date_order, extra=diagnostics)


# ---------------------------------------------------------------------------
# Links, tasks and words: markdown-it-py over the entries
#
# Each entry is analysed as a markdown document of its own. Running markdown-it-py
# on every line is slow (about 15 us a line for the block parse alone), so by
# default one parse covers a whole file, and only the parts of entries that can
# hold markdown syntax go into it: the others are replaced by blank lines (line
# numbers stay), and their words are counted directly. An entry is cut into *units*
# at blank lines and at lines that always start a new block (a bullet or a heading
# at indent < 4), except inside fences, HTML blocks, block quotes and tables; a unit
# that starts indented joins the one before it. A unit goes to markdown-it-py when one
# of its lines holds markdown syntax (_INLINE_SYNTAX, _BLOCK_SYNTAX); it is plain
# text otherwise, and plain text has no links, no code and the same words either
# way. The syntax tests are exact where CommonMark makes a character inert: "_"
# between two letters or digits ("x_ptr"), "&" not followed by an entity name and
# ";", "<" not followed by a letter, "/", "!" or "?", "|" without a table's
# delimiter row. If any block markdown-it-py finds straddles two units (a construct
# this cutting did not foresee), the entry is parsed again on its own, in full.
# tests/test_parser_properties.py checks that the result equals the full parse.

_HARD_SYNTAX = re.compile(r"[\[\]`*]")  # links, images, code spans, emphasis
_ENTITY = re.compile(r"&(?:\#[0-9]{1,7}|\#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_ESCAPE = re.compile(r"\\(?:[\n!-/:-@\[-`{-~]|$)")  # backslash escapes and hard line breaks
_TAG = re.compile(r"<[A-Za-z/!?]")  # autolinks and raw HTML
_BLOCK_SYNTAX = re.compile(
    r"(?: {0,3}\t| {4})"  # indented code, or indentation that depends on the container
    r"|[ \t]*(?:(?:[-+*]|>)[ \t]*)*\d{1,9}[.)](?:[ \t]|$)"  # ordered list marker ("1." is not a word)
    r"|[ \t]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+)*>"  # block quote
)
_SYNTAX_CHARS = re.compile(r"[\[\]`*_&\\<~|]")
"""Characters one of which every line with inline syntax or a table holds."""
_BLOCK_START = frozenset(" \t>-+*0123456789")
_TABLE_DELIMITER = re.compile(r"^(?=[^|]*\|)(?=[^-]*-)[ \t|:\-]+$")
_SPLIT = re.compile(r" {0,3}(?:[-+][ \t]+\S|\#{1,6}(?:[ \t]|$))")  # not "-" alone: a setext underline
_HTML_REGION = re.compile(
    r" {0,3}(?:<(?P<raw>script|pre|style|textarea)(?:[ \t>]|$)"
    r"|(?P<comment><!--)|(?P<pi><\?)|(?P<cdata><!\[CDATA\[)|(?P<decl><![A-Za-z]))",
    re.IGNORECASE,
)
_HTML_CLOSE = {"raw": "</", "comment": "-->", "pi": "?>", "cdata": "]]>", "decl": ">"}
_SEPARATOR = ["", "***", ""]
_CONTAINER_TOKENS = frozenset({"bullet_list_open", "ordered_list_open", "list_item_open", "blockquote_open"})
_CODE_TOKENS = frozenset({"fence", "code_block", "html_block"})


def _has_inline_syntax(text: str) -> bool:
    """Whether markdown-it-py's inline parser could find more than plain text in ``text``."""
    if _HARD_SYNTAX.search(text):
        return True
    if "_" in text and _loose_underscore(text):
        return True
    if "&" in text and _ENTITY.search(text):
        return True
    if "\\" in text and _ESCAPE.search(text):
        return True
    if "<" in text and _TAG.search(text):
        return True
    return "~~" in text


def _loose_underscore(text: str) -> bool:
    """Whether some ``_`` in ``text`` is not between two word characters, so that it
    may open or close emphasis (CommonMark's flanking rules make ``x_ptr`` inert)."""
    i = text.find("_")
    last = len(text) - 1
    while i != -1:
        before = text[i - 1] if i else " "
        after = text[i + 1] if i < last else " "
        if not (before.isalnum() or before == "_") or not (after.isalnum() or after == "_"):
            return True
        i = text.find("_", i + 1)
    return False


def _has_syntax(line: str) -> bool:
    """Whether markdown-it-py could read ``line`` as more than plain words (see above)."""
    if line[:1] in _BLOCK_START and _BLOCK_SYNTAX.match(line):
        return True
    return _has_inline_syntax(line) or ("|" in line and _TABLE_DELIMITER.match(line) is not None)


_MD = None


def _markdown():
    """The shared markdown-it-py parser: CommonMark plus tables and strikethrough,
    inline parsing left to :func:`_analyse`, links kept verbatim with their positions."""
    global _MD
    if _MD is not None:
        return _MD
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable(["table", "strikethrough"]).disable(["inline", "text_join"])
    md.normalizeLink = lambda url: url  # keep the author's URL, not a percent-encoded one
    md.normalizeLinkText = lambda url: url
    for name in ("link", "autolink"):
        md.inline.ruler.at(name, _positioned(_rule(md.inline.ruler, name)))
    md.block.ruler.at("reference", _per_entry_references(_rule(md.block.ruler, "reference")), {"alt": []})
    _MD = md
    return md


def _rule(ruler, name: str):
    for rule in ruler.__rules__:
        if rule.name == name:
            return rule.fn
    raise KeyError(name)


def _positioned(rule):
    """Wrap an inline link rule to record where each link starts in the inline source."""

    def wrapped(state, silent):
        start, n = state.pos, len(state.tokens)
        ok = rule(state, silent)
        if ok and not silent:
            for tok in state.tokens[n:]:
                if tok.type == "link_open":
                    tok.meta["src_pos"] = start
                    break
        return ok

    return wrapped


def _per_entry_references(rule):
    """Wrap the reference-definition rule so that each entry keeps its own definitions."""

    def wrapped(state, start_line, end_line, silent):
        envs = state.env.get("worklog_entry_envs")
        if envs is None:
            return rule(state, start_line, end_line, silent)
        shared = state.env
        state.env = envs[shared["worklog_entry_of_line"][start_line]]
        try:
            return rule(state, start_line, end_line, silent)
        finally:
            state.env = shared

    return wrapped


def _blank(line: str) -> bool:
    return not line.strip(" \t")


def _indent(line: str) -> int:
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


def _line_flags(lines: list[str], index) -> tuple[list[bool], list[bool]]:
    """Per line: is it blank, and does it hold markdown syntax (:func:`_has_syntax`)."""
    blank = [not line.strip(" \t") for line in lines]
    syntax = [False] * len(lines)
    for i in index.matching(_SYNTAX_CHARS):
        syntax[i] = _has_syntax(lines[i])
    for i, line in enumerate(lines):
        if line[:1] in _BLOCK_START and not syntax[i] and _BLOCK_SYNTAX.match(line):
            syntax[i] = True
    return blank, syntax


def _units(
    lines: list[str], start: int, end: int, blank: list[bool], syntax: list[bool]
) -> list[tuple[int, int, bool]]:
    """Cut ``lines[start:end]`` (an entry body) into ``(first, stop, needs_markdown)`` units.

    ``blank`` and ``syntax`` are :func:`_line_flags` of ``lines``.
    """
    from worklog_gen.repair import track_fence

    chunks: list[list] = []  # [first, stop, splittable, needs_markdown], split at blank lines
    i = start
    while i < end:
        if blank[i]:
            try:
                i = blank.index(False, i, end)
            except ValueError:
                break
        first = i
        try:
            stop = blank.index(True, i, end)
        except ValueError:
            stop = end
        if not any(syntax[first:stop]):
            chunks.append([first, stop, True, False])
            i = stop
            continue
        splittable = True
        fence, html_close = None, None
        while i < end:
            line = lines[i]
            i += 1
            if fence is not None:
                if "```" in line or "~~~" in line:
                    fence, _ = track_fence(line, fence)
                continue
            if html_close is not None:
                if html_close in line.lower():
                    html_close = None
                continue
            if blank[i - 1]:
                i -= 1
                break
            if not syntax[i - 1]:
                continue
            if "```" in line or "~~~" in line:
                fence, opened = track_fence(line, None)
                splittable = splittable and not opened
            if "<" in line and (m := _HTML_REGION.match(line)):
                kind = next(k for k, v in m.groupdict().items() if v)
                if _HTML_CLOSE[kind] not in line.lower()[m.end() :]:
                    html_close = _HTML_CLOSE[kind]
            if line.lstrip(" \t")[:1] in ("<", ">") or ("|" in line and _TABLE_DELIMITER.match(line)):
                splittable = False
        chunks.append([first, i, splittable, True])
    # A chunk that starts indented may continue a list item or code block above it:
    # it joins the chunk before, so that each unit starts at the left margin (or at
    # the start of the entry), where CommonMark reads it the same in any context.
    glued: list[list] = []
    for chunk in chunks:
        if glued and lines[chunk[0]][:1] in (" ", "\t"):
            glued[-1][1:] = [chunk[1], False, glued[-1][3] or chunk[3]]
        else:
            glued.append(chunk)
    units = []
    for first, stop, splittable, needs_markdown in glued:
        if not needs_markdown or not splittable:
            units.append((first, stop, needs_markdown))
            continue
        cuts = [first] + [k for k in range(first + 1, stop) if _SPLIT.match(lines[k])] + [stop]
        for a, b in zip(cuts, cuts[1:]):
            units.append((a, b, any(syntax[a:b])))
    return units


_BLOCK_CHARS = frozenset("#-+*=_>`~<|")
_BULLET = re.compile(r" {0,3}[-+*]( {1,4})(?=\S)")


def _paragraph_content(lines: list[str], a: int, b: int) -> str | None:
    """The inline content of ``lines[a:b]`` if CommonMark reads them as one paragraph,
    on its own or as a bullet item's (``- text``); ``None`` if that is not certain.

    Certain means: no line indented as code, no line starting with a character that
    can open a block (``#-+*=_>`~<|``, an ordered list marker), no ``]:`` (a link
    reference definition), no table delimiter row. Leading whitespace of the later
    lines is kept; markdown-it-py's inline parser drops it after each line break.
    Such units skip the block parse, which costs more than the inline one.
    """
    first = lines[a]
    m = _BULLET.match(first)
    body = first[m.end() :] if m else first.lstrip(" ")
    if not body or body[0] in _BLOCK_CHARS:
        return None
    for k in range(a, b):
        line = lines[k]
        if line[:1] in _BLOCK_START and _BLOCK_SYNTAX.match(line):
            return None
        if k > a and line.lstrip(" ")[:1] in _BLOCK_CHARS:
            return None
        if "]:" in line or ("|" in line and _TABLE_DELIMITER.match(line)) or not line.strip(" \t"):
            return None
    if b - a == 1:
        return body.strip()
    return "\n".join([body, *lines[a + 1 : b]]).strip()


def _body_range(e: Entry) -> tuple[int, int]:
    """0-based ``[first, stop)`` of an entry's body lines."""
    return (e.line if e.header else e.line - 1), e.end_line


def _analyse(lines: list[str], entries: list[Entry], *, fast: bool = True, index=None) -> None:
    """Fill in ``links``, ``tasks`` and ``words`` of ``entries`` (all from one file's ``lines``).

    ``fast=False`` parses every entry on its own with markdown-it-py, in full: the
    reference the fast path is tested against. ``index`` is a
    :class:`worklog_gen.repair.LineIndex` of ``lines``, if the caller has one.
    """
    from worklog_gen.repair import LineIndex

    index = index or LineIndex(lines)
    md = _markdown()
    code_lines: set[int] = set()
    prose: list[list[str]] = [[] for _ in entries]  # text whose words count, per entry
    links: list[list[Link]] = [[] for _ in entries]
    alone = set() if fast else set(range(len(entries)))
    if fast:
        blank, syntax = _line_flags(lines, index)
        # One markdown document of the units that need markdown-it-py's block parser,
        # each unit after a thematic break that closes any list or quote before it,
        # so that each is read as at the left margin; orig[c] is the source line of
        # line c. Plain paragraphs go straight to the inline parser.
        md_lines: list[str] = []
        orig: list[int] = []
        unit_of: list[int] = []  # unit number of each line of md_lines, -1 for separators
        entry_of: list[int] = []
        direct: list[tuple[int, int, str]] = []  # (entry, first line, inline content)
        n_units = 0
        for k, e in enumerate(entries):
            last = None
            for a, b, needs_markdown in _units(lines, *_body_range(e), blank, syntax):
                if not needs_markdown:
                    prose[k] += lines[a:b]
                    continue
                content = _paragraph_content(lines, a, b)
                if content is not None:
                    direct.append((k, a, content))
                    continue
                if md_lines and a != last:
                    md_lines += _SEPARATOR
                    orig += [-1] * len(_SEPARATOR)
                    unit_of += [-1] * len(_SEPARATOR)
                    entry_of += [k] * len(_SEPARATOR)
                md_lines += lines[a:b]
                orig += range(a, b)
                unit_of += [n_units] * (b - a)
                entry_of += [k] * (b - a)
                n_units += 1
                last = b
        envs: list[dict] = [{} for _ in entries]
        if n_units:
            env = {"worklog_entry_envs": envs, "worklog_entry_of_line": entry_of}
            tokens = md.parse("\n".join(md_lines), env)
            for tok in tokens:
                if tok.map and tok.type not in _CONTAINER_TOKENS:
                    c0, c1 = tok.map[0], min(max(tok.map[1] - 1, tok.map[0]), len(md_lines) - 1)
                    if unit_of[c0] == -1 and c0 == c1 and tok.type == "hr":
                        continue  # a separator
                    if unit_of[c0] != unit_of[c1] or unit_of[c0] == -1:
                        alone.update(entry_of[c0 : c1 + 1])
            for tok in tokens:
                if not tok.map or entry_of[tok.map[0]] in alone:
                    continue
                k = entry_of[tok.map[0]]
                if tok.type in _CODE_TOKENS:
                    code_lines.update(orig[c] for c in range(*tok.map) if orig[c] >= 0)
                elif tok.type == "inline":
                    text, found = _inline(md, tok.content, orig[tok.map[0]] + 1, envs[k], shortcut=True)
                    prose[k].append(text)
                    links[k] += found
        for k, a, content in direct:
            if k not in alone:
                text, found = _inline(md, content, a + 1, envs[k], shortcut=True)
                prose[k].append(text)
                links[k] += found
    for k in sorted(alone):
        a, b = _body_range(entries[k])
        env: dict = {}
        prose[k], links[k] = [], []
        for tok in md.parse("\n".join(lines[a:b]), env):
            if tok.type in _CODE_TOKENS and tok.map:
                code_lines.update(range(a + tok.map[0], a + tok.map[1]))
            elif tok.type == "inline":
                text, found = _inline(md, tok.content, a + tok.map[0] + 1, env, shortcut=fast)
                prose[k].append(text)
                links[k] += found
    for k, e in enumerate(entries):
        e.words = count_words("\n".join(prose[k]))
        e.links = sorted(links[k], key=lambda link: link.line)
        e.tasks = []
    starts = [_body_range(e)[0] for e in entries]
    for i in index.lower().containing(_TASK_WORDS):
        k = bisect.bisect_right(starts, i) - 1
        if k < 0 or i >= entries[k].end_line or i in code_lines:
            continue
        task = parse_task(lines[i], i + 1)
        if task is not None:
            entries[k].tasks.append(task)


def _inline(md, content: str, first_line: int, env: dict, *, shortcut: bool) -> tuple[str, list[Link]]:
    """The prose (text whose words count) and the links of the inline ``content`` of
    one block (a paragraph's, heading's or table cell's text) whose first line is
    ``first_line`` (1-based) in the source."""
    if shortcut and not _has_inline_syntax(content):
        return content, []
    children: list = []
    md.inline.parse(content, md, env, children)
    pieces: list[str] = []
    found: list[Link] = []
    title: list[str] | None = None
    link_open = None
    autolink = False
    for child in children:
        kind = child.type
        if kind == "link_open":
            link_open, title, autolink = child, [], child.markup == "autolink"
            pieces.append(" ")
        elif kind == "link_close":
            href = link_open.attrGet("href") if link_open is not None else None
            if href:
                pos = link_open.meta.get("src_pos", 0)
                line = first_line + content.count("\n", 0, pos)
                found.append(Link(" ".join("".join(title).split()), str(href), line))
            link_open, title, autolink = None, None, False
            pieces.append(" ")
        elif kind in ("text", "text_special"):
            if title is not None:
                title.append(child.content)
            if not autolink:
                pieces.append(child.content)
        elif kind in ("softbreak", "hardbreak"):
            if title is not None:
                title.append(" ")
            pieces.append("\n")
        elif kind in ("code_inline", "image"):
            if title is not None:
                title.append(child.content)
            pieces.append(" ")
        elif kind == "html_inline":
            pieces.append(" ")
    return "".join(pieces), found


# ---------------------------------------------------------------------------
# Adding an entry


def append_entry(path: str | Path, date: dt.date, *, date_order: DateOrder = "auto") -> tuple[Path, str]:
    """Append the header line of a new entry for ``date`` to the log at ``path``.

    The countdown is ``target_date - date`` in days (the log's :attr:`Worklog.target_date`),
    written in the style of the file's last header (2- or 4-digit year, month/day
    order, spacing). ``path`` is a log file, or a folder: then the file holding the
    newest entry. In a folder of one-entry files (no header lines), a new file
    ``<date>.md`` holding the header line is written next to the newest one. A blank
    line separates the header from the text before it; the file's line ends (LF or
    CRLF) are kept and nothing before the end of the file is rewritten.

    Returns the file written and the header line.

    Raises:
        ValueError: ``date`` already has an entry, is before the newest entry, no
            target date is known (no countdown, no front matter ``target``), or
            ``path`` is a folder without entries.
        FileNotFoundError: ``path`` does not exist.
    """
    path = Path(path)
    log = load(path, date_order=date_order)
    for e in log.entries:
        if e.date == date:
            raise ValueError(f"{e.source}: {date} already has an entry")
    if log.target_date is None:
        raise ValueError(f"{path}: no target date known: no entry has a countdown")
    newest = log.entries[-1] if log.entries else None
    if newest is not None and date < newest.date:
        raise ValueError(
            f"{date} is before the newest entry {newest.date} ({newest.source}); add it by hand where it belongs"
        )
    countdown = (log.target_date - date).days
    if path.is_file():
        file = path
    elif newest is not None:
        file = Path(newest.path)
    else:
        raise ValueError(f"{path}: no entry yet to find the log file by; name the file")
    in_file = [e for f in log.files if f.path == str(file) for e in f.entries if e.header]
    style = header_style(in_file[-1].header, log.date_order) if in_file else HeaderStyle(order=log.date_order)
    header = format_header(date, countdown, style=style)
    if newest is not None and not newest.header and not path.is_file():
        file = file.parent / f"{date.isoformat()}.md"
        if file.exists():
            raise ValueError(f"{file}: already exists")
        file.write_text(header + "\n", encoding="utf-8")
        return file, header
    data = file.read_bytes()
    try:
        data.decode("utf-8")
        encoding = "utf-8"
    except UnicodeDecodeError:
        encoding = "cp1252"
    nl = b"\r\n" if b"\r\n" in data else b"\n"
    body = data.rstrip(b"\r\n")
    trailing = data[len(body) :].replace(b"\r\n", b"\n").replace(b"\r", b"\n").count(b"\n")
    prefix = b"" if not body.strip() else nl * max(0, 2 - trailing)
    with file.open("ab") as fh:
        fh.write(prefix + header.encode(encoding, errors="replace") + nl)
    return file, header
