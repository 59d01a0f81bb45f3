"""Root-relative links written for the site the log came from: rewritten to
``old_site_url`` when it is set, otherwise kept as inline HTML and listed in one
message (see :class:`OldSiteLinks`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from worklog_gen.log.model import Link
from worklog_gen.site.markup import html_link, inline_links, link_definitions

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
        urls = [link.url for link in old]
        inline = inline_links(urls)
        if self.base_url:
            markdown = inline.sub(
                lambda m: f"{m['bang']}[{m['text']}]({self.href(m['url'])}{m['title'] or ''})", markdown
            )
            return link_definitions(urls).sub(lambda m: m[1] + self.href(m[2]), markdown)
        self.kept.extend((path, link.line, link.url) for link in old)
        return inline.sub(lambda m: html_link(m["bang"], m["text"], m["url"]), markdown)

    def link(self, title_markdown: str, url: str) -> str:
        """A link for generated lists (reading list, a day's links): markdown, or the
        same inline HTML as :meth:`rewrite` for a kept old-site link."""
        if not is_root_relative(url) or self.base_url:
            return f"[{title_markdown}](<{self.href(url)}>)"
        return html_link("", title_markdown, url)

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
