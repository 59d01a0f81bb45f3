"""Find the links, the prose and the code of an entry body with markdown-it-py.

Each entry body is read as a markdown document of its own (CommonMark, plus GFM
tables and strikethrough), in one markdown-it-py parse, and everything below is read
from its tokens:

**Links** are inline links, reference links (definitions from the same entry),
autolinks (``<https://…>``) and bare URLs in the text (``read https://… today``,
``www.…``: GFM's extended autolinks, found by linkify-it-py), the last two titled with the
URL. A bare URL is one that starts with ``http://``, ``https://``, ``ftp://`` or ``www.``, as
``pymdownx.magiclink`` links it on the page; a bare domain (``example.com``) or e-mail address
is text. Links in code spans and code blocks are not links; nor are links with an empty
target. Each occurrence counts, with its exact source line. URLs are kept as written (not
percent-encoded).

**Prose** is the text markdown-it-py finds in paragraphs, headings, lists, quotes and
tables, including link text; its words are counted with
:func:`worklog_gen.log.words.count_words`. Code spans, code blocks, HTML, autolinks, bare URLs
and markdown syntax are not prose.

**Code lines** (fenced and indented code blocks, HTML blocks) are reported so that
:mod:`worklog_gen.log.tasks` skips them.

**Script links**: a link, a URL attribute of raw HTML, or one set with ``attr_list``
(``{: href="..."}`` in the text), that runs script when followed (``javascript:``, however it is
spelled: :func:`worklog_gen.log.urls.is_script_url`) is no link: it is reported apart, with its
line, for the parser to warn and the site to drop.
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple

from markdown_it import MarkdownIt
from markdown_it.token import Token

from worklog_gen.log.model import Link
from worklog_gen.log.urls import attr_list_script_urls, is_script_url, script_urls
from worklog_gen.log.words import count_words

_CODE_TOKENS = frozenset({"fence", "code_block", "html_block"})
BARE_URL_STARTS = ("http://", "https://", "ftp://", "www.")
"""How a bare URL that counts as a link starts (case aside): those ``pymdownx.magiclink`` links
on the page. linkify-it-py also finds bare domains and e-mail addresses, which stay text."""
_NEWLINE = re.compile("\n")


class Scan(NamedTuple):
    """What :func:`scan` finds in one entry body."""

    links: list[Link]
    """Links, sorted by source line."""
    words: int
    """Words of the prose (see the module docstring)."""
    code_lines: set[int]
    """0-based indices, within the body, of the lines inside code blocks or HTML blocks."""
    script_links: list[Link]
    """Links and raw HTML URLs that run script (``javascript:``), with their lines; not in :attr:`links`."""
    images: list[Link]
    """Images (``![alt](src)``, inline or by reference): the alt text as ``title``, ``src`` as ``url``,
    sorted by source line; not in :attr:`links`."""


def scan(body: str, first_line: int) -> Scan:
    """Links, words and code lines of one entry ``body`` whose first line is line
    ``first_line`` (1-based) of its file. Never raises on content."""
    code_lines: set[int] = set()
    prose: list[str] = []
    links: list[Link] = []
    images: list[Link] = []
    for tok in _markdown().parse(body, {}):
        if tok.type in _CODE_TOKENS and tok.map:
            code_lines.update(range(*tok.map))
            if tok.type == "html_block":
                links += [Link("", url, first_line + tok.map[0] + line - 1) for line, url in script_urls(tok.content)]
        elif tok.type == "inline" and tok.map:
            text, found, pictures = _inline(tok.children or [], tok.content, first_line + tok.map[0])
            prose.append(text)
            links += found
            images += pictures
            if "{" in tok.content:
                links += _attr_lists(tok.children or [], tok.content, first_line + tok.map[0])
    links.sort(key=lambda link: link.line)
    script = [link for link in links if is_script_url(link.url)]
    return Scan([link for link in links if not is_script_url(link.url)], count_words("\n".join(prose)), code_lines,
                script, [image for image in images if not is_script_url(image.url)])


def _inline(children: list[Token], content: str, first_line: int) -> tuple[str, list[Link], list[Link]]:
    """The prose (text whose words count), the links and the images of one block's inline tokens
    ``children``, parsed from ``content`` whose first line is ``first_line`` (1-based)."""
    pieces: list[str] = []
    found: list[Link] = []
    images: list[Link] = []
    newlines: list[int] | None = None  # where each line of ``content`` ends, found once, at the first link
    title: list[str] | None = None
    link_open = None
    bare = False  # in an autolink or a bare URL: its text is the URL, not prose
    searched = 0  # where the last bare URL found without a position was found in ``content``
    for i, child in enumerate(children):
        kind = child.type
        if kind == "link_open":
            if child.markup == "linkify" and not _counts_as_bare_url(children, i):
                continue  # a bare domain, an e-mail address, or the start of a broken link: its text stays prose
            link_open, title, bare = child, [], child.markup in ("autolink", "linkify")
            pieces.append(" ")
        elif kind == "link_close" and link_open is not None:
            href = link_open.attrGet("href")
            text = "".join(title)
            if href:
                pos = link_open.meta.get("src_pos")
                if pos is None:  # a www. link, found after the inline rules by the core linkify rule
                    pos = max(content.find(text, searched), 0)
                    searched = pos + len(text)
                if newlines is None:
                    newlines = [m.start() for m in _NEWLINE.finditer(content)]
                line = first_line + bisect.bisect_left(newlines, pos)  # newlines before pos
                found.append(Link(" ".join(text.split()), str(href), line))
            link_open, title, bare = None, None, False
            pieces.append(" ")
        elif kind == "link_close":
            continue
        elif kind in ("text", "text_special"):
            if title is not None:
                title.append(child.content)
            if not bare:
                pieces.append(child.content)
        elif kind in ("softbreak", "hardbreak"):
            if title is not None:
                title.append(" ")
            pieces.append("\n")
        elif kind in ("code_inline", "image"):
            if title is not None:
                title.append(child.content)
            pieces.append(" ")
            if kind == "image" and (src := child.attrGet("src")):
                if newlines is None:
                    newlines = [m.start() for m in _NEWLINE.finditer(content)]
                line = first_line + bisect.bisect_left(newlines, child.meta.get("src_pos", 0))
                images.append(Link(" ".join(child.content.split()), str(src), line))
        elif kind == "html_inline":
            pieces.append(" ")
            if ":" in child.content:  # a tag such as <a href="javascript:...">
                if newlines is None:
                    newlines = [m.start() for m in _NEWLINE.finditer(content)]
                line = first_line + bisect.bisect_left(newlines, child.meta.get("src_pos", 0))
                found += [Link("", url, line + n - 1) for n, url in script_urls(child.content)]
    return "".join(pieces), found, images


def _counts_as_bare_url(children: list[Token], i: int) -> bool:
    """Whether the bare URL that linkify-it-py found at ``children[i]`` (its ``link_open``) is
    written with a :data:`BARE_URL_STARTS` prefix (its text is the next token) and is not the
    destination of a link that CommonMark did not take (the text just before it ends in ``](``:
    ``[title](https://x.org/a b)``, a space in it). Such a URL, cut at the space, would be a wrong
    one; Python-Markdown links the whole destination on the page."""
    written = children[i + 1].content if i + 1 < len(children) else ""
    before, j = "", i - 1
    while j >= 0 and len(before) < 2 and children[j].type in ("text", "text_special"):
        before, j = children[j].content + before, j - 1
    return written.lower().startswith(BARE_URL_STARTS) and not before.endswith("](")


def _attr_lists(children: list[Token], content: str, first_line: int) -> list[Link]:
    """The URLs that run script set with ``attr_list`` (:func:`~worklog_gen.log.urls.attr_list_script_urls`)
    in the text of one block's inline tokens ``children``, parsed from ``content`` whose first line is
    ``first_line`` (1-based), each at its line. Text is read as written (an entity or escape as its
    source), one run of text tokens at a time: never in code spans or raw HTML, never across lines."""
    runs, run = [], []
    for child in [*children, None]:
        if child is not None and child.type in ("text", "text_special"):
            run.append(child.markup if child.type == "text_special" else child.content)
        elif run:
            runs.append("".join(run))
            run = []
    found, at = [], 0
    for text in runs:
        urls = attr_list_script_urls(text) if "{" in text else []
        if urls:
            pos = max(content.find(text, at), 0)
            at = pos + len(text)
            found += [Link("", url, first_line + content.count("\n", 0, pos)) for url in urls]
    return found


_MD: MarkdownIt | None = None


def _markdown() -> MarkdownIt:
    """The shared parser: CommonMark plus tables, strikethrough and bare URLs (markdown-it-py's
    ``linkify``), links kept as written, each link recording where it starts in its block's inline
    source (``meta["src_pos"]``), so that a link in a paragraph of several lines gets its line (raw
    HTML tags too), and links that run script kept as links, to be reported apart."""
    global _MD
    if _MD is None:
        md = MarkdownIt("commonmark", {"linkify": True}).enable(["table", "strikethrough", "linkify"])
        md.disable("text_join")
        md.normalizeLink = lambda url: url  # keep the author's URL, not a percent-encoded one
        md.normalizeLinkText = lambda url: url
        for name in ("link", "image", "autolink", "linkify", "html_inline"):
            md.inline.ruler.at(name, _positioned(_rule(md.inline.ruler, name)))
        validate = md.validateLink
        md.validateLink = lambda url: validate(url) or is_script_url(url)  # seen, to be reported apart
        _MD = md
    return _MD


def _rule(ruler, name: str):
    for rule in ruler.__rules__:
        if rule.name == name:
            return rule.fn
    raise KeyError(name)


def _positioned(rule):
    """Wrap an inline link rule to record where each link starts in the inline source."""

    def wrapped(state, silent):
        start, n = state.pos, len(state.tokens)
        ok = rule(state, silent)
        if ok and not silent:
            for tok in state.tokens[n:]:
                if tok.type in ("link_open", "image", "html_inline"):
                    tok.meta["src_pos"] = start
                    break
        return ok

    return wrapped
