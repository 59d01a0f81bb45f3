"""Every path and URL the site generates, built here and nowhere else.

As Material's tags and blog plugins route every generated path through one family of
functions, pages, the feed, the export, the nav and the plugin ask :class:`Layout` where a
page lives. Paths are *docs paths* (relative to the docs folder, ``worklog/2025-12-09.md``);
URLs are relative to the site root, as MkDocs writes them with ``use_directory_urls``
(``worklog/2025-12-09/``) or without it (``worklog/2025-12-09.html``).

Layout under the site root::

    <url_prefix>/index.md            the worklog home (index.md, the site's root, when the
                                     site has no home page of its own)
    <url_prefix>/reading-list.md     every link
    <url_prefix>/tasks.md            the task report
    <url_prefix>/tags.md             a post's tags (when any entry has tags)
    <url_prefix>/<year>.md           a year's days by month (in the nav, newest year first)
    <url_prefix>/<slug>.md           a day's page, out of the nav: the year pages, the home's
                                     timeline and the day pages themselves link it (<slug>/
                                     beside it holds a post's images)
    <url_prefix>/words-per-day.*     the heatmap's chart files
    topics/<id>.md                   a topic page (topics/<id>/ holds its files)
    kernels.md                       every notebook's headline figures and roofline
    feed.xml                         the Atom feed
"""

from __future__ import annotations

import datetime as dt
import posixpath
from dataclasses import dataclass

KERNELS_PAGE = "kernels.md"
FEED = "feed.xml"
"""At the site root: Material fetches ``sitemap.xml`` beside every ``<link rel="alternate">``
of a page (it reads them as translations of the site); beside a feed in a folder, that
request would 404 on every page load."""
HEATMAP = "words-per-day"
"""Stem of the heatmap's chart files, beside the worklog home."""


def prefix_of(url_prefix: str) -> str:
    """``url_prefix`` without surrounding slashes (``"/worklog/"`` -> ``"worklog"``)."""
    return url_prefix.strip("/")


def relative(target: str, from_src: str) -> str:
    """Relative link from one docs path to another (``../topics/x.md``)."""
    return posixpath.relpath(target, posixpath.dirname(from_src) or ".")


def topic_page(topic_id: str) -> str:
    """``topics/<id>.md``."""
    return f"topics/{topic_id}.md"


def topic_files(topic_id: str) -> str:
    """The folder of a topic page's files (images, charts, downloads), relative to the page's
    own folder: ``<id>`` (so ``topics/<id>/``)."""
    return topic_id


@dataclass(frozen=True)
class Layout:
    """Where the worklog's pages live, for the plugin's ``url_prefix`` and MkDocs'
    ``use_directory_urls``."""

    url_prefix: str = "worklog"
    use_directory_urls: bool = True
    home_at_root: bool = False
    """The worklog home is the site's own ``index.md`` (a site with no home page of its own)."""

    @property
    def prefix(self) -> str:
        return prefix_of(self.url_prefix)

    def page(self, name: str) -> str:
        """A worklog page by file name: ``page("tasks.md")`` is ``worklog/tasks.md``."""
        return f"{self.prefix}/{name}"

    @property
    def home(self) -> str:
        return "index.md" if self.home_at_root else self.page("index.md")

    @property
    def reading_list(self) -> str:
        return self.page("reading-list.md")

    @property
    def tasks(self) -> str:
        return self.page("tasks.md")

    @property
    def tags(self) -> str:
        return self.page("tags.md")

    @property
    def heatmap(self) -> str:
        """Stem of the heatmap's chart files (``worklog/words-per-day``)."""
        return self.page(HEATMAP)

    def year_page(self, year: int) -> str:
        """Docs path of a year's page, which lists its days by month: ``worklog/2025.md``."""
        return self.page(f"{year}.md")

    @staticmethod
    def month_anchor(day: dt.date) -> str:
        """The anchor of a month's heading on its year page: ``2025-12`` (set with ``attr_list``,
        so no ``toc`` setting changes it)."""
        return f"{day:%Y-%m}"

    def month_link(self, day: dt.date, from_src: str) -> str:
        """Relative link from a page to the month of ``day`` on its year page: ``2025.md#2025-12``."""
        return f"{relative(self.year_page(day.year), from_src)}#{self.month_anchor(day)}"

    @property
    def entry_pages_pattern(self) -> str:
        """The day pages as a gitignore-style pattern of MkDocs' ``not_in_nav`` (every slug
        starts with its ISO date): ``/worklog/[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*.md``."""
        return "/" + self.page("[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*.md")

    def entry_page(self, slug: str) -> str:
        """Docs path of an entry's page: ``worklog/2025-12-09.md``."""
        return self.page(f"{slug}.md")

    def entry_url(self, slug: str) -> str:
        """URL of an entry's page relative to the site root: ``worklog/2025-12-09/`` (with
        directory URLs, ``worklog/2025-12-09.html`` without)."""
        return self.page(f"{slug}/" if self.use_directory_urls else f"{slug}.html")

    def day_href(self, day: dt.date) -> str:
        """The final URL of a day's page relative to the worklog home's URL (for raw HTML and
        chart links, which MkDocs does not rewrite)."""
        page = f"{day.isoformat()}/" if self.use_directory_urls else f"{day.isoformat()}.html"
        return f"{self.prefix}/{page}" if self.home_at_root else page

    @property
    def home_url(self) -> str:
        """The worklog home's URL relative to the site root (``worklog/``; ``""`` at the root)."""
        return "" if self.home_at_root else f"{self.prefix}/"
