"""An Atom feed of the log's entries (RFC 4287), built with ``xml.etree.ElementTree``.

Each entry gets its page's title and link, its date as ``updated`` and ``published`` (midnight
UTC: the log records days, not times), its one-line summary and its whole text as ``content``
(``type="html"``, rendered with Python-Markdown and the site's own extensions), so that a feed
reader shows the entry as the page does (full-content feeds, as mkdocs-rss-plugin writes them),
and made safe as the page is (:func:`worklog_gen.site.sanitize.safe_html`: links that run script
dropped, and the plugin's ``sanitize`` applied).
Links are absolute when the site's ``site_url`` is known; otherwise they are relative to the
feed's own URL (``feed.xml`` at the site root), which RFC 4287 allows (relative references
resolve against the document's URI) but not every reader follows: the build says so.
"""

from __future__ import annotations

import datetime as dt
import html
import posixpath
import uuid
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

import markdown
from markdown.treeprocessors import Treeprocessor
from markdown.util import AMP_SUBSTITUTE

from worklog_gen.site.layout import FEED, Layout, relative
from worklog_gen.site.pages import entry_title, summary
from worklog_gen.site.sanitize import safe_html
from worklog_gen.site.settings import MARKDOWN_EXTENSIONS
from worklog_gen.site.markup import commonmark_lists
from worklog_gen.log.model import Entry, Worklog

FEED_LENGTH = 50
"""Entries in the feed, newest first: a reader polls for what is new, and a feed of every day of a
ten-year log would be megabytes (mkdocs-rss-plugin's ``length`` defaults to 20)."""
NO_SITE_URL = ("feed.xml: site_url is not set in mkdocs.yml, so the feed's links are relative to the feed; "
               "some feed readers cannot follow them: set site_url to the published address")
"""The note a build without ``site_url`` gives (MkDocs' INFO level: it does not fail ``--strict``,
which a local preview without a published address must pass)."""


class _LinksFromFeed(Treeprocessor):
    """Rewrites each relative ``href`` and ``src`` of an entry's HTML, written relative to its page's
    docs path (``page``), to the URL a reader of the feed follows: ``base`` + the site path, or
    the site path alone (relative to the feed at the site root) without a ``site_url``."""

    def __init__(self, md, page: str, layout: Layout, base: str | None):
        super().__init__(md)
        self.page, self.layout, self.base = page, layout, base

    def run(self, root):
        for element in root.iter():
            for attribute in ("href", "src"):
                value = element.get(attribute)
                if value is not None:
                    element.set(attribute, self.url(value))

    def url(self, value: str) -> str:
        # An e-mail link's href is written as character references (``&#109;&#97;...``, Python-Markdown's
        # obfuscation, its ``&`` held as AMP_SUBSTITUTE until the serializer): read as its URL, a mailto:.
        parts = urlsplit(html.unescape(value.replace(AMP_SUBSTITUTE, "&")) if AMP_SUBSTITUTE in value else value)
        if parts.scheme or parts.netloc or value.startswith(("#", "/")) or not value:
            return value
        path = posixpath.normpath(posixpath.join(posixpath.dirname(self.page), parts.path))
        if path.endswith(".md"):  # a page: its URL, as MkDocs writes it
            stem = path[:-3]
            if self.layout.use_directory_urls:
                stem = stem[: -len("index")] if stem.endswith("index") else stem + "/"
            else:
                stem += ".html"
            path = stem
        suffix = (f"?{parts.query}" if parts.query else "") + (f"#{parts.fragment}" if parts.fragment else "")
        if not path and not self.base:  # the site's root (``../index.md``): "" would be the feed itself
            path = "./"
        return (self.base or "") + path + suffix


def entry_html(text: str, page: str, layout: Layout, base: str | None = None) -> str:
    """``text`` (an entry's markdown, as its page at docs path ``page`` shows it) as HTML, with the
    site's markdown extensions (:data:`~worklog_gen.site.settings.MARKDOWN_EXTENSIONS`) and its
    relative links made links from the feed (:class:`_LinksFromFeed`)."""
    md = markdown.Markdown(extensions=list(MARKDOWN_EXTENSIONS),
                           extension_configs={k: v for k, v in MARKDOWN_EXTENSIONS.items() if v})
    md.treeprocessors.register(_LinksFromFeed(md, page, layout, base), "worklog_feed_links", 0)
    return md.convert(text)

ATOM_NS = "http://www.w3.org/2005/Atom"


def _timestamp(day: dt.date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def _entry_id(site_key: str, entry: Entry) -> str:
    # Stable without a site URL: a name-based UUID (RFC 4122 version 5) of the site
    # and the entry's date, so that readers do not see an entry twice after a rebuild.
    return uuid.uuid5(uuid.NAMESPACE_URL, f"worklog-gen:{site_key}:{entry.slug}").urn


def atom_feed(log: Worklog, layout: Layout, *, title: str, site_url: str | None = None,
              author: str | None = None, bodies: dict[str, str] | None = None, sanitize: bool = False) -> bytes:
    """The feed as UTF-8 XML bytes: the :data:`FEED_LENGTH` newest pages, newest first.

    Args:
        log: the parsed log; ``log.entries`` in date order.
        layout: where the pages live (:class:`~worklog_gen.site.layout.Layout`); the feed is at
            :data:`~worklog_gen.site.layout.FEED`.
        title: feed title (the site name).
        site_url: the site's ``site_url``; when given, links and ids are absolute URLs.
        author: author name (``site_author``); ``title`` when not given, since Atom
            requires an author for the feed or for every entry.
        bodies: each page's text by entry slug, as the day pages show it
            (:func:`worklog_gen.site.pages.entry_body`; a day written in two files has both); by
            default each entry's own text.
        sanitize: the plugin's ``sanitize``: each entry's HTML through the sanitiser the pages go
            through (:func:`~worklog_gen.site.sanitize.safe_html`); links that run script are
            dropped either way.
    """
    base = site_url.rstrip("/") + "/" if site_url else None

    def href(path: str) -> str:
        if not path:  # the site's root (the worklog home of a site without a home page)
            return base or "./"
        return base + path if base else relative(path, FEED) + ("/" if path.endswith("/") else "")

    ET.register_namespace("", ATOM_NS)
    q = lambda tag: f"{{{ATOM_NS}}}{tag}"  # noqa: E731 - qualified tag name
    feed = ET.Element(q("feed"))
    ET.SubElement(feed, q("title")).text = title
    if log.target_date is not None:
        ET.SubElement(feed, q("subtitle")).text = f"Countdown to {log.target_date.isoformat()}"
    ET.SubElement(feed, q("id")).text = (
        base + FEED if base else uuid.uuid5(uuid.NAMESPACE_URL, f"worklog-gen:{title}").urn
    )
    newest = max((e.date for e in log.entries), default=None)
    ET.SubElement(feed, q("updated")).text = _timestamp(newest) if newest else "1970-01-01T00:00:00Z"
    ET.SubElement(ET.SubElement(feed, q("author")), q("name")).text = author or title
    ET.SubElement(feed, q("link"), rel="self", type="application/atom+xml", href=href(FEED))
    ET.SubElement(feed, q("link"), rel="alternate", type="text/html", href=href(layout.home_url))
    ET.SubElement(feed, q("generator")).text = "worklog-gen"
    seen: set[str] = set()
    for entry in sorted(log.entries, key=lambda e: e.date, reverse=True):
        if entry.slug in seen:  # a second source of a day shares its page, and its feed entry
            continue
        if len(seen) == FEED_LENGTH:
            break
        seen.add(entry.slug)
        item = ET.SubElement(feed, q("entry"))
        url = layout.entry_url(entry.slug)
        ET.SubElement(item, q("title")).text = entry_title(entry)
        ET.SubElement(item, q("id")).text = base + url if base else _entry_id(title, entry)
        ET.SubElement(item, q("updated")).text = _timestamp(entry.date)
        ET.SubElement(item, q("published")).text = _timestamp(entry.date)
        ET.SubElement(item, q("link"), rel="alternate", type="text/html", href=href(url))
        ET.SubElement(item, q("summary")).text = summary(entry)
        text = bodies[entry.slug] if bodies and entry.slug in bodies else commonmark_lists(entry.body)
        content = ET.SubElement(item, q("content"), type="html")
        content.text = safe_html(entry_html(text, layout.entry_page(entry.slug), layout, base), sanitize=sanitize)
    return ET.tostring(feed, encoding="utf-8", xml_declaration=True)
