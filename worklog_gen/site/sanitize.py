"""The HTML of the worklog's pages made safe for a reader, whoever wrote the log.

Two passes, :func:`safe_html`, over the HTML a reader gets: a worklog page's (the plugin's
``on_page_content``, for the pages under the worklog's ``url_prefix``), once the page is written
whole, its MathML, pictures and break points included, so that nothing written after it escapes
it; and each entry of the feed. For an engine that runs no MkDocs plugin (Zensical), the same
passes are a Python-Markdown extension, :class:`SafeHTMLExtension`, which ``worklog-gen generate``
names in the configuration it writes. Plain functions, so that tests need no MkDocs:

- :func:`drop_script_links`, always: an ``href`` or ``src`` (or ``action``, ``formaction``,
  ``xlink:href``) that runs script when followed (``javascript:``, ``vbscript:``) is removed from
  its tag, the tag kept. Browsers ignore case, ASCII whitespace and control characters in a URL's
  scheme and decode entities in attributes, so ``JaVa\\tScRiPt:`` and ``java&#9;script:`` count
  too (:func:`~worklog_gen.log.urls.is_script_url`). The parser warns at each such link's ``file:line``
  (:mod:`worklog_gen.log.markdown_scan`, code ``unsafe-link``).
- :func:`clean_html`, with the plugin's ``sanitize`` option: the whole page through the ``nh3``
  sanitiser (Rust's ammonia): only the elements and attributes markdown and the generated pages
  use (the MathML of :mod:`worklog_gen.site.math` included), links to ``http``, ``https``,
  ``mailto`` or relative targets only, no script, style or event handler. For a log whose text the
  site's owner does not write alone (a shared log that takes pull requests), where an entry's raw
  HTML is otherwise published as written.
"""

from __future__ import annotations

import re

from markdown.extensions import Extension
from markdown.postprocessors import Postprocessor

from worklog_gen.log.urls import tags_with_script_urls, url_scheme
from worklog_gen.site.math import MATHML_ATTRIBUTES, MATHML_ELEMENTS

ALLOWED_TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "input", "ins", "kbd", "label",
    "li", "mark",
    "ol", "p", "picture", "pre", "s", "small", "source", "span", "strong", "sub", "summary", "sup", "table",
    "tbody", "td", "tfoot", "th", "thead", "tr", "ul", "wbr",
}) | MATHML_ELEMENTS  # fmt: skip
"""Elements :func:`clean_html` keeps: what Python-Markdown and the extensions the site uses write
(tables, footnotes, admonitions, folds, figures, highlighted code), and what the plugin writes into
a page after them (a formula's MathML, a chart's ``<picture>``, a long name's ``<wbr>``); nothing that
runs or embeds."""
ALLOWED_ATTRIBUTES = {
    "*": {"class", "id", "title"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height", "loading"},
    "input": {"checked", "aria-label"},  # a task list's checkbox (always one: INPUT_ATTRIBUTES)
    "ol": {"start"},
    "td": {"align", "colspan", "rowspan"},
    "th": {"align", "colspan", "rowspan"},
    "details": {"open"},
    "source": {"srcset", "media", "type", "width", "height"},
    **{tag: MATHML_ATTRIBUTES for tag in MATHML_ELEMENTS},
}
"""Attributes :func:`clean_html` keeps, per element (``*``: on every kept element)."""
INPUT_ATTRIBUTES = {"type": "checkbox", "disabled": ""}
"""Set on every ``<input>`` :func:`clean_html` keeps: a task list's checkbox, as
``pymdownx.tasklist`` writes it, reads as one; any other input becomes a disabled checkbox."""
URL_SCHEMES = frozenset({"http", "https", "mailto"})
"""Schemes a link or image may have after :func:`clean_html`; relative URLs are kept too."""


def safe_html(html: str, *, sanitize: bool) -> str:
    """``html`` as a reader gets it: without links that run script (:func:`drop_script_links`),
    and through :func:`clean_html` when ``sanitize`` (the plugin's option). The last step of a page:
    what is written into the HTML after it is not checked."""
    html, _ = drop_script_links(html)
    return clean_html(html) if sanitize else html


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
    ``style`` dropped); a ``srcset``, whose URLs nh3 does not read, is kept only when each of its
    images is relative or :data:`URL_SCHEMES`' (:func:`_srcset`). Comments are removed."""
    import nh3

    return nh3.clean(html, tags=set(ALLOWED_TAGS), attributes={k: set(v) for k, v in ALLOWED_ATTRIBUTES.items()},
                     url_schemes=set(URL_SCHEMES), link_rel=None, attribute_filter=_srcset,
                     set_tag_attribute_values={"input": dict(INPUT_ATTRIBUTES)})


def _srcset(element: str, attribute: str, value: str) -> str | None:
    """nh3's attribute filter: ``value`` as it is, unless it is a ``srcset`` with an image whose URL
    has a scheme (:func:`~worklog_gen.log.urls.url_scheme`) outside :data:`URL_SCHEMES`; then
    ``None``, which drops it."""
    if attribute != "srcset":
        return value
    schemes = {url_scheme(candidate.strip().split(" ")[0]) for candidate in value.split(",")}
    return value if schemes <= {"", *URL_SCHEMES} else None


SANITIZE_MARK = "<!-- worklog-gen: sanitize -->"
"""The line that asks :class:`SafeHTMLExtension` to sanitise a page (:func:`marked`). Only the
generator writes it, at the top of each worklog page; written anywhere else, it only turns the
sanitiser on, never off."""


def marked(page: str) -> str:
    """A page's markdown with :data:`SANITIZE_MARK` as its first block, after its front matter, before
    any of the author's text (which could otherwise hide it in an unclosed code block)."""
    end = page.index("\n---\n", 4) + len("\n---\n") if page.startswith("---\n") else 0
    return f"{page[:end]}{SANITIZE_MARK}\n\n{page[end:].lstrip(chr(10))}"


class SafeHTMLExtension(Extension):
    """Python-Markdown extension ``worklog_gen.site.sanitize``: a page that holds :data:`SANITIZE_MARK`
    is rendered, then passed whole through :func:`safe_html` with ``sanitize`` on (which removes the
    mark, a comment), as the plugin's ``on_page_content`` passes a worklog page. For an engine that
    runs Python-Markdown but no MkDocs plugin (Zensical): ``worklog-gen generate`` names it in the
    ``mkdocs.yml`` it writes when ``sanitize`` is on."""

    def extendMarkdown(self, md) -> None:
        md.postprocessors.register(_Sanitised(md), "worklog_sanitize", -1000)  # below every other: last


class _Sanitised(Postprocessor):
    def run(self, text: str) -> str:
        return safe_html(text, sanitize=True) if SANITIZE_MARK in text else text


def makeExtension(**kwargs) -> SafeHTMLExtension:  # noqa: N802 - the name Python-Markdown looks up
    """The extension, as Python-Markdown loads it by the module's name."""
    return SafeHTMLExtension(**kwargs)
