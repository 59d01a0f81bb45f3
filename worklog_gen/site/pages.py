"""The worklog's pages as markdown text, from parsed entries.

Plain functions: the MkDocs plugin (:mod:`worklog_gen.plugin`) only places their
output in the site. The worklog home (preamble, countdown, streaks, heatmap, timeline),
a page per entry (:func:`day_page`), the reading list, the tasks and the tags; where each
one lives is :mod:`worklog_gen.site.layout`'s to say.

This module holds the titles, the one-line entry summary, the page markdown and the
navigation; the figures come from :mod:`worklog_gen.site.stats`,
the heatmap from :mod:`worklog_gen.site.heatmap`, old-site links are handled by
:mod:`worklog_gen.site.old_links` and markdown escaping is :mod:`worklog_gen.site.markup`.

Pages link to each other with relative ``.md`` links, so MkDocs checks them and
writes the right URLs whatever ``use_directory_urls`` is. Only the heatmap is
raw HTML, so its links are final URLs (see :func:`worklog_gen.site.heatmap.heatmap_chart`).
"""

from __future__ import annotations

import datetime as dt
import html
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from worklog_gen.site import layout as paths
from worklog_gen.site.heatmap import heatmap_cells, heatmap_chart
from worklog_gen.site.layout import Layout, relative
from worklog_gen.site.markup import commonmark_lists, md_escape, shift_headings
from worklog_gen.log.shortcodes import find_image, is_url, to_markdown
from worklog_gen.site.old_links import OldSiteLinks
from worklog_gen.site.stats import month_title, reading_list, streaks, task_report, timeline, words_by_date
from worklog_gen.site.topics import prose
from worklog_gen.log.model import Entry, Link, TaskStatus, Worklog

# --- titles ----------------------------------------------------------------------------


def _counter(entry: Entry) -> str:
    """`` · T-154`` (countdown), `` · Day 25`` (count-up), or ``""``."""
    if entry.countdown is not None:
        return f" · T-{entry.countdown}"
    return f" · Day {entry.day_number}" if entry.day_number is not None else ""


def entry_title(entry: Entry) -> str:
    """Page title of an entry: a post's title with its date, ``Warp shuffles · 5 Jan 2025``;
    else the unambiguous date and counter, ``9 Dec 2025 · T-154``, ``24 Nov 2025 · Day 25``
    (``9 Dec 2025`` without one)."""
    day = f"{entry.date.day} {entry.date:%b %Y}"
    if entry.kind == "post":
        return f"{entry.title} · {day}"
    return day + _counter(entry)


def nav_title(entry: Entry) -> str:
    """Short title under its month in the navigation: ``Tue 9 · T-154``, ``Mon 24 · Day 25``;
    a post's title, made safe as HTML: themes insert nav titles into pages unescaped (Material's
    ``{{ nav_item.title }}``), and into ``<title>`` through Jinja's ``striptags``, which unescapes
    entities again. So the title is HTML-escaped, and a zero-width space after each ``<`` of a
    ``</`` keeps ``</title>`` or ``</script>`` from ever closing an element."""
    if entry.kind == "post":
        return html.escape(entry.title.replace("</", "<\u200b/"), quote=False)
    return f"{entry.date:%a} {entry.date.day}" + _counter(entry)


# --- summary --------------------------------------------------------------------------

SUMMARY_CHARS = 100
"""Longest one-line summary on the timeline and in the feed, in characters."""

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s")


def summary(entry: Entry, limit: int = SUMMARY_CHARS) -> str:
    """One honest line about the entry: the first sentence of its first block of
    prose (a first link is its title), cut at a word boundary to at most ``limit``
    characters with ``…``. ``"(no text)"`` for an empty entry. Plain text; a post's Hugo
    shortcodes read as the page shows them (a figure as its caption or alt text)."""
    body = to_markdown(entry.body, lambda image: None) if "{{" in entry.body else entry.body
    text = prose(body).split("\n", 1)[0]
    if not text:
        return "(no text)"
    sentence = _SENTENCE_END.split(text, 1)[0].rstrip(" ;")
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: limit - 1]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "…"


# --- pages ------------------------------------------------------------------------------

STATUS_MARK = {TaskStatus.DONE: "✓ done", TaskStatus.CARRIED: "→ carried", TaskStatus.OPEN: "○ open"}


@dataclass
class SiteContext:
    """What pages need besides the log."""

    layout: Layout = field(default_factory=Layout)
    """Where every page lives (:mod:`worklog_gen.site.layout`)."""
    topic_titles: dict[str, str] = field(default_factory=dict)
    """Topic id -> title, for links to the topic pages."""
    entry_topics: dict[str, list[str]] = field(default_factory=dict)
    """Entry slug -> ids of the topics it mentions."""
    old_links: OldSiteLinks = field(default_factory=OldSiteLinks)
    build_date: dt.date = field(default_factory=dt.date.today)
    feed: bool = False
    title: str = "Worklog"
    root: Path | None = None
    """The folder entry paths are relative to (``mkdocs.yml``'s), to find a post's images."""
    worklog_dir: Path | None = None
    """The worklog folder: a post's images are published only from inside it."""
    assets: dict[str, Path] = field(default_factory=dict)
    """Files the pages show, found while writing them: docs path -> file (a post's images)."""
    files: dict[str, bytes] = field(default_factory=dict)
    """Files the pages made while writing them: docs path -> content (the heatmap's chart)."""

    def entry_page(self, entry: Entry) -> str:
        return self.layout.entry_page(entry.slug)


def _day_link(entry: Entry, from_src: str, ctx: SiteContext, text: str | None = None) -> str:
    return f"[{md_escape(text or entry_title(entry))}]({relative(ctx.entry_page(entry), from_src)})"


def day_page(log: Worklog, index: int, ctx: SiteContext, same_day: Sequence[int] = ()) -> str:
    """The page of ``log.entries[index]``: title (a post's title, or the date and counter),
    ISO date, the author's header and text verbatim (old-site links handled by
    ``ctx.old_links``; a post's headings one level down, under its title), its tags, then
    its topics, links and tasks, and links to the previous and next pages. ``same_day``
    holds the indices of the day's entries from other sources, which share the page: then
    each text sits under a heading naming its source."""
    group = [log.entries[i] for i in (index, *same_day)]
    entry = group[0]
    src = ctx.entry_page(entry)
    facts = [f"{entry.date:%A} {entry.date.isoformat()}"]
    timed = next((e for e in group if e.target_date is not None), None)
    if timed is not None:
        facts.append(f"{_days(timed.countdown)} to the target date {timed.target_date.isoformat()}")
    facts.append(f"{sum(e.words for e in group)} words")
    parts = [f"# {md_escape(entry_title(entry)) if entry.kind == 'post' else entry_title(timed or entry)}",
             f"*{' · '.join(facts)}*"]
    if entry.tags:
        tags = relative(ctx.layout.tags, src)
        parts.append("**Tags:** " + ", ".join(f"[{md_escape(t)}]({tags}#{tag_anchor(t)})" for t in entry.tags))
    for e in group:
        written = (f"Written as “{md_escape(e.header.strip())}”" if e.header.strip()
                   else "A post" if e.kind == "post" else "One entry per file")
        body = ctx.old_links.rewrite(commonmark_lists(e.body), e.links, e.path).strip("\n")
        if "{{" in body:  # Hugo shortcodes, as the markdown they stand for
            body = to_markdown(body, lambda image, e=e: _image_url(image, e, src, ctx))
        if e.kind == "post" or len(group) > 1:  # its own headings sit under the page's (or its source's)
            body = shift_headings(body, 1)
        if len(group) == 1:
            parts[1] += f"  \n{written} ({md_escape(e.source)})"
        else:
            parts += [f"## From {md_escape(e.source)}", f"*{written}*"]
        parts.append(body if body.strip() else "*No text in this entry.*")
    if any(_FOOTNOTE.search(e.body) for e in group):  # footnotes under the text, above the links and the day bar
        parts.append(FOOTNOTES_HERE)
    topic_ids = list(dict.fromkeys(t for e in group for t in ctx.entry_topics.get(e.slug, [])))
    links = [link for e in group for link in e.links]
    tasks = [t for e in group for t in e.tasks]
    extra: list[str] = []
    if topic_ids:
        items = [
            f"- [{md_escape(ctx.topic_titles.get(t, t))}]({relative(paths.topic_page(t), src)})" for t in topic_ids
        ]
        extra.append("## Topics\n\n" + "\n".join(items))
    if links:
        items = []
        for link in links:
            title = md_escape(link.title.strip() or link.url)
            domain = f" — {md_escape(link.domain)}" if link.domain else ""
            items.append(f"- {ctx.old_links.link(title, link.url)}{domain}")
        extra.append("## Links\n\n" + "\n".join(items))
    if tasks:
        items = [f"- {STATUS_MARK[TaskStatus(t.status)]}: {md_escape(t.text)}" for t in tasks]
        extra.append("## Tasks\n\n" + "\n".join(items))
    if extra:
        parts.append("---")
        parts.extend(extra)
    around = []
    before = [e for e in log.entries[:index] if e.slug != entry.slug]
    after = [e for e in log.entries[index + 1:] if e.slug != entry.slug]
    if before:
        around.append("← " + _day_link(before[-1], src, ctx))
    around.append(f"[{md_escape(ctx.title)}]({relative(ctx.layout.home, src)})")
    if after:
        around.append(_day_link(after[0], src, ctx) + " →")
    parts.append("---\n\n" + " · ".join(around))
    return "\n\n".join(parts) + "\n"


FOOTNOTES_HERE = "///Footnotes Go Here///"
"""Python-Markdown's footnotes extension writes the footnotes where this line stands (its
``PLACE_MARKER`` option's default), instead of at the end of the page."""
_FOOTNOTE = re.compile(r"^\[\^[^\]]+\]:", re.M)


def _image_url(image: str, entry: Entry, page_src: str, ctx: SiteContext) -> str | None:
    """A figure's URL relative to its page: a URL as it is; a file found beside the entry's
    file (:func:`worklog_gen.log.shortcodes.find_image`) is published in the page's own folder at
    the path the post names (``/images/x.png`` of page ``<prefix>/<slug>.md`` goes to
    ``<prefix>/<slug>/images/x.png``, as in a Hugo page bundle), so two posts' images of one
    name never collide; recorded in ``ctx.assets``. ``None`` when it is not found or leads outside
    the worklog folder (the parser has warned about both)."""
    if is_url(image):
        return image
    file = ctx.root / entry.path if ctx.root else Path(entry.path)
    found = find_image(image, file, ctx.worklog_dir or file.parent).path
    if found is None:
        return None
    parts = [p for p in posixpath.normpath(image.split("#")[0].split("?")[0].lstrip("/")).split("/") if p != ".."]
    dest = ctx.layout.entry_asset(entry.slug, parts)
    ctx.assets[dest] = found
    return relative(dest, page_src)


def _countdown(log: Worklog, ctx: SiteContext) -> str:
    rows = []
    last = log.entries[-1] if log.entries else None
    if log.target_date is not None:
        rows.append(("Target date", f"{log.target_date:%A} {log.target_date.isoformat()}"))
        left = (log.target_date - ctx.build_date).days
        when = f"as of the build date {ctx.build_date.isoformat()}"
        if last is not None and last.date == ctx.build_date:  # one row, not the same figure twice
            when = f"as of the build date and the last entry {ctx.build_date.isoformat()}"
        rows.append(
            (f"Days left, {when}", str(left) if left >= 0 else f"target date passed {_days(-left)} ago")
        )
        if last is not None and last.date != ctx.build_date:
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
    counted = [e for e in log.entries if e.day_number is not None]
    if counted and log.target_date is None:  # a count-up log: where the counter stands
        rows.insert(0, ("Day", f"{counted[-1].day_number}, as of {counted[-1].date.isoformat()}"))
    return "\n".join(f"- **{k}:** {v}" for k, v in rows)


def home_page(log: Worklog, ctx: SiteContext) -> str:
    """The worklog home: preamble, countdown table (target date, days left as of the
    build date and as of the last entry, days logged, streaks), the words-per-day
    heatmap and the timeline newest first by month, one summary line per entry. The heatmap's
    files (:func:`home_files`) go into ``ctx.files``."""
    src = ctx.layout.home
    title = str(log.front_matter.get("title") or ctx.title)
    parts = [f"# {md_escape(title)}"]
    if log.preamble.strip():
        preamble = commonmark_lists(log.preamble)
        parts.append(ctx.old_links.rewrite(preamble, _preamble_links(log), _first_path(log)).strip("\n"))
    parts.append("## Countdown\n\n" + _countdown(log, ctx))
    see = [f"[Reading list]({relative(ctx.layout.reading_list, src)})", f"[Tasks]({relative(ctx.layout.tasks, src)})"]
    if ctx.feed:
        see.append(f"[Atom feed]({relative(paths.FEED, src)})")
    parts.append(" · ".join(see))
    if log.entries:
        first, last = log.entries[0].date, (log.target_date or log.entries[-1].date)
        from worklog_gen.kit.charts import chart_image

        heatmap = home_files(log, ctx)
        ctx.files.update(heatmap)
        svg = heatmap[f"{ctx.layout.heatmap}.vega.svg"]
        alt = f"Words written per day, {first} to {last}: a calendar, a square per day"
        parts.append("## Words per day\n\n" + chart_image(alt, f"{relative(ctx.layout.heatmap, src)}.vega.svg", svg))
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


def home_files(log: Worklog, ctx: SiteContext) -> dict[str, bytes]:
    """The files the worklog home shows besides its markdown: the words-per-day heatmap's
    Vega-Lite spec and SVG fallback (:func:`worklog_gen.kit.charts.chart_files`), whose cells
    link to the day pages by their final URLs and give the countdown or day number in their
    tooltips."""
    if not log.entries:
        return {}
    from worklog_gen.kit.charts import chart_files

    counters = {}
    for entry in log.entries:  # the day's first counter: T-N, or Day N in a count-up log
        if counter := _counter(entry).removeprefix(" · "):
            counters.setdefault(entry.date, counter)

    chart = heatmap_chart(heatmap_cells(words_by_date(log.entries), until=log.target_date), ctx.layout.day_href,
                          counters.get)
    return chart_files(chart, ctx.layout.heatmap)


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
    src = ctx.layout.reading_list
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
    src = ctx.layout.tasks
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
    src = paths.topic_page(topic_id)
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
    listed: set[str] = set()
    for entry in log.entries:
        page = ctx.entry_page(entry)
        if page not in listed:  # a day written in two files has one page
            listed.add(page)
            months.setdefault(month_title(entry.date), []).append({nav_title(entry): page})
    tags = [{"Tags": ctx.layout.tags}] if any(e.tags for e in log.entries) else []
    return [
        ctx.layout.home,
        {"Reading list": ctx.layout.reading_list},
        {"Tasks": ctx.layout.tasks},
        *tags,
        *({month: days} for month, days in months.items()),
    ]


def tag_anchor(tag: str) -> str:
    """The anchor of a tag's heading on the tags page, as Python-Markdown's ``toc`` makes it."""
    from markdown.extensions.toc import slugify

    return slugify(tag, "-")


def tags_page(log: Worklog, ctx: SiteContext) -> str:
    """Every tag (a post's ``tags`` and ``categories``), most used first, with its entries."""
    src = ctx.layout.tags
    by_tag: dict[str, list[Entry]] = {}
    for entry in log.entries:
        for tag in entry.tags:
            by_tag.setdefault(tag, []).append(entry)
    parts = ["# Tags"]
    for tag, entries in sorted(by_tag.items(), key=lambda kv: (-len(kv[1]), kv[0].lower())):
        items = "\n".join(f"- {_day_link(e, src, ctx)}" for e in reversed(entries))
        parts.append(f"## {md_escape(tag)}\n\n{items}")
    return "\n\n".join(parts) + "\n"


def worklog_pages(log: Worklog, ctx: SiteContext) -> dict[str, str]:
    """Every worklog page: docs source path -> markdown (``tags.md`` when an entry has tags)."""
    pages = {
        ctx.layout.home: home_page(log, ctx),
        ctx.layout.reading_list: reading_list_page(log, ctx),
        ctx.layout.tasks: tasks_page(log, ctx),
    }
    if any(e.tags for e in log.entries):
        pages[ctx.layout.tags] = tags_page(log, ctx)
    groups: dict[str, list[int]] = {}
    for i, entry in enumerate(log.entries):  # a day written in two files: one page
        groups.setdefault(ctx.entry_page(entry), []).append(i)
    for src, (first, *others) in groups.items():
        pages[src] = day_page(log, first, ctx, others)
    return pages


def _days(n: int) -> str:
    """``"1 day"``, ``"3 days"``."""
    return f"{n} day" if n == 1 else f"{n} days"
