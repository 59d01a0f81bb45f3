"""Header lines of a T-minus worklog: finding them, reading their date and countdown,
inferring the month/day order, and writing new ones in a log's own style.

A header line starts with a date and a countdown in parentheses:
``12/09/25 (T - 154)``, ``12/10/2025 (T-153)``, ``12/18/2025 (T – 145)`` (any dash,
any spacing, ``T + 3`` for three days past the target), optionally as a markdown
heading (``## 12/09/25 (T - 154)``), in emphasis (``**12/09/25 (T - 154)**``), with an ISO
date (``2025-12-09 (T - 154)``) or followed by a title (``12/09/25 (T - 154) - CUDA graphs``).
A line that starts like one but is not (:data:`NEAR_HEADER_RE`) is text, with a warning.
The date fields may be separated by ``/``, ``.`` or ``-``; a two-digit year means
20yy. The *countdown* is the number of days left to the *target date*, so
``target_date = date + countdown``.

**Month/day order** (``date_order="auto"``) is inferred from all header lines read
together, the T-minus headers and the numeric date lines of dated notes (``1/20/2025``): a first field above 12 anywhere means day-first, a second field above 12
means month-first, both is an error diagnostic (then month-first); with no evidence,
month-first.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from dateutil.parser import parserinfo

from worklog_gen.log.diagnostics import Diagnostic, DiagnosticCode
from worklog_gen.log.model import DateOrder, Entry, ShapeName
from worklog_gen.log.repair import track_fence

HEADER_RE = re.compile(
    r"^(?P<prefix>[ ]{0,3}(?:\#{1,6}[ \t]+)?)(?P<em>\*\*|__|\*|_)?"
    r"(?P<date>(?P<iy>\d{4})-(?P<im>\d{1,2})-(?P<id>\d{1,2})"
    r"|(?P<f1>\d{1,2})(?P<dsep>[/.\-])(?P<f2>\d{1,2})(?P=dsep)(?P<year>\d{4}|\d{2}))"
    r"[ \t]*\([ \t]*(?P<t>[Tt])(?P<csep>[ \t]*[-\u2010-\u2015\u2212+][ \t]*)(?P<n>\d{1,5})"
    r"(?:[ \t]*[Dd]ays?)?[ \t]*\)(?(em)(?P=em))"
    r"(?P<rest>[ \t\-\u2010-\u2015:|,][^\n]*?)?[ \t]*(?:\#+[ \t]*)?$",
    re.MULTILINE,
)
"""A header-shaped line; the date may still be invalid (see :func:`header_date`). The date and
countdown start the line, after a heading marker and inside emphasis if any
(``**12/09/25 (T - 154)**``); ``rest`` is a title after them (``12/09/25 (T - 154) - CUDA graphs``)."""

NEAR_HEADER_RE = re.compile(
    r"^[ \t>#*_+\-]*(?:\d{1,9}[.)][ \t]+)?(?:[A-Za-z]+\.?,?[ \t]+)?"
    r"(?:\d{1,4}[/.\-]\d{1,2}(?:[/.\-]\d{1,4})?"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?[ \t]+\d{1,2}(?:st|nd|rd|th)?(?:,?[ \t]+\d{4})?)"
    r"[ \t*_,]*\([ \t]*T[ \t]*[-\u2010-\u2015\u2212+][ \t]*\d{1,5}(?:[ \t]*days?)?[ \t]*\)",
    re.IGNORECASE,
)
"""A line that starts like a T-minus header but is not one (:data:`HEADER_RE` does not match it):
a date and a countdown after a list or quote marker (``- 12/09/25 (T - 154)``), after one word
(``Tue 12/09/25 (T - 154)``), or with a date of another form (``12/9 (T - 154)``,
``Dec 9, 2025 (T - 154)``). A sentence that mentions a day (``Mail scheduled for 12/15/25 (T - 2)``)
is not one: more than one word comes before its date."""

MAX_COUNTDOWN = 99_999
"""The largest countdown a header may have: :data:`HEADER_RE` reads at most 5 digits, so that a
number such as a year or a count in a line's text is never taken for one (99,999 days is 273 years)."""

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
    emphasis: str = ""
    """Emphasis around the date and countdown, such as ``"**"``."""


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
        return HeaderStyle("ymd", 4, pad, "-", sep, m["prefix"], m["em"] or "")
    fields = (m["f1"], m["f2"])
    pad = not any(len(f) == 1 for f in fields)
    return HeaderStyle(order, 4 if len(m["year"]) == 4 else 2, pad, m["dsep"], sep, m["prefix"], m["em"] or "")


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
    return f"{style.prefix}{style.emphasis}{text} (T{sep}{abs(countdown)}){style.emphasis}"


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


def describe_date(m: re.Match, order: Literal["mdy", "dmy"]) -> str:
    """A numeric date as written, with how it is read, for a message: ``02/30/2025 (month-first)``."""
    words = "ISO" if m["iy"] else {"mdy": "month-first", "dmy": "day-first"}.get(order) if m["f1"] else None
    return f"{m['date']} ({words})" if words else m["date"]


def header_countdown(m: re.Match) -> int:
    """The countdown of a :data:`HEADER_RE` match; negative for ``T + n``."""
    n = int(m["n"])
    return -n if "+" in m["csep"] else n



def infer_date_order(
    header_lines: Iterable[tuple[str, int, re.Match]], date_order: DateOrder = "auto"
) -> tuple[Literal["mdy", "dmy"], list[Diagnostic]]:
    """Month/day order for ``header_lines`` (see the module docstring).

    ``header_lines`` holds ``(path, line_index, match)`` per header-shaped line, in
    file and line order: ``line_index`` is 0-based, ``match`` a :data:`HEADER_RE` or
    :data:`DATE_LINE_RE` match (only its numeric ``f1/f2/year`` dates count).
    ``date_order`` ``"mdy"`` or ``"dmy"`` is returned as given. Returns the order and,
    when the lines contradict each other, an error diagnostic at the first line that
    disagrees with an earlier one.

    Raises:
        ValueError: ``date_order`` is not ``"auto"``, ``"mdy"`` or ``"dmy"``.
    """
    if date_order in ("mdy", "dmy"):
        return date_order, []
    if date_order != "auto":
        raise ValueError(f"date_order must be 'auto', 'mdy' or 'dmy', not {date_order!r}")
    first: dict[str, tuple[str, int, str]] = {}
    for path, i, m in header_lines:
        if not m["f1"]:  # year first, or the month's name: no question of order
            continue
        a, b = int(m["f1"]), int(m["f2"])
        kind = "dmy" if a > 12 >= b else "mdy" if b > 12 >= a else None
        if kind and kind not in first:
            first[kind] = (path, i + 1, m["date"])
    if len(first) == 2:
        (k1, (p1, l1, d1)), (k2, (p2, l2, d2)) = sorted(first.items(), key=lambda kv: kv[1][:2])
        words = {"mdy": "month-first", "dmy": "day-first"}
        msg = (
            f"contradictory month/day order: {d2} is {words[k2]}, but {d1} at {p1}:{l1} is "
            f"{words[k1]}; reading dates month-first (set date_order to choose)"
        )
        return "mdy", [Diagnostic(p2, l2, msg, DiagnosticCode.DATE_ORDER)]
    return ("dmy" if "dmy" in first else "mdy"), []


# --- the other shapes of an entry header: progress logs and dated notes -------------------------

_MONTH_NAME = parserinfo()
"""dateutil's English month names and abbreviations: ``_MONTH_NAME.month("Sept")`` is 9."""

_MONTHS = (r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
           r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?")
_WEEKDAY = r"(?P<weekday>(?:mon|tue|wed|thu|fri|sat|sun)[a-z]{0,6})\.?,?[ \t]+"
"""A weekday before a date, whole or cut (``Monday``, ``Mon.``, ``Tues``), with a comma or not."""

PROGRESS_RE = re.compile(
    r"^[ ]{0,3}\#{1,6}[ \t]+"
    rf"(?:{_WEEKDAY})?"
    rf"(?:(?P<month>{_MONTHS})\.?[ \t]+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?![\d:])"
    rf"|(?P<day_first>\d{{1,2}})(?:st|nd|rd|th)?[ \t]+(?:of[ \t]+)?(?P<month_after>{_MONTHS})\.?(?![a-z]))"
    r"(?:,?[ \t]+(?P<year>\d{4})(?!\d))?"
    r"(?P<rest>[^\n]*?)[ \t]*(?:\#+[ \t]*)?$",
    re.IGNORECASE,
)
"""A markdown heading that starts with a month name and a day, in either order, without or
with a year, after a weekday if any: ``## November 24``, ``## Nov 24``, ``## 24 November 2025``,
``## Monday, November 24``, ``### October 23 - Day 9 of GPU Programming``. ``rest`` is what
follows the date (its title)."""

DATE_LINE_RE = re.compile(
    r"^[ ]{0,3}(?:\#{1,6}[ \t]+)?(?P<em>\*\*|__|\*|_)?"
    rf"(?:{_WEEKDAY})?"
    r"(?P<date>(?P<iy>\d{4})(?P<ysep>[-./])(?P<im>\d{1,2})(?P=ysep)(?P<id>\d{1,2})"
    r"|(?P<f1>\d{1,2})(?P<dsep>[/.\-])(?P<f2>\d{1,2})(?P=dsep)(?P<year>\d{4}|\d{2})"
    rf"|(?:(?P<month>{_MONTHS})\.?[ \t]+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?"
    rf"|(?P<day_first>\d{{1,2}})(?:st|nd|rd|th)?[ \t]+(?:of[ \t]+)?(?P<month_after>{_MONTHS})\.?)"
    r",?[ \t]+(?P<spelt_year>\d{4}))"
    r":?(?(em)(?P=em))[ \t]*:?[ \t]*(?:\#+[ \t]*)?$",
    re.IGNORECASE,
)
"""A date with its year, alone on its line (a colon after it, emphasis around it, a heading
marker or a weekday before it allowed): year first (``2025-01-20``, ``2025.01.13``,
``2025/01/20``), numeric with the year last (``1/20/2025``, ``20.01.25``: month/day order as the
T-minus headers', :func:`infer_date_order`), or with the month's name (``January 20, 2025``,
``20th Jan 2025``, ``Mon, Jan 20 2025``, ``**2025-01-20**``, ``## 2025-01-20``). A date inside a
sentence never matches."""

NEAR_DATE_RE = re.compile(
    r"^(?:[ \t>#*_+\-]*(?:\d{1,9}[.)][ \t]+)?"
    rf"(?:{_WEEKDAY})?"
    rf"(?:\d{{1,4}}[/.\-]\d{{1,2}}[/.\-]\d{{1,4}}|(?:{_MONTHS})\.?[ \t]+\d{{1,2}}(?:st|nd|rd|th)?(?:,?[ \t]+\d{{1,4}})?"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?[ \t]+(?:of[ \t]+)?(?:{_MONTHS})\.?(?:,?[ \t]+\d{{1,4}})?)"
    r"|[ \t#*_]*\d{1,2}/\d{1,2})"
    r"[ \t*_:.]*$",
    re.IGNORECASE,
)
"""A line that holds only a date, or what looks like one, that is no entry header of its file: a
day without its year (``Jan 7``, ``**7/1**``, ``Jan 7, 26``), or a date line (:data:`DATE_LINE_RE`) in
a file whose headers have another shape (a T-minus log, a progress log). A day and month in
figures alone (``7/1``) counts only outside a list or quote, where ``- 3/4`` is a score."""

DAY_NUMBER_RE = re.compile(r"\bday[ \t]+(?P<n>\d{1,5})\b", re.IGNORECASE)
"""The count-up counter of a progress log, ``Day 25 of ML Systems``."""


@dataclass(frozen=True)
class Header:
    """A header line found in a file: its 0-based index and the shape's match."""

    index: int
    match: re.Match


@dataclass(frozen=True)
class DateContext:
    """What reading a file's header dates needs besides the headers: the log's month/day
    ``order`` (T-minus), the ``year`` of the oldest entry (plugin option), ``today`` (the build
    date), the file's front matter and its path (for messages)."""

    order: Literal["mdy", "dmy"]
    year: int | None
    today: dt.date
    front_matter: dict
    path: str


class HeaderShape:
    """One shape an entry header can take, with what it does: :meth:`find` its header lines,
    :meth:`read_dates` of them, :meth:`fill` what else a header gives an entry, and
    :meth:`check` the file's entries for the shape's own habits. The parser calls only these,
    so a new shape is one subclass and a row of :data:`SHAPES`."""

    name: ShapeName
    pattern: re.Pattern
    example: str
    yields: str
    in_fences = False
    """Whether a header line inside a fenced code block still starts an entry."""
    numeric = False
    """Whether its headers may write a date as ``f1/f2/year``, read in the log's month/day order
    (:func:`infer_date_order`, over the headers of every file of such a shape)."""

    def find(self, lines: list[str], start: int) -> list[Header]:
        """The header lines of ``lines[start:]`` (outside fenced code blocks unless :attr:`in_fences`)."""
        found, fence = [], None
        for i in range(start, len(lines)):
            if not self.in_fences:
                fence, marker = track_fence(lines[i], fence)
                if marker or fence is not None:
                    continue
            if m := self.pattern.match(lines[i]):
                found.append(Header(i, m))
        return found

    def read_dates(self, headers: list[Header], ctx: DateContext) -> tuple[list[dt.date | None], list[Diagnostic]]:
        """The date of each header (``None`` where it does not exist: that line stays text) and
        the diagnostics of reading them."""
        dates, diagnostics = [], []
        for h in headers:
            try:
                dates.append(self.date(h.match, ctx))
            except ValueError as exc:
                dates.append(None)
                diagnostics.append(Diagnostic(ctx.path, h.index + 1, f"invalid date {self.describe(h.match, ctx)}: "
                                              f"{exc}; the line is kept as text", DiagnosticCode.INVALID_DATE))
        return dates, diagnostics

    def date(self, m: re.Match, ctx: DateContext) -> dt.date:
        """The date of one header. Raises ValueError when there is no such date."""
        raise NotImplementedError

    def describe(self, m: re.Match, ctx: DateContext) -> str:
        """The date as written, for a message."""
        return m["date"]

    def fill(self, entry: Entry, m: re.Match, body_lines: list[str]) -> None:
        """Set what the header gives besides the date (countdown, title, day number)."""

    def check(self, path: str, entries: list[Entry]) -> list[Diagnostic]:
        """Diagnostics about the file's entries that only this shape has."""
        return []

    def next_header(self, header: str, date: dt.date, order: Literal["mdy", "dmy"] = "mdy") -> str:
        """The header of a new entry for ``date``, written as ``header`` (the file's last) is:
        the same line with its date's parts replaced, each spelt as there (a numeric date's
        month and day in the log's ``order``)."""
        raise NotImplementedError


class TMinus(HeaderShape):
    name, pattern = "t-minus", HEADER_RE
    example, yields = "12/09/25 (T - 154)", "date and countdown (days to the target date)"
    in_fences = True  # a T-minus header always starts an entry: an entry never runs past the next one
    numeric = True

    def date(self, m, ctx):
        """The header's date; ValueError also when its countdown gives a target date outside
        the years 1 to 9999 (``12/31/9999 (T - 5)``), which no date can hold."""
        date = header_date(m, ctx.order)
        countdown = header_countdown(m)
        try:
            date + dt.timedelta(days=countdown)
        except OverflowError:
            raise ValueError(f"its countdown {m['t']}{m['csep']}{m['n']} gives a target date outside the years "
                             "1 to 9999") from None
        return date

    def describe(self, m, ctx):
        return describe_date(m, ctx.order)

    def fill(self, entry, m, body_lines):
        entry.countdown = header_countdown(m)
        entry.title = header_title(m)


class Progress(HeaderShape):
    name, pattern = "progress", PROGRESS_RE
    example = "## November 24 - Day 25 of ML Systems"
    yields = "month and day (the year from `year:` or the build date), title, day number"

    def read_dates(self, headers, ctx):
        diagnostics = []
        month_days = [progress_month_day(h.match) for h in headers]
        given = ctx.front_matter.get("year", ctx.year)
        if given is not None and not (isinstance(given, int) and not isinstance(given, bool)
                                      and dt.MINYEAR < given < dt.MAXYEAR):
            diagnostics.append(Diagnostic(ctx.path, 1, f"front matter year {given!r} is not a year",
                                          DiagnosticCode.FRONT_MATTER))
            given = None
        years, chosen = assign_years(month_days, year=given, today=ctx.today)
        named = [(k, h.match["weekday"]) for k, h in enumerate(headers) if h.match["weekday"] and not h.match["year"]]
        by_weekday = _year_by_weekdays(month_days, named, chosen) if chosen is not None and given is None else None
        if by_weekday is not None:
            years, chosen = by_weekday
            k, day = named[0]
            diagnostics.append(Diagnostic(
                ctx.path, headers[0].index + 1,
                f"the headings have no year; read from {chosen} on, the latest year whose weekdays match the "
                f"headings' (line {headers[k].index + 1}: {day}, {dt.date(years[k], *month_days[k][:2]):%d %B}) and "
                f"that puts no entry after {ctx.today.isoformat()} (set `year:` to choose another)",
                DiagnosticCode.WEEKDAY_YEAR))
        elif chosen is not None and given is None:
            diagnostics.append(Diagnostic(
                ctx.path, headers[0].index + 1,
                f"the headings have no year; read from {chosen} on, the latest year that puts no entry after "
                f"{ctx.today.isoformat()} (set `year:` in the front matter or the plugin's `year` option)",
                DiagnosticCode.YEAR))
        dates = []
        for h, (month, day, _), y in zip(headers, month_days, years):
            try:
                dates.append(dt.date(y, month, day))
            except ValueError as exc:
                dates.append(None)
                diagnostics.append(Diagnostic(ctx.path, h.index + 1, f"invalid date {h.match['month'] or h.match['month_after']} {day} in {y}: "
                                              f"{exc}; the line is kept as text", DiagnosticCode.INVALID_DATE))
                continue
            diagnostics += _weekday(ctx.path, h, dates[-1], "heading", guessed=given is None and not h.match["year"])
        return dates, diagnostics

    def fill(self, entry, m, body_lines):
        entry.title = header_title(m)
        entry.day_number = day_number(entry.title, next((line for line in body_lines if line.strip()), ""))

    def check(self, path, entries):
        """A count-up log's habits: the same ``Day N`` twice, and entries without a counter among
        entries that have one (notes, not mistakes)."""
        counted = [e for e in entries if e.day_number is not None]
        if not counted:
            return []
        out, seen = [], {}
        for e in entries:
            if e.day_number is None:
                out.append(Diagnostic(path, e.line, f"entry {e.date} has no \"Day N\" counter, unlike "
                                      f"{len(counted)} other entries of this file", DiagnosticCode.DAY_NUMBER))
            elif e.day_number in seen:
                first = seen[e.day_number]
                out.append(Diagnostic(path, e.line, f"Day {e.day_number} again: {first.date} at line {first.line} "
                                      "says it too", DiagnosticCode.DAY_NUMBER))
            else:
                seen[e.day_number] = e
        return out


    def next_header(self, header, date, order="mdy"):
        """``## November 25 - Day 26 of ML Systems`` after ``## November 24 - Day 25 of ML Systems``:
        the weekday, month and day (in their order, spelling and ordinal suffix) and the year,
        where the last heading has them; of its title, only a ``Day N`` counter (one more) and
        what names it (`` of ML Systems``), as the rest belongs to its own day."""
        m = self.pattern.match(header)
        month, day = ("month", "day") if m["month"] else ("month_after", "day_first")
        parts = {"weekday": _spelt(m["weekday"], calendar.day_name[date.weekday()]) if m["weekday"] else None,
                 month: _spelt(m[month], calendar.month_name[date.month]),
                 day: _number(m[day], date.day), "year": str(date.year) if m["year"] else None}
        counter = re.match(r"(?P<lead>[^\n]*?\bday[ \t]+)(?P<n>\d{1,5})(?P<of>[ \t]+of[ \t]+[^:;|\u2013\u2014]*)?",
                           m["rest"] or "", re.IGNORECASE)
        parts["rest"] = f"{counter['lead']}{int(counter['n']) + 1}{(counter['of'] or '').rstrip()}" if counter else ""
        return _replace(header, m, parts, day, date.day)


def _year_by_weekdays(month_days: list[tuple[int, int, int | None]], named: list[tuple[int, str]],
                      latest: int) -> tuple[list[int], int] | None:
    """The years of a progress log's headings (as :func:`assign_years` gives them) from the latest
    year of the oldest entry, at most ``latest``, for which every weekday the headings name
    (``named``: heading index and weekday, ``Monday``) is its date's; ``None`` when the headings
    name none, or no year in 28 (a whole cycle of the Gregorian calendar's weekdays, leap days
    aside) fits them all."""
    if not named:
        return None
    for base in range(latest, max(dt.MINYEAR, latest - 28), -1):
        years, _ = assign_years(month_days, year=base, today=dt.date.max)
        try:
            if all(calendar.day_name[dt.date(years[k], *month_days[k][:2]).weekday()].lower().startswith(day[:3].lower())
                   for k, day in named):
                return years, base
        except ValueError:  # 29 February in a common year: not this one
            continue
    return None


def _weekday(path: str, h: Header, date: dt.date, noun: str, *, guessed: bool = False) -> list[Diagnostic]:
    """A ``weekday`` warning when the weekday ``h`` (a ``noun``: heading, date line) names (its
    ``weekday`` group) is not ``date``'s; ``guessed``: the year was not written, and the message says so."""
    named = h.match["weekday"]
    if not named or calendar.day_name[date.weekday()].lower().startswith(named[:3].lower()):
        return []
    return [Diagnostic(path, h.index + 1, f"the {noun} says {named}, but {date:%d %B %Y} is a {date:%A}"
                       f"{' (the year is a guess: set `year:`)' if guessed else ''}; read as {date}",
                       DiagnosticCode.WEEKDAY)]


def _replace(line: str, m: re.Match, parts: dict[str, str | None], day_group: str, day: int) -> str:
    """``line`` (the text ``m`` matched) with each group of ``parts`` that matched replaced by its
    value, right to left; an ordinal suffix after ``day_group`` (``24th``) becomes ``day``'s."""
    for group in sorted((g for g, v in parts.items() if v is not None), key=m.start, reverse=True):
        start, end = m.span(group)
        if start < 0:
            continue
        new = parts[group]
        if group == day_group and (suffix := re.match(r"st|nd|rd|th", line[end:end + 2], re.IGNORECASE)):
            new, end = new + _ordinal(day, suffix[0]), end + 2
        line = line[:start] + new + line[end:]
    return line


def _spelt(written: str, name: str) -> str:
    """``name`` (a month's or weekday's English name) spelt as ``written`` spells one: whole, or
    its three-letter abbreviation after one (``Nov``; ``Sept`` for September after ``Sept``), in
    ``written``'s case."""
    if len(written) > 4:
        cut = name
    else:
        cut = "Sept" if name == "September" and written.lower() == "sept" else name[:3]
    return cut.upper() if written.isupper() and len(written) > 1 else cut.lower() if written.islower() else cut


def _number(written: str, value: int) -> str:
    """``value`` written as ``written`` is: zero-padded to two digits after one that is (``05``
    after ``09``), else as it is."""
    return f"{value:02d}" if len(written) == 2 and written.startswith("0") else str(value)


def _ordinal(day: int, written: str) -> str:
    """The English ordinal suffix of ``day`` (``st``, ``nd``, ``rd``, ``th``), in ``written``'s case."""
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return suffix.upper() if written.isupper() else suffix


class DatedNote(HeaderShape):
    name, pattern = "dated-note", DATE_LINE_RE
    numeric = True
    example = "2025-01-20"
    yields = "date (with its year: `2025-01-20`, `1/20/2025`, `January 20, 2025`), alone on its line"

    def date(self, m, ctx):
        if m["spelt_year"]:
            month, day, _ = progress_month_day(m)
            return dt.date(int(m["spelt_year"]), month, day)
        return header_date(m, ctx.order)

    def describe(self, m, ctx):
        return describe_date(m, ctx.order)

    def read_dates(self, headers, ctx):
        dates, diagnostics = super().read_dates(headers, ctx)
        for h, date in zip(headers, dates):
            if date is not None:
                diagnostics += _weekday(ctx.path, h, date, "date line")
        return dates, diagnostics

    def next_header(self, header, date, order="mdy"):
        """The next date line, written as ``header`` (the file's last) is: ``2025-01-21`` after
        ``2025-01-20``, ``## 2025.1.21`` after ``## 2025.1.20``, ``1/21/2025`` after ``1/20/2025``
        (in the log's month/day ``order``), ``**Tuesday, January 21, 2025**`` after
        ``**Monday, January 20, 2025**``. Numeric months and days are zero-padded when the last
        header's are (both of two digits, or one with a leading zero)."""
        m = self.pattern.match(header)
        parts: dict[str, str | None] = {
            "weekday": _spelt(m["weekday"], calendar.day_name[date.weekday()]) if m["weekday"] else None}
        if m["spelt_year"]:
            month, day = ("month", "day") if m["month"] else ("month_after", "day_first")
            parts |= {month: _spelt(m[month], calendar.month_name[date.month]), day: _number(m[day], date.day),
                      "spelt_year": str(date.year)}
            return _replace(header, m, parts, day, date.day)
        if m["iy"]:
            fields = {"iy": None, "im": date.month, "id": date.day}
            parts["iy"] = str(date.year)
        else:
            month, day = ("f1", "f2") if order == "mdy" else ("f2", "f1")
            fields = {month: date.month, day: date.day}
            parts["year"] = str(date.year) if len(m["year"]) == 4 else f"{date.year % 100:02d}"
        written = [m[g] for g in fields]
        pad = any(w[0] == "0" for w in written) or all(len(w) == 2 for w in written)
        parts |= {g: (f"{v:02d}" if pad else str(v)) for g, v in fields.items() if v is not None}
        return _replace(header, m, parts, "", date.day)


SHAPES: tuple[HeaderShape, ...] = (TMinus(), Progress(), DatedNote())
"""The header-line shapes the parser understands, in the order a file is tried: the first shape
with a header line in a file is that file's. A file with none is one entry (a post, or a file
named by its date; :data:`WHOLE_FILE`)."""
WHOLE_FILE = (("post", "---\ntitle: ...\ndate: 2025-01-05\n---",
               "one entry per file: title, date, tags, categories, draft from the front matter"),
              ("file", "worklog/2025-12-09.md", "one entry per file: the date from the file name or `date:`"))
"""The whole-file shapes: ``(name, example, what it gives)``."""


def shape_of(lines: list[str], start: int) -> tuple[HeaderShape | None, list[Header]]:
    """The first shape of :data:`SHAPES` with a header line in ``lines[start:]``, and its header
    lines; ``(None, [])`` when none has one (the file is one entry, or none). A file whose progress
    headings are each a date with its year and nothing more (``## Jan 6, 2026``) is dated notes
    when it has date lines besides them (``2026-01-09``)."""
    for shape in SHAPES:
        if found := shape.find(lines, start):
            if shape is SHAPES[1] and len(dated := SHAPES[2].find(lines, start)) > len(found) \
                    and {h.index for h in found} <= {h.index for h in dated}:
                return SHAPES[2], dated
            return shape, found
    return None, []


def shapes_help() -> str:
    """One line per shape, for the message of a file in which nothing is recognised."""
    return "; ".join([f"{s.name}: `{s.example}`" for s in SHAPES]
                     + ["post: `front matter with title: and date:`"])


def progress_month_day(m: re.Match) -> tuple[int, int, int | None]:
    """``(month, day, year or None)`` of a :data:`PROGRESS_RE` match (the date may not exist)."""
    month, day = (m["month"], m["day"]) if m["month"] else (m["month_after"], m["day_first"])
    return _MONTH_NAME.month(month), int(day), int(m["year"]) if m["year"] else None


def header_title(m: re.Match) -> str:
    """A header's text after its date (a progress heading) or its countdown (a T-minus header),
    without a leading dash, colon or bar: ``Day 9 of GPU Programming``; ``""`` when none."""
    return (m["rest"] or "").strip().lstrip("-\u2010\u2011\u2012\u2013\u2014\u2015:|,").strip()


def day_number(*texts: str) -> int | None:
    """The N of the first ``Day N`` in ``texts`` (the heading's title, then the body's first
    line), or ``None``."""
    for text in texts:
        if text and (m := DAY_NUMBER_RE.search(text)):
            return int(m["n"])
    return None


def assign_years(month_days: list[tuple[int, int, int | None]], *, year: int | None,
                 today: dt.date) -> tuple[list[int], int | None]:
    """Years for a file's ``(month, day, year or None)`` headings, in file order.

    A heading that names its year keeps it. The others are read as a run: two headings next
    to each other are taken to be less than half a year apart, so a step from December to
    January (a log written oldest first) or from January to December (newest first) crosses
    New Year. ``year`` is the year of the oldest entry; without it, the latest year that puts
    no entry after ``today``. Returns the years and the year chosen for the oldest entry
    (``None`` when every heading names its own).
    """
    offsets, offset = [], 0
    for k, (month, day, _) in enumerate(month_days):
        if k:
            before = month_days[k - 1]
            step = (month * 31 + day) - (before[0] * 31 + before[1])
            if step > 186:  # from early in a year to late: back across New Year
                offset -= 1
            elif step < -186:  # from late in a year to early: on across New Year
                offset += 1
        offsets.append(offset)
    if all(y is not None for _, _, y in month_days):
        return [y for _, _, y in month_days], None
    low = min(offsets)
    if year is None:
        year = today.year - (max(offsets) - low)
        newest = max(offsets)

        def after_today(base: int) -> bool:
            return any(_safe_date(base + o - low, m, d) > today for (m, d, _), o in zip(month_days, offsets)
                       if o == newest)

        while after_today(year):
            year -= 1
    return [y if y is not None else year + o - low for (_, _, y), o in zip(month_days, offsets)], year


def _safe_date(year: int, month: int, day: int) -> dt.date:
    """The date, or the 28th of its month for a day past the month's end (29 Feb in a common year)."""
    try:
        return dt.date(year, month, day)
    except ValueError:
        return dt.date(year, month, 28)
