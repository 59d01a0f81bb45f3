"""Markdown text helpers for the generated pages: literal text escaped for a
markdown line, lists rewritten so that Python-Markdown (MkDocs) reads them as
CommonMark does, and headings moved deeper to nest under a page's own."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

from markdown_it import MarkdownIt

from worklog_gen.log.repair import edit_outside_code

_MD = MarkdownIt("commonmark").disable("inline")  # block structure only: half the parse time

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}])")
_INLINE = MarkdownIt("commonmark")


def md_escape(text: str, *, table: bool = False) -> str:
    """``text`` as literal markdown inside a line: inline markup escaped with
    backslashes, ``<`` and ``&`` as entities, ``|`` escaped in table cells and
    newlines folded to spaces."""
    text = _literal(" ".join(text.split()))
    return text.replace("|", r"\|") if table else text


def _literal(text: str) -> str:
    """``text`` with inline markup escaped and ``<``, ``&`` as entities (spacing kept)."""
    return _MD_SPECIAL.sub(r"\\\1", text.replace("&", "&amp;").replace("<", "&lt;"))


def inline_text(text: str) -> str:
    """``text``, one line of an entry's markdown (a task's), as markdown safe to set inside a
    generated line: its code spans and emphasis kept, each link or image as its text (its target
    was written relative to the entry's own file), everything else literal (:func:`md_escape`).
    So ``Port `tl.dot` to [wgmma](notes.md)`` reads as "Port ``tl.dot`` to wgmma" wherever
    it is listed. The inline structure comes from markdown-it-py (CommonMark)."""
    out: list[str] = []
    for token in _INLINE.parseInline(" ".join(text.split()))[0].children or []:
        if token.type == "code_inline":
            ticks = "`" * (max((len(r) for r in re.findall("`+", token.content)), default=0) + 1)
            pad = " " if token.content.startswith("`") or token.content.endswith("`") else ""
            out.append(f"{ticks}{pad}{token.content}{pad}{ticks}")
        elif token.type in ("em_open", "em_close", "strong_open", "strong_close"):
            out.append(token.markup if token.markup[0] == "*" else "*" * len(token.markup))
        elif token.type in ("text", "html_inline", "image"):
            out.append(_literal(token.content))
        elif token.type in ("softbreak", "hardbreak"):
            out.append(" ")
    return "".join(out).strip()


def inline_links(urls: Iterable[str]) -> re.Pattern:
    """Inline links and images to one of ``urls``, as written: ``[text](url "title")``,
    ``![alt](<url>)``; groups ``bang`` (``!`` for an image), ``text``, ``url`` and ``title``."""
    alternatives = "|".join(re.escape(u) for u in sorted(set(urls), key=len, reverse=True))
    return re.compile(
        r"(?P<bang>!?)\[(?P<text>(?:\\.|[^\[\]\\]|\[(?:\\.|[^\[\]\\])*\])*)\]"
        rf"\(\s*<?(?P<url>{alternatives})>?(?P<title>\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)"
    )


def link_definitions(urls: Iterable[str]) -> re.Pattern:
    """Link reference definitions (``[r]: url``) of one of ``urls``: group 1 is what comes
    before the URL, group 2 the URL."""
    alternatives = "|".join(re.escape(u) for u in sorted(set(urls), key=len, reverse=True))
    return re.compile(rf"^( {{0,3}}\[[^\]]+\]:[ \t]*<?)({alternatives})(?=>?(?:\s|$))", re.MULTILINE)


def html_link(bang: str, text: str, url: str) -> str:
    """A link (or, with ``bang`` ``"!"``, an image) as inline HTML, which MkDocs passes on
    without checking its target; ``text`` is markdown for a link, plain alt text for an image."""
    href = html.escape(url)
    if bang:
        return f'<img src="{href}" alt="{html.escape(text)}">'
    return f'<a href="{href}">{text}</a>'


_LIST_MARKER = re.compile(r"^([ \t]*)(?:[-+*]|\d{1,9}[.)])(?:[ \t]+|$)")


def commonmark_lists(markdown: str) -> str:
    """``markdown`` with its lists meaning to Python-Markdown (MkDocs) what they mean
    in CommonMark, the dialect the log is parsed in and was written for.

    Python-Markdown differs in two ways that flatten the log's notes: a list cannot
    interrupt a paragraph (``notes;`` then ``- item`` on the next line), and a list
    item's content must be indented 4 columns, where CommonMark takes the marker's
    width (``- `` is 2). So a blank line is added before a list that follows a
    paragraph line, and each item's indented lines are shifted so that its content
    starts 4 columns after its marker's indentation. Only whitespace changes; lists
    inside block quotes are left alone. Structure comes from markdown-it-py.
    """
    lines = markdown.split("\n")
    blank_before: list[int] = []
    quote_depth = 0
    for token in _MD.parse(markdown):
        if token.type == "blockquote_open":
            quote_depth += 1
        elif token.type == "blockquote_close":
            quote_depth -= 1
        if quote_depth or token.map is None:
            continue
        start, end = token.map
        if token.type in ("bullet_list_open", "ordered_list_open") and token.level == 0:
            if start > 0 and lines[start - 1].strip():
                blank_before.append(start)
        elif token.type == "list_item_open":
            marker = _LIST_MARKER.match(lines[start])
            if marker is None:
                continue
            indent = len(marker[1].expandtabs(4))
            content = len(marker[0].expandtabs(4))
            shift = indent + 4 - content
            if shift == 0:
                continue
            for i in range(start + 1, end):
                line = lines[i].expandtabs(4)
                if len(line) - len(line.lstrip(" ")) >= content and line.strip():
                    lines[i] = " " * shift + line if shift > 0 else line[-shift:]
    for i in reversed(blank_before):
        lines.insert(i, "")
    return "\n".join(lines)


_HTML_BLOCK_OPEN = re.compile(r"^( {0,3}<(?:details|div)\b)(?![^>]*\bmarkdown=)(?=[^>]*>)", re.IGNORECASE)
"""An opening ``<details>`` or ``<div>`` tag that starts a line, with no ``markdown=`` attribute."""


def markdown_in_html_blocks(markdown: str) -> str:
    """``markdown`` with each ``<details>`` and ``<div>`` that starts a line (outside fenced code)
    marked ``markdown="1"``, so that Python-Markdown (``md_in_html``) reads the markdown inside it,
    as CommonMark and GitHub read what follows a blank line after such a tag: a collapsed section
    (``<details><summary>Profiler output</summary>``, a blank line, then a list) shows its list,
    not ``- **kernel A**`` as text. ``md_in_html`` drops the attribute from the page."""
    return edit_outside_code(markdown, lambda line, spans: _HTML_BLOCK_OPEN.sub(r'\1 markdown="1"', line, count=1), "<")


def shift_headings(body: str, levels: int) -> str:
    """``body`` with every heading ``levels`` deeper (at most ``######``), so that it
    nests under its entry's heading; setext headings become ATX. Headings are found
    with markdown-it-py, so ``#`` lines inside code blocks are left alone; headings
    inside lists and quotes are left alone too."""
    lines = body.split("\n")
    for token in _MD.parse(body):
        if token.type != "heading_open" or token.map is None or token.level != 0:
            continue
        start, end = token.map
        depth = min(6, int(token.tag[1]) + levels)
        if token.markup.startswith("#"):
            lines[start] = "#" * depth + " " + lines[start].lstrip(" ").lstrip("#").lstrip()
        else:  # setext: text lines, then an underline of = or -
            text = " ".join(line.strip() for line in lines[start : end - 1])
            lines[start : end] = ["#" * depth + " " + text] + [None] * (end - start - 1)
    return "\n".join(line for line in lines if line is not None)
