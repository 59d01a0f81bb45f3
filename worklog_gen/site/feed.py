"""An Atom feed of the log's entries (RFC 4287), built with ``xml.etree.ElementTree``.

Each entry gets its page's title and link, its date as ``updated`` and
``published`` (midnight UTC: the log records days, not times) and its one-line
summary. Links are absolute when the site's ``site_url`` is known; otherwise they
are relative to the feed's own URL (``feed.xml`` at the site root), which RFC 4287
allows (relative references resolve against the document's URI).
"""

from __future__ import annotations

import datetime as dt
import uuid
import xml.etree.ElementTree as ET

from worklog_gen.site.layout import FEED, Layout, relative
from worklog_gen.site.pages import entry_title, summary
from worklog_gen.log.model import Entry, Worklog

ATOM_NS = "http://www.w3.org/2005/Atom"


def _timestamp(day: dt.date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def _entry_id(site_key: str, entry: Entry) -> str:
    # Stable without a site URL: a name-based UUID (RFC 4122 version 5) of the site
    # and the entry's date, so that readers do not see an entry twice after a rebuild.
    return uuid.uuid5(uuid.NAMESPACE_URL, f"worklog-gen:{site_key}:{entry.slug}").urn


def atom_feed(log: Worklog, layout: Layout, *, title: str, site_url: str | None = None,
              author: str | None = None) -> bytes:
    """The feed as UTF-8 XML bytes, newest entry first.

    Args:
        log: the parsed log; ``log.entries`` in date order.
        layout: where the pages live (:class:`~worklog_gen.site.layout.Layout`); the feed is at
            :data:`~worklog_gen.site.layout.FEED`.
        title: feed title (the site name).
        site_url: the site's ``site_url``; when given, links and ids are absolute URLs.
        author: author name (``site_author``); ``title`` when not given, since Atom
            requires an author for the feed or for every entry.
    """
    base = site_url.rstrip("/") + "/" if site_url else None

    def href(path: str) -> str:
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
        seen.add(entry.slug)
        item = ET.SubElement(feed, q("entry"))
        url = layout.entry_url(entry.slug)
        ET.SubElement(item, q("title")).text = entry_title(entry)
        ET.SubElement(item, q("id")).text = base + url if base else _entry_id(title, entry)
        ET.SubElement(item, q("updated")).text = _timestamp(entry.date)
        ET.SubElement(item, q("published")).text = _timestamp(entry.date)
        ET.SubElement(item, q("link"), rel="alternate", type="text/html", href=href(url))
        ET.SubElement(item, q("summary")).text = summary(entry)
    return ET.tostring(feed, encoding="utf-8", xml_declaration=True)
