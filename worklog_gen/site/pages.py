"""The worklog's pages as markdown text, from parsed entries.

Plain functions: the MkDocs plugin (:mod:`worklog_gen.plugin`) only places their
output in the site. The worklog home (preamble, countdown, streaks, heatmap, timeline),
a page per entry (:func:`day_page`), a page per year listing its days (:func:`year_pages`),
the reading list, the tasks and the tags; where each one lives is
:mod:`worklog_gen.site.layout`'s to say.

This module holds the titles, the one-line entry summary, the page markdown and the
navigation (the home, reading list, tasks, tags and year pages: a day page is reached from
them, never listed in the nav, so that no page grows with the log but those that list it);
the figures come from :mod:`worklog_gen.site.stats`,
the heatmap from :mod:`worklog_gen.site.heatmap`, old-site links are handled by
:mod:`worklog_gen.site.old_links` and markdown escaping is :mod:`worklog_gen.site.markup`.

Pages link to each other with relative ``.md`` links, so MkDocs checks them and
writes the right URLs whatever ``use_directory_urls`` is. Only the heatmap is
raw HTML, so its links are final URLs (see :func:`worklog_gen.site.heatmap.heatmap_chart`).
"""

from __future__ import annotations

import datetime as dt
import html
import json
import posixpath
import re
from urllib.parse import quote, urlsplit
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from worklog_gen.site import layout as paths
from worklog_gen.site.heatmap import heatmap_cells, heatmap_chart
from worklog_gen.site.layout import Layout, relative
from worklog_gen.site.markup import (
    commonmark_lists,
    html_link,
    inline_links,
    inline_text,
    link_definitions,
    markdown_in_html_blocks,
    md_escape,
    shift_headings,
)
from worklog_gen.log.files import Exclusion
from worklog_gen.log.front_matter import title_heading
from worklog_gen.log import logseq
from worklog_gen.log.internal_links import plain, rewrite
from worklog_gen.log.local_files import Repository, can_run_script, file_links, page_target
from worklog_gen.log.obsidian import HASHTAG_RE
from worklog_gen.log.repair import code_span_ranges, edit_outside_code, in_spans, track_fence
from worklog_gen.log.shortcodes import Image, find_image, has_markup, is_url, resolve_urls, to_markdown
from worklog_gen.site.callouts import admonitions, without_types
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


# --- summary --------------------------------------------------------------------------

SUMMARY_CHARS = 100
"""Longest one-line summary on the timeline and in the feed, in characters."""

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s")


def summary(entry: Entry, limit: int = SUMMARY_CHARS) -> str:
    """One honest line about the entry: the first sentence of its first block of
    prose (a first link is its title), cut at a word boundary to at most ``limit``
    characters with ``…``. ``"(no text)"`` for an empty entry. Plain text; a post's Hugo
    shortcodes read as the page shows them (a figure as its caption or alt text)."""
    body = without_types(logseq.without_hidden_properties(rewrite(entry.body, entry.internal_links)))
    body = _without_title(entry, body)
    body = to_markdown(body, lambda image: None) if has_markup(body) else body
    text = prose(body).split("\n", 1)[0]
    if not text:
        return "(no text)"
    # the first sentence end outside parentheses: "(Dao et al. 2023)" or "(GROUP_SIZE_M = 8; swizzled)"
    # stays whole rather than leave a "(" open
    end = next((m.start() for m in _SENTENCE_END.finditer(text) if not _open_paren(text[: m.start()])), len(text))
    sentence = text[:end].rstrip(" ;")
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: limit - 1]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    if _open_paren(cut) and cut.rfind("(") > 0:  # cut inside a parenthesis: end before it
        cut = cut[: cut.rfind("(")]
    return cut.rstrip(" ,;:") + "…"


def _open_paren(text: str) -> bool:
    """Whether ``text`` leaves a parenthesis open."""
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
    return depth > 0


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
    exclude: Exclusion | None = None
    """The files of the worklog folder the plugin's ``exclude`` leaves out: never published."""
    assets: dict[str, Path] = field(default_factory=dict)
    """Files the pages show, found while writing them: docs path -> file (a post's images, and
    the files of the log's folder that entries show or link, :func:`publish_files`)."""
    sanitize: bool = False
    """The plugin's ``sanitize`` option: then a file that can run script is not published (:func:`_publish`)."""
    repository: Repository | None = None
    """The repository the log is kept in, when ``repo_url`` is set: a link to one of its files
    outside the worklog folder (and, for a page, outside :attr:`docs_dir`) leads to it there
    (:func:`publish_files`)."""
    docs_dir: Path | None = None
    """The docs folder: a link to one of its pages is MkDocs' to check, never the repository's."""
    withheld: list[str] = field(default_factory=list)
    """A warning for each file :func:`_publish` did not publish because it can run script."""
    published: dict[str, dict[str, str | None]] = field(default_factory=dict)
    """Entry path -> url -> the docs path of the file that image or link names, published
    (:func:`publish_files`), or its address on the :attr:`repository`'s site; ``None`` for a file
    not found or refused, linked as written."""
    files: dict[str, bytes] = field(default_factory=dict)
    """Files the pages made while writing them: docs path -> content (the heatmap's chart)."""
    tag_anchors: dict[str, str] | None = None
    """Each tag's anchor on the tags page (:func:`tag_anchors`), once computed."""

    def entry_page(self, entry: Entry) -> str:
        return self.layout.entry_page(entry.slug)

    def link(self, title_markdown: str, url: str, entry: Entry, from_src: str) -> str:
        """A link of ``entry`` in a generated list (its page's links, the reading list) on page
        ``from_src``: to the published copy of a file it names, else as :class:`OldSiteLinks` writes it."""
        mine = self.published.get(entry.path, {})
        if url in mine:
            dest = mine[url]
            return html_link("", title_markdown, url) if dest is None else \
                f"[{title_markdown}](<{_href(dest, from_src)}>)"
        return self.old_links.link(title_markdown, url)


def _day_link(entry: Entry, from_src: str, ctx: SiteContext, text: str | None = None) -> str:
    return f"[{md_escape(text or entry_title(entry))}]({relative(ctx.entry_page(entry), from_src)})"


@dataclass(frozen=True)
class DayGroup:
    """One day page: the entries it shows and the pages around it."""

    src: str
    """Its docs path (``worklog/2025-12-09.md``)."""
    indices: tuple[int, ...]
    """Indices into ``log.entries`` of the entries it shows: one, or a day's entries from
    several files (the first file's first)."""
    before: Entry | None
    """The entry before the page's first one that has a page of its own (the previous page)."""
    after: Entry | None
    """The first entry after the page's first one that has another page (the next page)."""


def day_groups(log: Worklog, ctx: SiteContext) -> list[DayGroup]:
    """Every day page of ``log`` in date order (a day written in two files is one page; a
    post is a page of its own), with its previous and next pages, in one walk over the
    entries (which the parser sorts by date)."""
    entries = log.entries
    by_src: dict[str, list[int]] = {}
    for i, entry in enumerate(entries):
        by_src.setdefault(ctx.entry_page(entry), []).append(i)
    groups = []
    for src, indices in by_src.items():
        first = indices[0]
        after = first + 1  # past the page's own entries right after it: each is skipped once
        while after < len(entries) and entries[after].slug == entries[first].slug:
            after += 1
        groups.append(DayGroup(src, tuple(indices), entries[first - 1] if first else None,
                               entries[after] if after < len(entries) else None))
    return groups


def day_page(log: Worklog, index: int, ctx: SiteContext, same_day: Sequence[int] = (),
             before: Entry | None = None, after: Entry | None = None) -> str:
    """The page of ``log.entries[index]``: title (a post's title, or the date and counter),
    ISO date, the author's header and text verbatim (old-site links handled by
    ``ctx.old_links``; a post's headings one level down, under its title), its tags, then
    its topics, links and tasks, and links to the previous page (``before``'s), its month
    on its year page, the worklog home and the next page (``after``'s); :func:`day_groups`
    finds them. ``same_day`` holds the indices of the day's entries from other sources,
    which share the page: then each text sits under a heading naming its source."""
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
        if ctx.tag_anchors is None:  # once per site, not per page
            ctx.tag_anchors = tag_anchors(log)
        tags, anchors = relative(ctx.layout.tags, src), ctx.tag_anchors
        parts.append("**Tags:** " + ", ".join(f"[{md_escape(t)}]({tags}#{anchors[t]})" for t in entry.tags))
    for e in group:
        written = (f"Written as “{md_escape(e.header.strip())}”" if e.header.strip()
                   else "A post" if e.kind == "post" else "One entry per file")
        body = _linked_hashtags(entry_body(e, src, ctx), e.tags, src, ctx)
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
    links = [link for e in group for link in e.links if not _to_own_entry(link.url, e.path, ctx)]  # read, not written
    owner = {id(link): e for e in group for link in e.links}
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
            items.append(f"- {ctx.link(title, link.url, owner[id(link)], src)}{domain}")
        extra.append("## Links\n\n" + "\n".join(items))
    if tasks:
        items = [f"- {STATUS_MARK[TaskStatus(t.status)]}: {inline_text(plain(t.text))}" for t in tasks]
        extra.append("## Tasks\n\n" + "\n".join(items))
    if extra:
        parts.append("---")
        parts.extend(extra)
    around = []
    if before is not None:
        around.append("← " + _day_link(before, src, ctx))
    around.append(f"[{month_title(entry.date)}]({ctx.layout.month_link(entry.date, src)})")
    around.append(f"[{md_escape(ctx.title)}]({relative(ctx.layout.home, src)})")
    if after is not None:
        around.append(_day_link(after, src, ctx) + " →")
    parts.append("---\n\n" + " · ".join(around))
    return page_meta(entry) + "\n\n".join(parts) + "\n"


def page_meta(entry: Entry) -> str:
    """The front matter of a post's page: its title (:func:`title_meta`). ``""`` for a day's page,
    whose title is a date."""
    return title_meta(entry.title) if entry.kind == "post" else ""


def title_meta(title: str) -> str:
    """Front matter giving a page the ``title`` the log's author wrote, made safe as HTML. Out of the
    nav, MkDocs takes a page's title from its meta or its first heading, and themes put it into pages
    unescaped (Material's ``<title>{{ page.title | striptags }}``, and ``striptags`` unescapes
    entities again). So the title is HTML-escaped, and a zero-width space after each ``<`` of a ``</``
    keeps ``</title>`` or ``</script>`` from ever closing an element."""
    safe = html.escape(title.replace("</", "<\u200b/"), quote=False)
    return f"---\ntitle: {json.dumps(safe, ensure_ascii=False)}\n---\n\n"


def entry_body(entry: Entry, src: str, ctx: SiteContext) -> str:
    """The author's text of ``entry`` as its page (docs path ``src``) shows it: lists made
    CommonMark, wikilinks and cross-references as the parser resolved them
    (:func:`~worklog_gen.log.internal_links.rewrite`), old-site links handled (``ctx.old_links``),
    Hugo shortcodes and Jekyll's Liquid as the markdown they stand for (a figure's image published
    beside the page, :func:`_image_url`), other tools' markup as they show it (:func:`_as_shown`);
    a post's first heading left out when it is its title, which the page shows above it."""
    body = resolve_urls(rewrite(commonmark_lists(entry.body), entry.internal_links))  # as the parser read its links
    body = _as_shown(body)
    body, rest = _published_links(body, entry.path, [*entry.links, *entry.images], src, ctx)
    body = ctx.old_links.rewrite(body, rest, entry.path).strip("\n")
    if has_markup(body):  # Hugo shortcodes and Jekyll's Liquid, as the markdown they stand for
        body = to_markdown(body, lambda image: _image_url(image, entry.path, ctx.layout.page(entry.slug), src, ctx))
    return _without_title(entry, body)


def _as_shown(markdown: str) -> str:
    """An entry's or a preamble's ``markdown`` with what other tools write as they show it:
    Logseq's markup (:func:`worklog_gen.log.logseq.to_markdown`), GitHub's and Obsidian's callouts
    as admonitions (:func:`worklog_gen.site.callouts.admonitions`), and the markdown inside a
    ``<details>`` or ``<div>`` read, as CommonMark reads it
    (:func:`~worklog_gen.site.markup.markdown_in_html_blocks`)."""
    return markdown_in_html_blocks(admonitions(logseq.to_markdown(markdown)))


def _linked_hashtags(body: str, tags: Sequence[str], src: str, ctx: SiteContext) -> str:
    """``body`` (on page ``src``) with each ``#tag`` that is one of ``tags`` (an Obsidian or Logseq
    note's, :func:`worklog_gen.log.obsidian.hashtags`) a link to the tag on the tags page, as those
    tools make it; in code, or inside a link's text, it stays text."""
    if not tags or ctx.tag_anchors is None:
        return body
    page = relative(ctx.layout.tags, src)

    def linked(line: str, spans: list[tuple[int, int]]) -> str:
        def link(m: re.Match) -> str:
            tag = m["tag"] or m["page"].strip()
            inside = in_spans(m.start(), spans) or line.count("[", 0, m.start()) > line.count("]", 0, m.start())
            if tag not in tags or tag not in ctx.tag_anchors or inside:  # in code, or a link's text
                return m[0]
            return f"[{md_escape(m[0])}]({page}#{ctx.tag_anchors[tag]})"

        return HASHTAG_RE.sub(link, line)

    return edit_outside_code(body, linked, "#")


def _without_title(entry: Entry, body: str) -> str:
    """``body`` (``entry``'s) without its first heading when ``entry`` is a post and that heading
    is its title (Material's blog writes one so): the page shows the title once, as its own."""
    if entry.kind == "post" and (heading := title_heading(lines := body.split("\n"))) \
            and " ".join(heading[1].split()) == " ".join(entry.title.split()):
        return "\n".join(lines[heading[0] + 1:]).lstrip("\n")
    return body


def publish_files(log: Worklog, ctx: SiteContext) -> None:
    """Publish the files of the log's folder that its entries and preambles show or link
    (:func:`worklog_gen.log.local_files.file_links`: ``![roofline](img/roofline.png)``,
    ``[notes](notes.pdf)``), each in its entry's page folder at the path the entry names
    (``worklog/2025-12-09/img/roofline.png``), as a post's figure is, and a preamble's in the
    worklog's folder (``worklog/img/plan.png``); recorded in ``ctx.published`` and
    ``ctx.assets``. A file is looked for as a figure's image is
    (:func:`~worklog_gen.log.shortcodes.find_image`); one not found (but for a root-relative
    path, a link to the log's old site) or refused is recorded as ``None``: the parser has
    warned, and the page links it as written; but a link (not an image) to a file of
    ``ctx.repository`` outside the worklog folder leads to the file on the repository's site,
    its fragment kept (GitHub's ``#L42``). A link to one of the log's own files leads to
    that file's page (:func:`_link_log_files`)."""
    sources = [(e.path, e.images, e.links, ctx.layout.page(e.slug)) for e in log.entries]
    sources += [(f.path, f.preamble_images, f.preamble_links, ctx.layout.prefix) for f in log.files if not f.refused]
    for path, images, links, folder in sources:
        mine = ctx.published.setdefault(path, {})
        for link, target, image in file_links(images, links):
            if link.url in mine:
                continue
            dest, found = _publish(target, path, folder, ctx, link.line)
            if dest is None and found.refused and not image and ctx.repository is not None \
                    and (file := ctx.repository.file(target, (ctx.root / path if ctx.root else Path(path)).parent)):
                dest = ctx.repository.file_url(file) + _fragment(urlsplit(link.url).fragment)  # GitHub's #L42
            if dest is not None or found.refused or not target.startswith("/"):
                mine[link.url] = dest
    _link_log_files(log, [(path, links) for path, _, links, _ in sources], ctx)


def _link_log_files(log: Worklog, sources: list[tuple[str, list[Link]]], ctx: SiteContext) -> None:
    """Record in ``ctx.published`` where a link to one of the log's own files leads
    (``[yesterday](2025-12-08.md)``, ``[the plan](../index.md#goals)``): the page of the file's
    entry when it has one (a day's file, a post), else the worklog home (a whole log, a file of
    preamble); its fragment kept. Such a file is no page of the site, so as written the link
    would lead nowhere. So is a markdown file of ``ctx.repository`` outside the worklog and docs
    folders (``[the plan](../README.md)``): the link leads to it on the repository's site."""
    pages: dict[Path, str] = {}
    for f in log.files:
        if f.file is not None and not f.refused:
            shown = [e for e in f.entries if not e.draft]
            pages[f.file.resolve()] = ctx.entry_page(shown[0]) if len(shown) == 1 else ctx.layout.home
    for path, links in sources:
        mine, here = ctx.published.setdefault(path, {}), (ctx.root / path if ctx.root else Path(path)).parent
        for link in links:
            if link.url in mine or (target := page_target(link.url)) is None:
                continue
            page = pages.get((here / target[0]).resolve())
            if page is not None:
                mine[link.url] = page + _fragment(target[1])
            elif ctx.repository is not None and (file := ctx.repository.file(target[0], here)) is not None \
                    and not any(d is not None and file.is_relative_to(d.resolve())
                                for d in (ctx.worklog_dir, ctx.docs_dir)):
                mine[link.url] = ctx.repository.file_url(file) + _fragment(target[1])  # the README, on its site


def _fragment(fragment: str) -> str:
    """``#fragment`` as a URL may hold it (``<``, ``>``, quotes and spaces percent-escaped, escapes
    already there kept), or ``""`` without one."""
    return "#" + quote(fragment, safe="/?:@!$&'()*+,;=-._~%") if fragment else ""


def _href(dest: str, src: str) -> str:
    """Where a link of page ``src`` to ``dest`` points: ``dest`` itself when it is an address (a
    file of the repository on its site), else its path from ``src``."""
    return dest if is_url(dest) else relative(dest, src)


def _to_own_entry(url: str, path: str, ctx: SiteContext) -> bool:
    """Whether ``url``, a link of file ``path``, leads to one of the log's own files
    (``[yesterday](2025-12-08.md)``, a wikilink or block reference to another day): the author
    wrote it, not read it, so the reading list and a day's links leave it out."""
    dest = ctx.published.get(path, {}).get(url)
    return page_target(url) is not None and dest is not None and not is_url(dest)


def _published_links(body: str, path: str, links: list[Link], src: str, ctx: SiteContext) -> tuple[str, list[Link]]:
    """``body`` (an entry's, or a preamble's, of file ``path``, on page ``src``) with its ``links``
    and images to files of the log's folder pointing at their published copies
    (:func:`publish_files`), and those to a file not found or refused as inline HTML, as written
    (the parser has warned; MkDocs would warn again, naming a generated page); code (fenced, or
    a span) stays as written. Returns the body and the links and images left for :class:`OldSiteLinks`."""
    mine = ctx.published.get(path, {})
    handled = {link.url for link in links if link.url in mine}
    rest = [link for link in links if link.url not in handled]
    if not handled:
        return body, rest
    inline, definitions = inline_links(handled), link_definitions(handled)

    def inline_sub(m: re.Match) -> str:
        dest = mine[m["url"]]
        if any(a <= m.start() < b for a, b in spans):  # in a code span: code, as written
            return m[0]
        if dest is None:
            return html_link(m["bang"], m["text"], m["url"])
        return f"{m['bang']}[{m['text']}](<{_href(dest, src)}>{m['title'] or ''})"

    def definition_sub(m: re.Match) -> str:
        dest = mine[m[2]]
        return m[0] if dest is None else m[1] + _href(dest, src).replace(" ", "%20")

    lines, fence, spans = body.split("\n"), None, []
    for i, line in enumerate(lines):
        fence, marker = track_fence(line, fence)
        if not (marker or fence is not None) and ("](" in line or "]:" in line):
            spans = code_span_ranges(line)
            lines[i] = definitions.sub(definition_sub, inline.sub(inline_sub, line))
    return "\n".join(lines), rest


FOOTNOTES_HERE = "///Footnotes Go Here///"
"""Python-Markdown's footnotes extension writes the footnotes where this line stands (its
``PLACE_MARKER`` option's default), instead of at the end of the page."""
_FOOTNOTE = re.compile(r"^\[\^[^\]]+\]:", re.M)


def _image_url(image: str, path: str, folder: str, page_src: str, ctx: SiteContext) -> str | None:
    """A figure's URL relative to its page ``page_src``: a URL as it is; a file found beside the
    log's file ``path`` is published in the docs folder ``folder`` (an entry's page folder, or the
    worklog's for a preamble; :func:`_publish`). ``None`` when it is not found or leads outside the
    worklog folder (the parser has warned about both)."""
    if is_url(image):
        return image
    dest, _ = _publish(image.split("#")[0].split("?")[0], path, folder, ctx)
    return None if dest is None else relative(dest, page_src)


def _publish(target: str, path: str, folder: str, ctx: SiteContext, line: int = 0) -> tuple[str | None, Image]:
    """Publish the file that path ``target``, written in the log's file ``path`` (at ``line`` when
    known), names
    (:func:`worklog_gen.log.shortcodes.find_image`) in the docs folder ``folder`` (an entry's
    page folder) at that path (``/images/x.png`` of page ``<prefix>/<slug>.md`` goes to
    ``<prefix>/<slug>/images/x.png``, as in a Hugo page bundle), so two posts' images of one name
    never collide; a file of another source of the same folder and path goes one folder deeper,
    under its source file's name. Recorded in ``ctx.assets``. With ``ctx.sanitize``, a file that can
    run script (:func:`~worklog_gen.log.local_files.can_run_script`: an SVG, an XHTML page) is not
    published, with a warning in ``ctx.withheld``. Returns its docs path (``None`` when it is not
    published) and what looking for it found."""
    file = ctx.root / path if ctx.root else Path(path)
    found = find_image(target, file, ctx.worklog_dir or file.parent, ctx.exclude)
    if found.path is None:
        return None, found
    if ctx.sanitize and can_run_script(found.path.name):
        why = "with sanitize: true, a file a browser may run script in (an SVG, an XHTML or XML page) stays off the site"
        ctx.withheld.append(f"{path}{f':{line}' if line else ''}: warning: {target!r} is not published: {why}")
        return None, Image(refused=why)
    parts = [p for p in posixpath.normpath(target.lstrip("/")).split("/") if p not in ("..", ".")]
    dest = posixpath.join(folder, *parts)
    if ctx.assets.get(dest, found.path) != found.path:
        dest = posixpath.join(folder, Path(path).stem, *parts)
    ctx.assets[dest] = found.path
    return dest, found


def _countdown(log: Worklog, ctx: SiteContext) -> str:
    rows = []
    last = log.entries[-1] if log.entries else None
    targets = log.targets
    if len(targets) > 1:  # files that name different targets: each, with its files
        for day, files in targets.items():
            rows.append((f"Target date of {', '.join(md_escape(f) for f in files)}", f"{day:%A} {day.isoformat()}"))
    if log.target_date is not None:
        which = "Target date" if len(targets) <= 1 else "Counting down to"
        rows.append((which, f"{log.target_date:%A} {log.target_date.isoformat()}"))
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
    """The worklog home: its title (the log's front matter ``title``, made safe by :func:`title_meta`,
    else the section's), preamble, countdown table (target date, days left as of the
    build date and as of the last entry, days logged, streaks), the words-per-day
    heatmap and the timeline newest first by month, one summary line per entry. The heatmap's
    files (:func:`home_files`) go into ``ctx.files``."""
    src = ctx.layout.home
    prefaced = [(f.title, rewrite(f.preamble, f.preamble_internal_links), f.path,
                 [*f.preamble_links, *f.preamble_images]) for f in log.files if f.preamble.strip() and not f.refused]
    if not log.files and log.preamble.strip():  # a log made in code, without its files
        prefaced = [("", log.preamble, log.paths[0] if log.paths else "<worklog>", _preamble_links(log.preamble))]
    own = str(log.front_matter.get("title") or "") if len(prefaced) <= 1 else ""  # the log's, not the config's
    parts = [f"# {md_escape(own or ctx.title)}"]
    for file_title, text, path, links in prefaced:  # each file's routine and rules, under its title if several
        preamble, rest = _published_links(_as_shown(resolve_urls(commonmark_lists(text))), path, links, src, ctx)
        if len(prefaced) > 1:
            parts.append(f"## {md_escape(file_title)}")
            preamble = shift_headings(preamble, 2)
        preamble = ctx.old_links.rewrite(preamble, rest, path).strip("\n")
        if has_markup(preamble):  # as an entry's: Hugo shortcodes and Jekyll's Liquid as markdown
            preamble = to_markdown(preamble, lambda image, at=path: _image_url(image, at, ctx.layout.prefix, src, ctx))
        parts.append(preamble)
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
    return (title_meta(own) if own else "") + "\n\n".join(parts) + "\n"


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


def _preamble_links(preamble: str) -> list[Link]:
    # A log made in code has no files, whose preambles' links the parser finds; its preamble's
    # root-relative links are found here with the same regex the rewrite uses, at line 0 (unknown).
    urls = re.findall(r"\]\(\s*<?(/[^/)\s>][^)\s>]*)", preamble)
    return [Link(title="", url=u, line=0) for u in urls]


def reading_list_page(log: Worklog, ctx: SiteContext) -> str:
    """Every link of the log once (by URL), with its title, domain and the days it
    appears on, linked to their pages; not those to the log's own entries (``[[2025-12-08]]``,
    ``[yesterday](2025-12-08.md)``, a post's cross-reference), which the author wrote, not read."""
    src = ctx.layout.reading_list
    items = [item for item in reading_list(log.entries) if not _to_own_entry(item.url, item.entries[0].path, ctx)]
    parts = [
        "# Reading list",
        f"{len(items)} distinct links from {len(log.entries)} entries, in order of first appearance.",
    ]
    if items:
        rows = []
        for item in items:
            title = ctx.link(md_escape(item.title, table=True), item.url, item.entries[0], src)
            days = ", ".join(_day_link(e, src, ctx, e.date.isoformat()) for e in item.entries)
            domain = md_escape(item.domain or (ctx.old_links.base_url and "old site") or "relative", table=True)
            rows.append(f"| {title} | {domain} | {days} |")
        parts.append("| Title | Domain | Days |\n|---|---|---|\n" + "\n".join(rows))
    return "\n\n".join(parts) + "\n"


def tasks_page(log: Worklog, ctx: SiteContext) -> str:
    """What was done, what was carried over and done later, what was carried over and
    never marked done, and what is open (a checkbox, a ``TODO``) and not marked done since
    (rule: :class:`TaskReport`)."""
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
            f"- {inline_text(plain(task.text))} — carried on "
            + ", ".join(_day_link(e, src, ctx, e.date.isoformat()) for e in entries)
            for entries, task in report.outstanding
        ))
    else:
        parts.append("Nothing.")
    parts.append(f"## Carried over, then done ({len(report.carried_then_done)})")
    if report.carried_then_done:
        parts.append("\n".join(
            f"- {inline_text(plain(task.text))} — carried on {_day_link(a, src, ctx, a.date.isoformat())}, "
            f"done on {_day_link(b, src, ctx, b.date.isoformat())}"
            for a, task, b in report.carried_then_done
        ))
    if report.open:  # a checkbox or an outliner's TODO, not marked done on a later day
        parts.append(f"## Open, not marked done since ({len(report.open)})")
        parts.append("\n".join(f"- {inline_text(plain(task.text))} — open on "
                                f"{_day_link(e, src, ctx, e.date.isoformat())}" for e, task in report.open))
    parts.append(f"## Done ({len(report.done)})")
    by_day: dict[str, list[str]] = {}
    for entry, task in report.done:
        by_day.setdefault(_day_link(entry, src, ctx), []).append(f"    - {inline_text(plain(task.text))}")
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
    """The worklog's items for MkDocs' ``nav``: home (the section's index page), reading
    list, tasks, tags (when an entry has tags), then one page per year, newest first, as the
    home's timeline runs. Day pages are not in it: a year page lists them."""
    tags = [{"Tags": ctx.layout.tags}] if any(e.tags for e in log.entries) else []
    years = sorted({e.date.year for e in log.entries}, reverse=True)
    return [
        ctx.layout.home,
        {"Reading list": ctx.layout.reading_list},
        {"Tasks": ctx.layout.tasks},
        *tags,
        *({str(year): ctx.layout.year_page(year)} for year in years),
    ]


def year_pages(log: Worklog, groups: Sequence[DayGroup], ctx: SiteContext) -> dict[str, str]:
    """A page per year of ``groups`` (:func:`day_groups`): docs path -> markdown. Each lists
    the year's day pages newest first under a heading per month (anchored at
    :meth:`~worklog_gen.site.layout.Layout.month_anchor`, which day pages link to), each day
    a link with its one-line :func:`summary`, then links to the years around it and the home."""
    by_year: dict[int, dict[dt.date, list[Entry]]] = {}
    for group in reversed(groups):  # newest first
        entry = log.entries[group.indices[0]]
        month = entry.date.replace(day=1)
        by_year.setdefault(entry.date.year, {}).setdefault(month, []).append(entry)
    years = list(by_year)
    pages = {}
    for i, (year, months) in enumerate(by_year.items()):
        src = ctx.layout.year_page(year)
        days = len({e.date for entries in months.values() for e in entries})
        parts = [f"# {year}", f"{_days(days)} logged, newest first."]
        for month, entries in months.items():
            items = "\n".join(f"- {_day_link(e, src, ctx)} — {md_escape(summary(e))}" for e in entries)
            parts.append(f"## {month:%B} {{ #{ctx.layout.month_anchor(month)} }}\n\n{items}")
        around = [f"[{md_escape(ctx.title)}]({relative(ctx.layout.home, src)})"]
        if i + 1 < len(years):  # an older year
            around.insert(0, f"← [{years[i + 1]}]({relative(ctx.layout.year_page(years[i + 1]), src)})")
        if i:
            around.append(f"[{years[i - 1]}]({relative(ctx.layout.year_page(years[i - 1]), src)}) →")
        parts.append("---\n\n" + " · ".join(around))
        pages[src] = "\n\n".join(parts) + "\n"
    return pages


def _by_tag(log: Worklog) -> list[tuple[str, list[Entry]]]:
    """Every tag with its entries, in the tags page's order: most used first, then by name."""
    by_tag: dict[str, list[Entry]] = {}
    for entry in log.entries:
        for tag in entry.tags:
            by_tag.setdefault(tag, []).append(entry)
    return sorted(by_tag.items(), key=lambda kv: (-len(kv[1]), kv[0].lower(), kv[0]))


def tag_anchors(log: Worklog) -> dict[str, str]:
    """Each tag's anchor on the tags page, one per tag and never empty: the slug Python-Markdown's
    ``toc`` would make (``Warp shuffles`` -> ``warp-shuffles``), ``tag`` where that is empty
    (``🚀``, ``..``), then ``-2``, ``-3``... where the slug is taken (``Upper`` after ``UPPER``,
    or the page title's ``tags``). :func:`tags_page` sets each heading's id to it (attr_list)."""
    from markdown.extensions.toc import slugify

    taken, anchors = {"tags"}, {}
    for tag, _ in _by_tag(log):
        base = slugify(tag, "-") or "tag"
        anchor, n = base, 1
        while anchor in taken:
            n += 1
            anchor = f"{base}-{n}"
        taken.add(anchor)
        anchors[tag] = anchor
    return anchors


def tags_page(log: Worklog, ctx: SiteContext) -> str:
    """Every tag (a post's ``tags`` and ``categories``), most used first, with its entries; each
    heading's id is the tag's anchor (:func:`tag_anchors`)."""
    src, anchors = ctx.layout.tags, tag_anchors(log)
    parts = ["# Tags"]
    for tag, entries in _by_tag(log):
        items = "\n".join(f"- {_day_link(e, src, ctx)}" for e in reversed(entries))
        parts.append(f"## {md_escape(tag)} {{#{anchors[tag]}}}\n\n{items}")
    return "\n\n".join(parts) + "\n"


def worklog_pages(log: Worklog, ctx: SiteContext) -> dict[str, str]:
    """Every worklog page: docs source path -> markdown (``tags.md`` when an entry has tags; a
    page per year and per day)."""
    publish_files(log, ctx)
    pages = {
        ctx.layout.home: home_page(log, ctx),
        ctx.layout.reading_list: reading_list_page(log, ctx),
        ctx.layout.tasks: tasks_page(log, ctx),
    }
    if any(e.tags for e in log.entries):
        pages[ctx.layout.tags] = tags_page(log, ctx)
    groups = day_groups(log, ctx)
    pages |= year_pages(log, groups, ctx)
    for group in groups:
        first, *others = group.indices
        pages[group.src] = day_page(log, first, ctx, others, group.before, group.after)
    return pages


def _days(n: int) -> str:
    """``"1 day"``, ``"3 days"``."""
    return f"{n} day" if n == 1 else f"{n} days"
