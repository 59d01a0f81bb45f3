"""Cut entry bodies into *units* that markdown-it-py reads the same on their own as
inside the whole entry, and tell which of them need markdown-it-py at all.

Running markdown-it-py's block parser on every line is slow (about 15 us a line), so
:mod:`worklog_gen.markdown_scan` gives it only the units that can hold markdown
syntax. An entry is cut into units at blank lines and at lines that always start a
new block (a bullet or a heading at indent < 4), except inside fences, HTML blocks,
block quotes and tables; a unit that starts indented joins the one before it, so
that every unit starts at the left margin. A unit *needs markdown* when one of its
lines holds markdown syntax (:func:`has_syntax`); otherwise it is plain text, which
has no links, no code and the same words either way. A unit that is certainly one
paragraph (:func:`paragraph_content`) skips the block parser and goes straight to
the inline one.

The syntax tests are exact where CommonMark makes a character inert: ``_`` between
two letters or digits (``x_ptr``), ``&`` not followed by an entity name and ``;``,
``<`` not followed by a letter, ``/``, ``!`` or ``?``, ``|`` without a table's
delimiter row. Where the cutting is wrong (a construct it did not foresee), the
scanner notices a block straddling two units and parses the entry again in full;
``tests/test_parser_properties.py`` checks that the result equals the full parse.
"""

from __future__ import annotations

import re

from worklog_gen.line_index import LineIndex
from worklog_gen.repair import track_fence

_HARD_SYNTAX = re.compile(r"[\[\]`*]")  # links, images, code spans, emphasis
_ENTITY = re.compile(r"&(?:\#[0-9]{1,7}|\#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_ESCAPE = re.compile(r"\\(?:[\n!-/:-@\[-`{-~]|$)")  # backslash escapes and hard line breaks
_TAG = re.compile(r"<[A-Za-z/!?]")  # autolinks and raw HTML
_BLOCK_SYNTAX = re.compile(
    r"(?: {0,3}\t| {4})"  # indented code, or indentation that depends on the container
    r"|[ \t]*(?:(?:[-+*]|>)[ \t]*)*\d{1,9}[.)](?:[ \t]|$)"  # ordered list marker ("1." is not a word)
    r"|[ \t]*(?:(?:[-+*]|\d{1,9}[.)])[ \t]+)*>"  # block quote
)
_SYNTAX_CHARS = "[]`*_&\\<~|"
"""Characters one of which every line with inline syntax or a table holds."""
_BLOCK_START = frozenset(" \t>-+*0123456789")
_TABLE_DELIMITER = re.compile(r"^(?=[^|]*\|)(?=[^-]*-)[ \t|:\-]+$")
_SPLIT = re.compile(r" {0,3}(?:[-+][ \t]+\S|\#{1,6}(?:[ \t]|$))")  # not "-" alone: a setext underline
_HTML_REGION = re.compile(
    r" {0,3}(?:<(?P<raw>script|pre|style|textarea)(?:[ \t>]|$)"
    r"|(?P<comment><!--)|(?P<pi><\?)|(?P<cdata><!\[CDATA\[)|(?P<decl><![A-Za-z]))",
    re.IGNORECASE,
)
_HTML_CLOSE = {"raw": "</", "comment": "-->", "pi": "?>", "cdata": "]]>", "decl": ">"}
_SEPARATOR = ["", "***", ""]


def has_inline_syntax(text: str) -> bool:
    """Whether markdown-it-py's inline parser could find more than plain text in ``text``."""
    if _HARD_SYNTAX.search(text):
        return True
    if "_" in text and _loose_underscore(text):
        return True
    if "&" in text and _ENTITY.search(text):
        return True
    if "\\" in text and _ESCAPE.search(text):
        return True
    if "<" in text and _TAG.search(text):
        return True
    return "~~" in text


def _loose_underscore(text: str) -> bool:
    """Whether some ``_`` in ``text`` is not between two word characters, so that it
    may open or close emphasis (CommonMark's flanking rules make ``x_ptr`` inert)."""
    i = text.find("_")
    last = len(text) - 1
    while i != -1:
        before = text[i - 1] if i else " "
        after = text[i + 1] if i < last else " "
        if not (before.isalnum() or before == "_") or not (after.isalnum() or after == "_"):
            return True
        i = text.find("_", i + 1)
    return False


def has_syntax(line: str) -> bool:
    """Whether markdown-it-py could read ``line`` as more than plain words (see above)."""
    if line[:1] in _BLOCK_START and _BLOCK_SYNTAX.match(line):
        return True
    return has_inline_syntax(line) or ("|" in line and _TABLE_DELIMITER.match(line) is not None)


def line_flags(lines: list[str], index: LineIndex) -> tuple[list[bool], list[bool]]:
    """Per line: is it blank, and does it hold markdown syntax (:func:`has_syntax`).
    ``index`` is a :class:`LineIndex` of ``lines``."""
    blank = [not line.strip(" \t") for line in lines]
    syntax = [False] * len(lines)
    for i in index.holding(_SYNTAX_CHARS):
        syntax[i] = has_syntax(lines[i])
    for i in [i for i, line in enumerate(lines) if line[:1] in _BLOCK_START]:
        if not syntax[i] and _BLOCK_SYNTAX.match(lines[i]):
            syntax[i] = True
    return blank, syntax


def units(
    lines: list[str], start: int, end: int, blank: list[bool], syntax: list[bool]
) -> list[tuple[int, int, bool]]:
    """Cut ``lines[start:end]`` (an entry body) into ``(first, stop, needs_markdown)`` units.

    ``blank`` and ``syntax`` are :func:`line_flags` of ``lines``. Chunks end at blank
    lines, except inside fences and HTML blocks. A chunk that starts indented may
    continue a list item or code block above it: it joins the chunk before, so that
    each unit starts at the left margin (or at the start of the entry), where
    CommonMark reads it the same in any context. A chunk with syntax that joined no
    other and holds no fence, HTML, quote or table is cut again before each bullet and
    heading.
    """
    out: list[tuple[int, int, bool]] = []
    unit: list | None = None  # the chunks joined so far: [first, stop, splittable, needs_markdown]
    i = start
    while i < end:
        if blank[i]:
            try:
                i = blank.index(False, i, end)
            except ValueError:
                break
        first = i
        try:
            stop = blank.index(True, i, end)
        except ValueError:
            stop = end
        if True in syntax[first:stop]:
            stop, splittable = _syntax_chunk(lines, first, end, blank, syntax)
            needs_markdown = True
        else:
            splittable = needs_markdown = False
        if unit is not None and lines[first][:1] in (" ", "\t"):
            unit[1:] = [stop, False, unit[3] or needs_markdown]
        else:
            if unit is not None:
                _cut(unit, lines, syntax, out)
            unit = [first, stop, splittable, needs_markdown]
        i = stop
    if unit is not None:
        _cut(unit, lines, syntax, out)
    return out


def _syntax_chunk(lines: list[str], first: int, end: int, blank: list[bool], syntax: list[bool]) -> tuple[int, bool]:
    """End of the chunk with syntax that starts at ``first`` (a blank line outside fences
    and HTML blocks, or ``end``), and whether it may be cut at bullets and headings."""
    splittable = True
    fence, html_close = None, None
    i = first
    while i < end:
        line = lines[i]
        i += 1
        if fence is not None:
            if "```" in line or "~~~" in line:
                fence, _ = track_fence(line, fence)
            continue
        if html_close is not None:
            if html_close in line.lower():
                html_close = None
            continue
        if blank[i - 1]:
            i -= 1
            break
        if not syntax[i - 1]:
            continue
        if "```" in line or "~~~" in line:
            fence, opened = track_fence(line, None)
            splittable = splittable and not opened
        if "<" in line and (m := _HTML_REGION.match(line)):
            kind = next(k for k, v in m.groupdict().items() if v)
            if _HTML_CLOSE[kind] not in line.lower()[m.end() :]:
                html_close = _HTML_CLOSE[kind]
        if line.lstrip(" \t")[:1] in ("<", ">") or ("|" in line and _TABLE_DELIMITER.match(line)):
            splittable = False
    return i, splittable


def _cut(unit: list, lines: list[str], syntax: list[bool], out: list[tuple[int, int, bool]]) -> None:
    """Append the units of the joined chunks ``unit`` to ``out``: cut before each bullet
    and heading when it needs markdown and may be cut, else whole."""
    first, stop, splittable, needs_markdown = unit
    if not (needs_markdown and splittable) or stop - first == 1:
        out.append((first, stop, needs_markdown))
        return
    cuts = [first] + [k for k in range(first + 1, stop) if _SPLIT.match(lines[k])] + [stop]
    out += [(a, b, True in syntax[a:b]) for a, b in zip(cuts, cuts[1:])]


_BLOCK_CHARS = frozenset("#-+*=_>`~<|")
_BULLET = re.compile(r" {0,3}[-+*]( {1,4})(?=\S)")


def paragraph_content(lines: list[str], a: int, b: int) -> str | None:
    """The inline content of ``lines[a:b]`` if CommonMark reads them as one paragraph,
    on its own or as a bullet item's (``- text``); ``None`` if that is not certain.

    Certain means: no line indented as code, no line starting with a character that
    can open a block (``#-+*=_>`~<|``, an ordered list marker), no ``]:`` (a link
    reference definition), no table delimiter row. Leading whitespace of the later
    lines is kept; markdown-it-py's inline parser drops it after each line break.
    Such units skip the block parse, which costs more than the inline one.
    """
    first = lines[a]
    m = _BULLET.match(first)
    body = first[m.end() :] if m else first.lstrip(" ")
    if not body or body[0] in _BLOCK_CHARS:
        return None
    for k in range(a, b):
        line = lines[k]
        if line[:1] in _BLOCK_START and _BLOCK_SYNTAX.match(line):
            return None
        if k > a and line.lstrip(" ")[:1] in _BLOCK_CHARS:
            return None
        if "]:" in line or ("|" in line and _TABLE_DELIMITER.match(line)) or not line.strip(" \t"):
            return None
    if b - a == 1:
        return body.strip()
    return "\n".join([body, *lines[a + 1 : b]]).strip()
