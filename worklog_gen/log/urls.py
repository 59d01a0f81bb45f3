"""URLs in the author's text that run script when a reader follows them (``javascript:``): in raw
HTML's attributes, and in the attributes Python-Markdown's ``attr_list`` sets (``{: href="..."}``).

Read by the parser, which warns at each one's ``file:line`` (:mod:`worklog_gen.log.markdown_scan`),
and by :mod:`worklog_gen.site.sanitize`, which drops them from the pages.
"""

from __future__ import annotations

import html as html_lib
import re
from html.parser import HTMLParser

SCRIPT_SCHEMES = ("javascript:", "vbscript:")
"""URL schemes that run script when a link is followed (WHATWG URL: ``javascript:``; old IE: ``vbscript:``)."""
URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "xlink:href"})
"""Attributes that hold a URL a reader's browser follows or loads."""
_ATTR_LIST = re.compile(r"(?<!\\)\{:?[ ]*")
"""Where Python-Markdown's ``attr_list`` starts reading attributes: ``{:`` or ``{``, not escaped."""
_SCHEME = re.compile(r"([a-z][a-z0-9+.-]*):")
_IGNORED_IN_SCHEME = re.compile(r"[\x00-\x20\x7f]+")
"""What browsers drop from a URL before reading its scheme: ASCII whitespace and control characters
(WHATWG URL parser: leading C0 controls and spaces, and every tab and newline)."""


def is_script_url(url: str) -> bool:
    """Whether following ``url`` (an attribute's value, entities decoded or not) would run script:
    its scheme, read as a browser reads it (case, whitespace and control characters ignored), is one
    of :data:`SCRIPT_SCHEMES`."""
    plain = _IGNORED_IN_SCHEME.sub("", html_lib.unescape(url)).lower()
    return plain.startswith(SCRIPT_SCHEMES)


def url_scheme(url: str) -> str:
    """``url``'s scheme (an attribute's value, entities decoded or not) as a browser reads it: case,
    whitespace and control characters ignored, lowercase, without its ``:``; ``""`` for a relative URL."""
    plain = _IGNORED_IN_SCHEME.sub("", html_lib.unescape(url)).lower()
    scheme = _SCHEME.match(plain)
    return scheme.group(1) if scheme else ""


def script_urls(html: str) -> list[tuple[int, str]]:
    """``(line, url)`` of each URL attribute of the tags in ``html`` (1-based lines of ``html``) that
    :func:`is_script_url` says runs script."""
    return [(line, value) for line, _, _, _, bad in tags_with_script_urls(html) for value in bad]


def attr_list_script_urls(text: str) -> list[str]:
    """The URL attributes (:data:`URL_ATTRIBUTES`) that Python-Markdown's ``attr_list`` would set from
    ``{: href="..."}`` in ``text`` (one line of markdown text, outside code and raw HTML) and that
    :func:`is_script_url` says run script. The attributes are read by ``attr_list``'s own scanner,
    so that they are read as the renderer reads them."""
    try:
        from markdown.extensions.attr_list import get_attrs_and_remainder
    except ImportError:  # Python-Markdown before 3.6
        from markdown.extensions.attr_list import get_attrs

        get_attrs_and_remainder = lambda s: (get_attrs(s), "")  # noqa: E731
    found = []
    for start in _ATTR_LIST.finditer(text):
        attrs, _ = get_attrs_and_remainder(text[start.end():])
        found += [v for k, v in attrs if k in URL_ATTRIBUTES and v is not None and is_script_url(v)]
    return found


class _ScriptURLs(HTMLParser):
    """Start tags with a URL attribute that runs script: ``(line, column, raw text, the tag rebuilt
    without it, the values removed)``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, int, str, str, list[str]]] = []

    def handle_starttag(self, tag, attrs, end=">"):
        bad = [v for k, v in attrs if k in URL_ATTRIBUTES and v is not None and is_script_url(v)]
        if not bad:
            return
        raw = self.get_starttag_text() or ""
        kept = "".join(f' {k}="{html_lib.escape(v)}"' if v is not None else f" {k}" for k, v in attrs
                       if not (k in URL_ATTRIBUTES and v is not None and is_script_url(v)))
        line, col = self.getpos()
        self.found.append((line, col, raw, f"<{tag}{kept}{end}", bad))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs, end=" />")


def tags_with_script_urls(html: str) -> list[tuple[int, int, str, str, list[str]]]:
    """The start tags of ``html`` with a URL attribute that runs script: ``(line, column, the tag as
    written, the tag rebuilt without those attributes, their values)``, lines 1-based, columns 0-based."""
    if ":" not in html:
        return []
    parser = _ScriptURLs()
    parser.feed(html)
    parser.close()
    return parser.found
