"""Where a long identifier in inline code may break: after its dots and underscores.

``torch.nn.functional.scaled_dot_product_attention`` is wider than a phone's column, and the
browser would otherwise break it inside a word (the theme lets inline code wrap anywhere). A
``<wbr>`` after each dot and underscore offers those places first. Done at build time, so it
needs no JavaScript.
"""

from __future__ import annotations

import re

MIN_LENGTH = 24
"""Inline code this long or longer, made of one identifier (letters, digits, ``_`` and ``.``)."""
_INLINE = re.compile(r"(<pre\b[^>]*>)?<code>([\w.]{%d,})</code>" % MIN_LENGTH)
_AFTER_SEPARATOR = re.compile(r"([^._][._]+)(?=[^._])")  # not after a leading run


def break_long_names(page_html: str) -> str:
    """``page_html`` with a ``<wbr>`` after each dot and underscore of every inline ``<code>``
    that holds one identifier of :data:`MIN_LENGTH` characters or more, and nothing else (no
    markup inside). Code blocks (``<pre><code>``) are left as they are. Never raises."""
    def wrap(match: re.Match) -> str:
        if match.group(1):
            return match.group(0)
        return "<code>" + _AFTER_SEPARATOR.sub(r"\1<wbr>", match.group(2)) + "</code>"
    return _INLINE.sub(wrap, page_html)
