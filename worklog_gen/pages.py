"""The worklog's pages as markdown text, from parsed entries.

Plain functions: the MkDocs plugin (:mod:`worklog_gen.plugin`) only places their
output in the site. Page layout under ``url_prefix`` (``worklog`` by default):

* ``index.md``: the worklog home (preamble, countdown, streaks, heatmap, timeline);
* ``YYYY-MM-DD.md``: one page per entry (:func:`day_page`);
* ``reading-list.md`` and ``tasks.md``.

Pages link to each other with relative ``.md`` links, so MkDocs checks them and
writes the right URLs whatever ``use_directory_urls`` is. Only the heatmap is
raw HTML, so its links are final URLs (see :func:`heatmap_html`).
"""

from __future__ import annotations

import bisect
import datetime as dt
import html
import posixpath
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from markdown_it import MarkdownIt

from worklog_gen.topics import prose
from worklog_gen.worklog import Entry, Link, Task, TaskStatus, Worklog

_MD = MarkdownIt("commonmark").disable("inline")  # block structure only: half the parse time

SUMMARY_CHARS = 100
"""Longest one-line summary on the timeline and in the feed, in characters."""


# --- names and URLs ------------------------------------------------------------------


def prefix_of(url_prefix: str) -> str:
    """``url_prefix`` without surrounding slashes (``"/worklog/"`` -> ``"worklog"``)."""
    return url_prefix.strip("/")


def entry_src(entry: Entry, url_prefix: str) -> str:
    """Source path of the entry's page in the docs: ``worklog/2025-12-09.md``."""
    return f"{prefix_of(url_prefix)}/{entry.slug}.md"


def entry_url(entry: Entry, cfg) -> str:
    """URL of the entry's page relative to the site root, with ``use_directory_urls``
    (MkDocs' default): ``worklog/2025-12-09/``. ``cfg`` is the plugin config (its
    ``url_prefix`` is used)."""
    return f"{prefix_of(cfg.url_prefix)}/{entry.slug}/"


def entry_title(entry: Entry) -> str:
    """Page title of an entry: unambiguous date and countdown, ``9 Dec 2025 · T-154``
    (``9 Dec 2025`` without a countdown)."""
    day = f"{entry.date.day} {entry.date:%b %Y}"
    return day if entry.countdown is None else f"{day} · T-{entry.countdown}"


def nav_title(entry: Entry) -> str:
    """Short title under its month in the navigation: ``Tue 9 · T-154``."""
    day = f"{entry.date:%a} {entry.date.day}"
    return day if entry.countdown is None else f"{day} · T-{entry.countdown}"


def month_title(date: dt.date) -> str:
    """``December 2025``."""
    return f"{date:%B %Y}"


def relative(target_src: str, from_src: str) -> str:
    """Relative link from one docs source file to another (``../topics/x.md``)."""
    return posixpath.relpath(target_src, posixpath.dirname(from_src) or ".")


# --- text helpers -----------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}])")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s")


def md_escape(text: str, *, table: bool = False) -> str:
    """``text`` as literal markdown inside a line: inline markup escaped with
    backslashes, ``<`` and ``&`` as entities, ``|`` escaped in table cells and
    newlines folded to spaces."""
    text = " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return text.replace("|", r"\|") if table else text


_LIST_MARKER = re.compile(r"^([ \t]*)(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$)")


def commonmark_lists(markdown: str) -> str:
    """``markdown`` with its lists meaning to Python-Markdown (MkDocs) what they mean
    in CommonMark, the dialect the log is parsed in and was written for.

    Python-Markdown differs in two ways that flatten the log's notes: a list cannot
    interrupt a paragraph (``notes;`` then ``- item`` on the next line), and a list
    item's content must be indented 4 columns, where CommonMark takes the marker's
    width (``- `` is 2). So a blank line is added before a list that follows a
    paragraph line, and each item's indented lines are shifted so that its content
    starts 4 columns after its marker's indentation. Only whitespace changes; lists
    inside block quotes are left alone. Structure comes from markdown-it-py.
    """
    lines = markdown.split("\n")
    blank_before: list[int] = []
    quote_depth = 0
    for token in _MD.parse(markdown):
        if token.type == "blockquote_open":
            quote_depth += 1
        elif token.type == "blockquote_close":
            quote_depth -= 1
        if quote_depth or token.map is None:
            continue
        start, end = token.map
        if token.type in ("bullet_list_open", "ordered_list_open") and token.level == 0:
            if start > 0 and lines[start - 1].strip():
                blank_before.append(start)
        elif token.type == "list_item_open":
            marker = _LIST_MARKER.match(lines[start])
            if marker is None:
                continue
            indent = len(marker[1].expandtabs(4))
            content = len(marker[0].expandtabs(4))
            shift = indent + 4 - content
            if shift == 0:
                continue
            for i in range(start + 1, end):
                line = lines[i].expandtabs(4)
                if len(line) - len(line.lstrip(" ")) >= content and line.strip():
                    lines[i] = " " * shift + line if shift > 0 else line[-shift:]
    for i in reversed(blank_before):
        lines.insert(i, "")
    return "\n".join(lines)


def summary(entry: Entry, limit: int = SUMMARY_CHARS) -> str:
    """One honest line about the entry: the first sentence of its first block of
    prose (a first link is its title), cut at a word boundary to at most ``limit``
    characters with ``…``. ``"(no text)"`` for an empty entry. Plain text."""
    text = prose(entry.body).split("\n", 1)[0]
    if not text:
        return "(no text)"
    sentence = _SENTENCE_END.split(text, 1)[0].rstrip(" ;")
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: limit - 1]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


# --- old-site links -------------------------------------------------------------------


def is_root_relative(url: str) -> bool:
    """True for ``/blog/x/`` (a path on the site the log was written for), false for
    ``//host/x``, ``https://...`` and relative links."""
    return url.startswith("/") and not url.startswith("//")


@dataclass
class OldSiteLinks:
    """Root-relative links (``/blog/2025/mlp-derivatives/``) written for the site the
    log came from.

    With ``base_url`` they are rewritten to ``base_url + path``. Without it they are
    *kept*: emitted as inline HTML ``<a href="/blog/...">``, which MkDocs passes
    through without validating, and collected in :attr:`kept` so that the plugin
    lists them all in one message. Why not leave them as markdown links: MkDocs
    would then report each one (``validation.links.absolute_links``), as a WARNING
    under the recommended validation, so ``--strict`` would fail on text the author
    wrote correctly for its first home, and the report would say nothing about the
    fix. Why INFO and not WARNING for the one message: nothing in the log needs
    fixing; setting ``old_site_url`` is the remedy, and the message says so.

    Links inside link reference definitions (``[x]: /path``) are rewritten with
    ``base_url`` but not kept as HTML; MkDocs validates those as usual.
    """

    base_url: str | None = None
    kept: list[tuple[str, int, str]] = field(default_factory=list)
    """``(path, line, url)`` of each link kept as-is."""

    def href(self, url: str) -> str:
        """Where an old-site URL points on the generated site."""
        if self.base_url and is_root_relative(url):
            return self.base_url.rstrip("/") + url
        return url

    def rewrite(self, markdown: str, links: Iterable[Link], path: str) -> str:
        """``markdown`` with the inline links and images to the root-relative URLs
        among ``links`` (as found by the parser) rewritten or kept, see the class."""
        old = [link for link in links if is_root_relative(link.url)]
        if not old:
            return markdown
        urls = "|".join(re.escape(u) for u in sorted({link.url for link in old}, key=len, reverse=True))
        inline = re.compile(
            r"(?P<bang>!?)\[(?P<text>(?:\\.|[^\[\]\\]|\[(?:\\.|[^\[\]\\])*\])*)\]"
            rf"\(\s*<?(?P<url>{urls})>?(?P<title>\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
        )
        if self.base_url:
            markdown = inline.sub(
                lambda m: f"{m['bang']}[{m['text']}]({self.href(m['url'])}{m['title'] or ''})", markdown
            )
            reference = re.compile(rf"^( {{0,3}}\[[^\]]+\]:[ \t]*<?)({urls})(?=>?(?:\s|$))", re.MULTILINE)
            return reference.sub(lambda m: m[1] + self.href(m[2]), markdown)
        self.kept.extend((path, link.line, link.url) for link in old)
        return inline.sub(lambda m: self._html(m["bang"], m["text"], m["url"]), markdown)

    def link(self, title_markdown: str, url: str) -> str:
        """A link for generated lists (reading list, a day's links): markdown, or the
        same inline HTML as :meth:`rewrite` for a kept old-site link."""
        if not is_root_relative(url) or self.base_url:
            return f"[{title_markdown}](<{self.href(url)}>)"
        return self._html("", title_markdown, url)

    @staticmethod
    def _html(bang: str, text: str, url: str) -> str:
        href = html.escape(url)
        if bang:
            return f'<img src="{href}" alt="{html.escape(text)}">'
        return f'<a href="{href}">{text}</a>'

    def message(self) -> str | None:
        """The one message listing kept links, or ``None`` when none were kept."""
        unique = sorted(set(self.kept))
        if not unique:
            return None
        lines = "\n".join(f"  {path}:{line}: {url}" for path, line, url in unique)
        return (
            f"Warning: kept {len(unique)} root-relative link(s) written for the log's old site; "
            "they resolve only if this site is served from that origin. "
            f"Set the plugin's 'old_site_url' to rewrite them:\n{lines}"
        )


# --- statistics --------------------------------------------------------------------------


@dataclass(frozen=True)
class Streaks:
    """Runs of consecutive calendar days with an entry."""

    current: int
    """Length of the run that ends at the latest entry (days)."""
    longest: int
    """Length of the longest run (days); the earliest one on ties."""
    longest_start: dt.date | None = None
    longest_end: dt.date | None = None


def streaks(dates: Iterable[dt.date]) -> Streaks:
    """Current and longest streak of ``dates`` (duplicates count once)."""
    days = sorted(set(dates))
    if not days:
        return Streaks(0, 0)
    run, start = 1, days[0]
    best = (1, days[0], days[0])
    for prev, day in zip(days, days[1:]):
        if day - prev == dt.timedelta(days=1):
            run += 1
        else:
            run, start = 1, day
        if run > best[0]:
            best = (run, start, day)
    return Streaks(current=run, longest=best[0], longest_start=best[1], longest_end=best[2])


def words_by_date(entries: Iterable[Entry]) -> dict[dt.date, int]:
    """Words written per calendar day (entries of one day summed)."""
    out: dict[dt.date, int] = defaultdict(int)
    for entry in entries:
        out[entry.date] += entry.words
    return dict(out)


def timeline(entries: Iterable[Entry]) -> list[tuple[str, list[Entry]]]:
    """Entries newest first, grouped by month: ``[("December 2025", [...]), ...]``."""
    groups: dict[tuple[int, int], list[Entry]] = defaultdict(list)
    for entry in sorted(entries, key=lambda e: e.date, reverse=True):
        groups[(entry.date.year, entry.date.month)].append(entry)
    return [(month_title(dt.date(y, m, 1)), items) for (y, m), items in groups.items()]


# --- heatmap ----------------------------------------------------------------------------

CELL, STEP = 11, 14  # px: square side and column pitch, as GitHub's contribution graph
LEFT, TOP = 30, 18  # px: room for weekday and month labels
LEVEL_FILLS = (
    "var(--md-default-fg-color--lightest, #ebedf0)",
    "#9be9a8",
    "#40c463",
    "#30a14e",
    "#216e39",
)  # GitHub's contribution-graph greens; level 0 follows the Material light/dark scheme


@dataclass(frozen=True)
class HeatmapCell:
    """One day of the heatmap: column ``week`` (0 = the week of the first entry,
    weeks start on Monday), row ``weekday`` (0 = Monday), words written and colour
    level (0 = none, 1-4 = quartiles of the words of days with words)."""

    date: dt.date
    week: int
    weekday: int
    words: int | None
    level: int


def heatmap_cells(words: dict[dt.date, int]) -> list[HeatmapCell]:
    """A cell for every day from the first to the last date in ``words`` (days
    without an entry have ``words=None``). Levels split the days with words at the
    quartiles of their word counts (one level per distinct count when few)."""
    if not words:
        return []
    first, last = min(words), max(words)
    monday = first - dt.timedelta(days=first.weekday())
    counts = sorted(w for w in words.values() if w > 0)
    if len(counts) >= 4:
        thresholds = statistics.quantiles(counts, n=4, method="inclusive")
    else:
        thresholds = counts[:-1]
    cells = []
    for offset in range((last - first).days + 1):
        day = first + dt.timedelta(days=offset)
        count = words.get(day)
        level = 0 if not count else min(4, 1 + bisect.bisect_left(thresholds, count))
        cells.append(HeatmapCell(day, (day - monday).days // 7, day.weekday(), count, level))
    return cells


def heatmap_html(cells: Sequence[HeatmapCell], href: Callable[[dt.date], str | None]) -> str:
    """The heatmap as an inline SVG in a horizontally scrollable ``<div>`` (so that a
    year of weeks does not widen a 390 px phone screen), with month and weekday
    labels and a legend. ``href(date)`` is the final URL of the day's page (or
    ``None``); it is written as-is, since MkDocs does not rewrite raw HTML.
    One line per element and no blank lines, so Python-Markdown passes it through.
    """
    if not cells:
        return ""
    weeks = cells[-1].week + 1
    legend_end = LEFT + 28 + 5 * STEP + 30  # "Less", five swatches, "More"
    width = max(LEFT + weeks * STEP + 16, legend_end)  # 16: room for a last month label
    height = TOP + 7 * STEP + 26
    out = [
        '<div class="worklog-heatmap" style="overflow-x:auto;max-width:100%">',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Words written per day, {cells[0].date} to {cells[-1].date}" '
        'style="font-size:9px;fill:currentColor">',
    ]
    for row, name in ((0, "Mon"), (2, "Wed"), (4, "Fri")):
        out.append(f'<text x="0" y="{TOP + row * STEP + CELL - 2}">{name}</text>')
    months = [(c.week, f"{c.date:%b}") for c in cells if c.date.day == 1 or c is cells[0]]
    for (week, name), after in zip(months, [*months[1:], (weeks + 3, "")]):
        if after[0] - week >= 3:  # a label needs three columns; a month's first days win
            out.append(f'<text x="{LEFT + week * STEP}" y="{TOP - 6}">{name}</text>')
    for cell in cells:
        words = "no entry" if cell.words is None else f"{cell.words} words"
        rect = (
            f'<rect x="{LEFT + cell.week * STEP}" y="{TOP + cell.weekday * STEP}" '
            f'width="{CELL}" height="{CELL}" rx="2" style="fill:{LEVEL_FILLS[cell.level]}">'
            f"<title>{cell.date.isoformat()}: {words}</title></rect>"
        )
        url = href(cell.date) if cell.words is not None else None
        out.append(f'<a href="{html.escape(url)}">{rect}</a>' if url else rect)
    legend_y = TOP + 7 * STEP + 8
    out.append(f'<text x="{LEFT}" y="{legend_y + CELL - 2}">Less</text>')
    for level, fill in enumerate(LEVEL_FILLS):
        x = LEFT + 28 + level * STEP
        out.append(f'<rect x="{x}" y="{legend_y}" width="{CELL}" height="{CELL}" rx="2" style="fill:{fill}"/>')
    out.append(f'<text x="{LEFT + 28 + 5 * STEP + 2}" y="{legend_y + CELL - 2}">More</text>')
    out += ["</svg>", "</div>"]
    return "\n".join(out)


# --- reading list and tasks -------------------------------------------------------------


@dataclass
class ReadingItem:
    """One distinct URL of the log, with the title it was first given."""

    url: str
    title: str
    domain: str
    entries: list[Entry] = field(default_factory=list)
    """Entries it appears on, in date order, each once."""
    source: tuple[str, int] | None = None
    """``(path, line)`` of its first occurrence."""


def reading_list(entries: Iterable[Entry]) -> list[ReadingItem]:
    """Every link of the log, deduplicated by exact URL, in order of first appearance."""
    items: dict[str, ReadingItem] = {}
    for entry in sorted(entries, key=lambda e: e.date):
        for link in entry.links:
            item = items.get(link.url)
            if item is None:
                title = link.title.strip() or link.url
                item = items[link.url] = ReadingItem(link.url, title, link.domain, source=(entry.path, link.line))
            if not item.entries or item.entries[-1] is not entry:
                item.entries.append(entry)
    return list(items.values())


_TASK_MARKERS = re.compile(
    r"(?:[\s\-–—:;,.]*(?:done|next|(?:->|→)\s*(?:tmr|tomorrow)|(?:->|→)))+[\s;:,.!]*$", re.IGNORECASE
)


def normalise_task(text: str) -> str:
    """The text a carried task and its later done task share: status markers at the
    end (``- Done;``, ``-> Tmr``, ``Next``) removed, case folded, everything but
    letters and digits turned to single spaces.
    ``"Finish Einsum today; - Done"`` -> ``"finish einsum today"``."""
    text = _TASK_MARKERS.sub("", text.strip())
    return " ".join(re.sub(r"[^\w]+|_", " ", text.casefold()).split())


@dataclass
class TaskReport:
    """The tasks view's content. Rule: a carried task counts as done later when a
    task marked done on a later entry has the same :func:`normalise_task` text."""

    done: list[tuple[Entry, Task]] = field(default_factory=list)
    """Tasks marked done, in date order."""
    carried_then_done: list[tuple[Entry, Task, Entry]] = field(default_factory=list)
    """``(entry carried on, task, entry done on)``."""
    outstanding: list[tuple[list[Entry], Task]] = field(default_factory=list)
    """Carried and never marked done later: the entries it was carried on, and
    its last wording."""


def task_report(entries: Iterable[Entry]) -> TaskReport:
    """Sort the log's tasks into done, carried-then-done and outstanding (see
    :class:`TaskReport` for the matching rule)."""
    ordered = sorted(entries, key=lambda e: e.date)
    report = TaskReport()
    done_on: dict[str, list[Entry]] = defaultdict(list)
    for entry in ordered:
        for task in entry.tasks:
            if task.status == TaskStatus.DONE:
                report.done.append((entry, task))
                done_on[normalise_task(task.text)].append(entry)
    outstanding: dict[str, tuple[list[Entry], Task]] = {}
    for entry in ordered:
        for task in entry.tasks:
            if task.status != TaskStatus.CARRIED:
                continue
            key = normalise_task(task.text)
            later = next((e for e in done_on.get(key, []) if e.date > entry.date), None)
            if later is not None:
                report.carried_then_done.append((entry, task, later))
            elif key in outstanding:
                outstanding[key][0].append(entry)
                outstanding[key] = (outstanding[key][0], task)
            else:
                outstanding[key] = ([entry], task)
    report.outstanding = list(outstanding.values())
    return report


# --- pages ------------------------------------------------------------------------------

STATUS_MARK = {TaskStatus.DONE: "✓ done", TaskStatus.CARRIED: "→ carried", TaskStatus.OPEN: "○ open"}


@dataclass
class SiteContext:
    """What pages need besides the log."""

    url_prefix: str = "worklog"
    topic_titles: dict[str, str] = field(default_factory=dict)
    """Topic id -> title, for links to ``topics/<id>.md``."""
    entry_topics: dict[str, list[str]] = field(default_factory=dict)
    """Entry slug -> ids of the topics it mentions."""
    old_links: OldSiteLinks = field(default_factory=OldSiteLinks)
    use_directory_urls: bool = True
    build_date: dt.date = field(default_factory=dt.date.today)
    feed: bool = False
    title: str = "Worklog"

    @property
    def prefix(self) -> str:
        return prefix_of(self.url_prefix)

    def src(self, name: str) -> str:
        return f"{self.prefix}/{name}"


def _day_link(entry: Entry, from_src: str, ctx: SiteContext, text: str | None = None) -> str:
    return f"[{md_escape(text or entry_title(entry))}]({relative(entry_src(entry, ctx.url_prefix), from_src)})"


def day_page(log: Worklog, index: int, ctx: SiteContext) -> str:
    """The page of ``log.entries[index]``: title (date and countdown), ISO date,
    the author's header and text verbatim (old-site links handled by
    ``ctx.old_links``), then its topics, links and tasks, and links to the previous
    and next entries."""
    entry = log.entries[index]
    src = entry_src(entry, ctx.url_prefix)
    facts = [f"{entry.date:%A} {entry.date.isoformat()}"]
    if entry.target_date is not None:
        facts.append(f"{_days(entry.countdown)} to the target date {entry.target_date.isoformat()}")
    facts.append(f"{entry.words} words")
    parts = [
        f"# {entry_title(entry)}",
        f"*{' · '.join(facts)}*  \nWritten as “{md_escape(entry.header.strip())}” "
        f"({md_escape(entry.source)})",
    ]
    body = ctx.old_links.rewrite(commonmark_lists(entry.body), entry.links, entry.path).strip("\n")
    parts.append(body if body.strip() else "*No text in this entry.*")
    topic_ids = ctx.entry_topics.get(entry.slug, [])
    extra: list[str] = []
    if topic_ids:
        items = [
            f"- [{md_escape(ctx.topic_titles.get(t, t))}]({relative(f'topics/{t}.md', src)})" for t in topic_ids
        ]
        extra.append("## Topics\n\n" + "\n".join(items))
    if entry.links:
        items = []
        for link in entry.links:
            title = md_escape(link.title.strip() or link.url)
            domain = f" — {md_escape(link.domain)}" if link.domain else ""
            items.append(f"- {ctx.old_links.link(title, link.url)}{domain}")
        extra.append("## Links\n\n" + "\n".join(items))
    if entry.tasks:
        items = [f"- {STATUS_MARK[TaskStatus(t.status)]}: {md_escape(t.text)}" for t in entry.tasks]
        extra.append("## Tasks\n\n" + "\n".join(items))
    if extra:
        parts.append("---")
        parts.extend(extra)
    around = []
    if index > 0:
        around.append("← " + _day_link(log.entries[index - 1], src, ctx))
    around.append(f"[{md_escape(ctx.title)}]({relative(ctx.src('index.md'), src)})")
    if index + 1 < len(log.entries):
        around.append(_day_link(log.entries[index + 1], src, ctx) + " →")
    parts.append("---\n\n" + " · ".join(around))
    return "\n\n".join(parts) + "\n"


def _countdown(log: Worklog, ctx: SiteContext) -> str:
    rows = []
    last = log.entries[-1] if log.entries else None
    if log.target_date is not None:
        rows.append(("Target date", f"{log.target_date:%A} {log.target_date.isoformat()}"))
        left = (log.target_date - ctx.build_date).days
        when = f"as of the build date {ctx.build_date.isoformat()}"
        rows.append(
            (f"Days left, {when}", str(left) if left >= 0 else f"target date passed {_days(-left)} ago")
        )
        if last is not None:
            rows.append(
                (f"Days left, as of the last entry {last.date.isoformat()}", str((log.target_date - last.date).days))
            )
    s = streaks(e.date for e in log.entries)
    days = len({e.date for e in log.entries})
    rows.append(("Days logged", str(days)))
    if log.entries:
        span = (log.entries[-1].date - log.entries[0].date).days + 1
        rows.append(("Days since the first entry", f"{span} ({days / span:.0%} logged)"))
    rows.append(("Current streak (run ending at the latest entry)", _days(s.current)))
    longest = _days(s.longest)
    if s.longest_start:
        longest += f" ({s.longest_start.isoformat()} to {s.longest_end.isoformat()})"
    rows.append(("Longest streak", longest))
    rows.append(("Words written", f"{sum(e.words for e in log.entries):,}"))
    return "\n".join(f"- **{k}:** {v}" for k, v in rows)


def home_page(log: Worklog, ctx: SiteContext) -> str:
    """The worklog home: preamble, countdown table (target date, days left as of the
    build date and as of the last entry, days logged, streaks), the words-per-day
    heatmap and the timeline newest first by month, one summary line per entry."""
    src = ctx.src("index.md")
    title = str(log.front_matter.get("title") or ctx.title)
    parts = [f"# {md_escape(title)}"]
    if log.preamble.strip():
        preamble = commonmark_lists(log.preamble)
        parts.append(ctx.old_links.rewrite(preamble, _preamble_links(log), _first_path(log)).strip("\n"))
    parts.append("## Countdown\n\n" + _countdown(log, ctx))
    see = ["[Reading list](reading-list.md)", "[Tasks](tasks.md)"]
    if ctx.feed:
        see.append(f"[Atom feed]({relative('feed.xml', src)})")  # the feed is at the site root (feed.feed_src)
    parts.append(" · ".join(see))
    if log.entries:
        def href(day: dt.date) -> str:
            return f"{day.isoformat()}/" if ctx.use_directory_urls else f"{day.isoformat()}.html"

        parts.append("## Words per day\n\n" + heatmap_html(heatmap_cells(words_by_date(log.entries)), href))
        months = []
        for month, entries in timeline(log.entries):
            items = "\n".join(
                f"- {_day_link(e, src, ctx)} — {md_escape(summary(e))}" for e in entries
            )
            months.append(f"### {month}\n\n{items}")
        parts.append("## Timeline\n\n" + "\n\n".join(months))
    else:
        parts.append("*No entries yet.*")
    return "\n\n".join(parts) + "\n"


def _preamble_links(log: Worklog) -> list[Link]:
    # The data model keeps links per entry only; the preamble's root-relative links
    # are found here with the same regex the rewrite uses, at line 0 (unknown).
    urls = re.findall(r"\]\(\s*<?(/[^/)\s>][^)\s>]*)", log.preamble)
    return [Link(title="", url=u, line=0) for u in urls]


def _first_path(log: Worklog) -> str:
    return log.paths[0] if log.paths else (log.entries[0].path if log.entries else "<worklog>")


def reading_list_page(log: Worklog, ctx: SiteContext) -> str:
    """Every link of the log once (by URL), with its title, domain and the days it
    appears on, linked to their pages."""
    src = ctx.src("reading-list.md")
    items = reading_list(log.entries)
    parts = [
        "# Reading list",
        f"{len(items)} distinct links from {len(log.entries)} entries, in order of first appearance.",
    ]
    if items:
        rows = []
        for item in items:
            title = ctx.old_links.link(md_escape(item.title, table=True), item.url)
            days = ", ".join(_day_link(e, src, ctx, e.date.isoformat()) for e in item.entries)
            domain = md_escape(item.domain or (ctx.old_links.base_url and "old site") or "relative", table=True)
            rows.append(f"| {title} | {domain} | {days} |")
        parts.append("| Title | Domain | Days |\n|---|---|---|\n" + "\n".join(rows))
    return "\n\n".join(parts) + "\n"


def tasks_page(log: Worklog, ctx: SiteContext) -> str:
    """What was done, what was carried over and done later, and what was carried
    over and never marked done (rule: :class:`TaskReport`)."""
    src = ctx.src("tasks.md")
    report = task_report(log.entries)
    parts = [
        "# Tasks",
        "A task carried over (*-> Tmr*, *Next*) counts as done when a later entry marks "
        "a task with the same text done (compared ignoring case, punctuation and the "
        "status words).",
        f"## Carried over, never marked done ({len(report.outstanding)})",
    ]
    if report.outstanding:
        parts.append("\n".join(
            f"- {md_escape(task.text)} — carried on "
            + ", ".join(_day_link(e, src, ctx, e.date.isoformat()) for e in entries)
            for entries, task in report.outstanding
        ))
    else:
        parts.append("Nothing.")
    parts.append(f"## Carried over, then done ({len(report.carried_then_done)})")
    if report.carried_then_done:
        parts.append("\n".join(
            f"- {md_escape(task.text)} — carried on {_day_link(a, src, ctx, a.date.isoformat())}, "
            f"done on {_day_link(b, src, ctx, b.date.isoformat())}"
            for a, task, b in report.carried_then_done
        ))
    parts.append(f"## Done ({len(report.done)})")
    by_day: dict[str, list[str]] = {}
    for entry, task in report.done:
        by_day.setdefault(_day_link(entry, src, ctx), []).append(f"    - {md_escape(task.text)}")
    days = reversed(by_day.items())  # newest day first, tasks in the order written
    parts.append("\n".join(f"- {day}\n" + "\n".join(items) for day, items in days) or "Nothing yet.")
    return "\n\n".join(parts) + "\n"


def topic_page(title: str, body: str, mentions: Sequence[Entry], ctx: SiteContext, topic_id: str) -> str:
    """A topic page: ``body`` (the rendered notebook; a ``# title`` heading is added
    unless it starts with one), then the days that mention the topic, newest first."""
    src = f"topics/{topic_id}.md"
    body = body.strip("\n")
    parts = [body] if body.lstrip().startswith("# ") else [f"# {md_escape(title)}", body]
    parts.append(f"## Days that mention it ({len(mentions)})")
    if mentions:
        parts.append("\n".join(
            f"- {_day_link(e, src, ctx)} — {md_escape(summary(e))}"
            for e in sorted(mentions, key=lambda e: e.date, reverse=True)
        ))
    else:
        parts.append("None yet.")
    return "\n\n".join(p for p in parts if p) + "\n"


def nav_section(log: Worklog, ctx: SiteContext) -> list:
    """The worklog's items for MkDocs' ``nav``: home (the section's index page),
    reading list, tasks, then one section per month with its days in date order."""
    months: dict[str, list] = {}
    for entry in log.entries:
        months.setdefault(month_title(entry.date), []).append({nav_title(entry): entry_src(entry, ctx.url_prefix)})
    return [
        ctx.src("index.md"),
        {"Reading list": ctx.src("reading-list.md")},
        {"Tasks": ctx.src("tasks.md")},
        *({month: days} for month, days in months.items()),
    ]


def worklog_pages(log: Worklog, ctx: SiteContext) -> dict[str, str]:
    """Every worklog page: docs source path -> markdown."""
    pages = {
        ctx.src("index.md"): home_page(log, ctx),
        ctx.src("reading-list.md"): reading_list_page(log, ctx),
        ctx.src("tasks.md"): tasks_page(log, ctx),
    }
    for i, entry in enumerate(log.entries):
        pages[entry_src(entry, ctx.url_prefix)] = day_page(log, i, ctx)
    return pages


def _days(n: int) -> str:
    """``"1 day"``, ``"3 days"``."""
    return f"{n} day" if n == 1 else f"{n} days"
