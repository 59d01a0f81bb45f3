"""The HTML of the worklog's pages made safe for a reader, whoever wrote the log.

Two passes over a page's HTML as MkDocs rendered it (the plugin's ``on_page_content``, for the
pages under the worklog's ``url_prefix``); plain functions, so that tests need no MkDocs:

- :func:`drop_script_links`, always: an ``href`` or ``src`` (or ``action``, ``formaction``,
  ``xlink:href``) that runs script when followed (``javascript:``, ``vbscript:``) is removed from
  its tag, the tag kept. Browsers ignore case, ASCII whitespace and control characters in a URL's
  scheme and decode entities in attributes, so ``JaVa\\tScRiPt:`` and ``java&#9;script:`` count
  too (:func:`~worklog_gen.log.urls.is_script_url`). The parser warns at each such link's ``file:line``
  (:mod:`worklog_gen.log.markdown_scan`, code ``unsafe-link``).
- :func:`clean_html`, with the plugin's ``sanitize`` option: the whole page through the ``nh3``
  sanitiser (Rust's ammonia): only the elements and attributes markdown and the generated pages
  use, links to ``http``, ``https``, ``mailto`` or relative targets only, no script, style or
  event handler. For a log whose text the site's owner does not write alone (a shared log that
  takes pull requests), where an entry's raw HTML is otherwise published as written.
"""

from __future__ import annotations

import re

from worklog_gen.log.urls import tags_with_script_urls

ALLOWED_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark",
    "ol", "p", "pre", "s", "small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot",
    "th", "thead", "tr", "ul",
})  # fmt: skip
"""Elements :func:`clean_html` keeps: what Python-Markdown and the extensions the site uses write
(tables, footnotes, admonitions, folds, figures, highlighted code), nothing that runs or embeds."""
ALLOWED_ATTRIBUTES = {
    "*": {"class", "id", "title"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height", "loading"},
    "ol": {"start"},
    "td": {"align", "colspan", "rowspan"},
    "th": {"align", "colspan", "rowspan"},
    "details": {"open"},
}
"""Attributes :func:`clean_html` keeps, per element (``*``: on every kept element)."""
URL_SCHEMES = frozenset({"http", "https", "mailto"})
"""Schemes a link or image may have after :func:`clean_html`; relative URLs are kept too."""


def drop_script_links(html: str) -> tuple[str, int]:
    """``html`` with every URL attribute that runs script (:func:`~worklog_gen.log.urls.is_script_url`)
    removed from its tag, and how many were removed. Tags without one are left byte for byte as they were."""
    found = tags_with_script_urls(html)
    if not found:
        return html, 0
    starts = [0] + [m.end() for m in re.finditer("\n", html)]
    out, at, dropped = [], 0, 0
    for line, col, raw, rebuilt, bad in found:
        begin = starts[line - 1] + col
        out += [html[at:begin], rebuilt]
        at = begin + len(raw)
        dropped += len(bad)
    out.append(html[at:])
    return "".join(out), dropped


def clean_html(html: str) -> str:
    """``html`` through the ``nh3`` sanitiser with :data:`ALLOWED_TAGS`, :data:`ALLOWED_ATTRIBUTES`
    and :data:`URL_SCHEMES`: anything else (``<script>``, ``<iframe>``, ``style``, ``onerror``, a
    ``data:`` image) is removed, the text inside a removed element kept (that of ``script`` and
    ``style`` dropped). Comments are removed."""
    import nh3

    return nh3.clean(html, tags=set(ALLOWED_TAGS), attributes={k: set(v) for k, v in ALLOWED_ATTRIBUTES.items()},
                     url_schemes=set(URL_SCHEMES), link_rel=None)


