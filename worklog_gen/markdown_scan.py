"""Find the links, the code and the prose of entry bodies with markdown-it-py.

Each entry is read as a markdown document of its own (CommonMark, plus GFM tables
and strikethrough):

**Links** are inline links, reference links (definitions from the same entry), and
autolinks (``<https://…>``, titled with the URL). Links in code spans and code
blocks are not links; nor are links with an empty target. Each occurrence counts,
with its exact source line. URLs are kept as written (not percent-encoded).

**Prose** is the text markdown-it-py finds in paragraphs, headings, lists, quotes and
tables, including link text; its words are counted with
:func:`worklog_gen.words.count_words`. Code spans, code blocks, HTML, autolinks and
markdown syntax are not prose.

**Code lines** (fenced and indented code blocks, HTML blocks) are reported so that
:mod:`worklog_gen.tasks` skips them.

By default (``fast=True``) one block parse covers the parts of all entries of a file
that need it, and plain text skips markdown-it-py (see
:mod:`worklog_gen.markdown_units`); ``fast=False`` parses every entry on its own, in
full: the reference the fast path is tested against.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from markdown_it import MarkdownIt

from worklog_gen.markdown_units import has_inline_syntax, line_flags, paragraph_content, units
from worklog_gen.model import Link
from worklog_gen.line_index import LineIndex
from worklog_gen.words import count_words

_SEPARATOR = ["", "***", ""]
"""Put between units in the one block-parsed document: a thematic break closes any
list or quote before it, so that each unit is read as at the left margin."""
_CONTAINER_TOKENS = frozenset({"bullet_list_open", "ordered_list_open", "list_item_open", "blockquote_open"})
_CODE_TOKENS = frozenset({"fence", "code_block", "html_block"})
_RULE_CHARS = {
    "text": "",
    "newline": "\n",
    "escape": "\\",
    "backticks": "`",
    "strikethrough": "~",
    "emphasis": "*_",
    "link": "[]",  # "]" too: the link label's end, found between skipped tokens
    "image": "!",
    "autolink": "<",
    "html_inline": "<",
    "entity": "&",
}
"""The characters at which each inline rule of the parser can start (markdown-it-py's
``rules_inline``); the ``text`` rule skips every other character at C speed."""
_POST_RULES = {"emphasis": ("emphasis",), "strikethrough": ("strikethrough",)}
"""Inline post-processing rules (``ruler2``) that only act on the delimiters of these
inline rules; ``balance_pairs`` acts on the delimiters of both."""


class Scan(NamedTuple):
    """What :func:`scan` finds, per entry body in the order given."""

    links: list[list[Link]]
    """Links, sorted by source line."""
    words: list[int]
    """Words of the prose (see the module docstring)."""
    code_lines: set[int]
    """0-based indices of the lines, in any body, inside code blocks or HTML blocks."""


def scan(
    lines: list[str],
    bodies: list[tuple[int, int]],
    *,
    fast: bool = True,
    index: LineIndex | None = None,
    line_offset: int = 0,
) -> Scan:
    """Links, words and code lines of the entry bodies ``lines[first:stop]`` for each
    ``(first, stop)`` in ``bodies`` (0-based, in file order, not overlapping).

    ``index`` is a :class:`worklog_gen.line_index.LineIndex` of ``lines``, if the caller
    has one. ``lines`` may be a slice of a file that starts ``line_offset`` lines into
    it: :attr:`Link.line` counts from the file's start, :attr:`Scan.code_lines` index
    ``lines``. Never raises on content.
    """
    index = index or LineIndex(lines)
    md = _markdown()
    code_lines: set[int] = set()
    prose: list[list[str]] = [[] for _ in bodies]  # text whose words count, per entry
    links: list[list[Link]] = [[] for _ in bodies]
    alone = set() if fast else set(range(len(bodies)))
    if fast:
        blank, syntax = line_flags(lines, index)
        # One markdown document of the units that need markdown-it-py's block parser,
        # each unit after a _SEPARATOR; orig[c] is the source line of line c. Plain
        # paragraphs go straight to the inline parser.
        md_lines: list[str] = []
        orig: list[int] = []
        unit_of: list[int] = []  # unit number of each line of md_lines, -1 for separators
        entry_of: list[int] = []
        direct: list[tuple[int, int, str]] = []  # (entry, first line, inline content)
        n_units = 0
        for k, (start, stop) in enumerate(bodies):
            last = None
            for a, b, needs_markdown in units(lines, start, stop, blank, syntax):
                if not needs_markdown:
                    prose[k] += lines[a:b]
                    continue
                content = paragraph_content(lines, a, b)
                if content is not None:
                    direct.append((k, a, content))
                    continue
                if md_lines and a != last:
                    md_lines += _SEPARATOR
                    orig += [-1] * len(_SEPARATOR)
                    unit_of += [-1] * len(_SEPARATOR)
                    entry_of += [k] * len(_SEPARATOR)
                md_lines += lines[a:b]
                orig += range(a, b)
                unit_of += [n_units] * (b - a)
                entry_of += [k] * (b - a)
                n_units += 1
                last = b
        envs: list[dict] = [{} for _ in bodies]
        if n_units:
            env = {"worklog_entry_envs": envs, "worklog_entry_of_line": entry_of}
            tokens = md.parse("\n".join(md_lines), env)
            for tok in tokens:
                if tok.map and tok.type not in _CONTAINER_TOKENS:
                    c0, c1 = tok.map[0], min(max(tok.map[1] - 1, tok.map[0]), len(md_lines) - 1)
                    if unit_of[c0] == -1 and c0 == c1 and tok.type == "hr":
                        continue  # a separator
                    if unit_of[c0] != unit_of[c1] or unit_of[c0] == -1:
                        alone.update(entry_of[c0 : c1 + 1])
            for tok in tokens:
                if not tok.map or entry_of[tok.map[0]] in alone:
                    continue
                k = entry_of[tok.map[0]]
                if tok.type in _CODE_TOKENS:
                    code_lines.update(orig[c] for c in range(*tok.map) if orig[c] >= 0)
                elif tok.type == "inline":
                    text, found = _inline(None, tok.content, orig[tok.map[0]] + 1 + line_offset, envs[k], shortcut=True)
                    prose[k].append(text)
                    links[k] += found
        for k, a, content in direct:
            if k not in alone:
                text, found = _inline(None, content, a + 1 + line_offset, envs[k], shortcut=True)
                prose[k].append(text)
                links[k] += found
    for k in sorted(alone):
        a, b = bodies[k]
        env: dict = {}
        prose[k], links[k] = [], []
        for tok in md.parse("\n".join(lines[a:b]), env):
            if tok.type in _CODE_TOKENS and tok.map:
                code_lines.update(range(a + tok.map[0], a + tok.map[1]))
            elif tok.type == "inline":
                first_line = a + tok.map[0] + 1 + line_offset
                text, found = _inline(None if fast else md, tok.content, first_line, env, shortcut=fast)
                prose[k].append(text)
                links[k] += found
    return Scan(
        [sorted(found, key=lambda link: link.line) for found in links],
        [count_words("\n".join(text)) for text in prose],
        code_lines,
    )


def _inline(
    md: MarkdownIt | None, content: str, first_line: int, env: dict, *, shortcut: bool
) -> tuple[str, list[Link]]:
    """The prose (text whose words count) and the links of the inline ``content`` of
    one block (a paragraph's, heading's or table cell's text) whose first line is
    ``first_line`` (1-based) in the source. ``md`` is the parser to use, or ``None``
    for :func:`_inline_markdown` of ``content``."""
    if shortcut and not has_inline_syntax(content):
        return content, []
    if md is None:
        md = _inline_markdown(content)
    children: list = []
    md.inline.parse(content, md, env, children)
    pieces: list[str] = []
    found: list[Link] = []
    title: list[str] | None = None
    link_open = None
    autolink = False
    for child in children:
        kind = child.type
        if kind == "link_open":
            link_open, title, autolink = child, [], child.markup == "autolink"
            pieces.append(" ")
        elif kind == "link_close":
            href = link_open.attrGet("href") if link_open is not None else None
            if href:
                pos = link_open.meta.get("src_pos", 0)
                line = first_line + content.count("\n", 0, pos)
                found.append(Link(" ".join("".join(title).split()), str(href), line))
            link_open, title, autolink = None, None, False
            pieces.append(" ")
        elif kind in ("text", "text_special"):
            if title is not None:
                title.append(child.content)
            if not autolink:
                pieces.append(child.content)
        elif kind in ("softbreak", "hardbreak"):
            if title is not None:
                title.append(" ")
            pieces.append("\n")
        elif kind in ("code_inline", "image"):
            if title is not None:
                title.append(child.content)
            pieces.append(" ")
        elif kind == "html_inline":
            pieces.append(" ")
    return "".join(pieces), found


_MD: MarkdownIt | None = None
_TRIGGERS = "".join(sorted(set("".join(_RULE_CHARS.values())) - {"]"}))
"""Start characters of the inline rules ("]" ends a link label but starts no rule)."""
_INLINE_MD: dict[tuple[bool, ...], MarkdownIt] = {}


def _markdown() -> MarkdownIt:
    """The shared markdown-it-py parser: CommonMark plus tables and strikethrough,
    inline parsing left to :func:`scan`, links kept verbatim with their positions."""
    global _MD
    if _MD is None:
        _MD = _new_markdown(tuple(_RULE_CHARS), positioned=True)
    return _MD


def _inline_markdown(content: str) -> MarkdownIt:
    """A parser for the inline ``content`` with only the inline rules that can fire in
    it: those whose start character (:data:`_RULE_CHARS`) ``content`` holds, and their
    post-processing. It gives the same tokens as :func:`_markdown`, because a rule
    only acts at its start character, and less work per link: fewer rules tried at
    each stop, fewer stops, no post-processing without delimiters. Link positions are
    recorded only for content of several lines (one line needs none).
    """
    key = tuple(map(content.__contains__, _TRIGGERS))
    md = _INLINE_MD.get(key)
    if md is None:
        present = {c for c, there in zip(_TRIGGERS, key) if there}
        rules = tuple(name for name, chars in _RULE_CHARS.items() if not chars or present & set(chars))
        md = _INLINE_MD[key] = _new_markdown(rules, positioned="\n" in present)
    return md


def _new_markdown(rules: tuple[str, ...], *, positioned: bool) -> MarkdownIt:
    """CommonMark plus tables and strikethrough with the inline rules ``rules`` (names
    in :data:`_RULE_CHARS`), links kept as written; with ``positioned``, each link
    records where it starts in the inline source."""
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"]).disable(["inline", "text_join"])
    md.normalizeLink = lambda url: url  # keep the author's URL, not a percent-encoded one
    md.normalizeLinkText = lambda url: url
    off = [name for name in _RULE_CHARS if name not in rules]
    md.inline.ruler.disable(off)
    post_off = [post for name in off for post in _POST_RULES.get(name, ())]
    if len(post_off) == len(_POST_RULES):
        post_off.append("balance_pairs")
    md.inline.ruler2.disable(post_off)
    if positioned:
        for name in ("link", "autolink"):
            if name in rules:
                md.inline.ruler.at(name, _positioned(_rule(md.inline.ruler, name)))
    # markdown-it-py stops plain text at 23 characters, some of them only for plugins
    # ("reserved for extensions": "-", ":", "+", "=", ...), and at each of those tries
    # every rule in turn. Stop only where an enabled rule can start: the same tokens,
    # about twice as fast on prose with dashes and colons. (Any set of stops gives the
    # same tokens, so long as it holds the start characters of the enabled rules.)
    chars = "".join(sorted(set("".join(_RULE_CHARS[name] for name in rules)))) or "["
    md.inline.terminator_re = re.compile(f"[{re.escape(chars)}]")
    md.block.ruler.at("reference", _per_entry_references(_rule(md.block.ruler, "reference")), {"alt": []})
    return md


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
                if tok.type == "link_open":
                    tok.meta["src_pos"] = start
                    break
        return ok

    return wrapped


def _per_entry_references(rule):
    """Wrap the reference-definition rule so that each entry keeps its own definitions."""

    def wrapped(state, start_line, end_line, silent):
        envs = state.env.get("worklog_entry_envs")
        if envs is None:
            return rule(state, start_line, end_line, silent)
        shared = state.env
        state.env = envs[shared["worklog_entry_of_line"][start_line]]
        try:
            return rule(state, start_line, end_line, silent)
        finally:
            state.env = shared

    return wrapped
