"""Repair damaged worklog exports, line for line, reporting every change.

Exports of a log (copied from a web page, saved by another editor, run through a
static site generator) arrive damaged in a few known ways. Each repair here keeps
the text's line structure (the same number of lines, in the same order), so that
line numbers in diagnostics and in the parsed entries point at the author's file,
and each one reports a warning :class:`~worklog_gen.log.model.Diagnostic` naming
``file:line``. No repair drops text.

* **Bytes that are not UTF-8** (:func:`decode_bytes`): decoded as UTF-16 when a
  UTF-16 byte-order mark says so, else as Windows-1252, else as Latin-1 (which
  decodes any bytes), with a warning at the line of the first bad byte.
* **Byte-order mark and CR/CRLF line ends** (:func:`normalize_line_ends`): one
  warning per file, at line 1. A lone CR counts as a line end, as in CommonMark.
* **Mojibake** (:func:`fix_encoding_lines`): UTF-8 text that was decoded as
  Windows-1252 or Latin-1 (``Eï¬ƒcient`` for ``Eﬃcient``) is re-decoded with
  ftfy, configured to fix the encoding *only*: quotes stay curly, ligatures such
  as ``ﬃ`` stay ligatures, widths and Unicode normalisation are left as written.
* **Links written backwards** (:func:`fix_backwards_link`):
  ``[https://url](Title (with parens))`` becomes ``[Title (with parens)](https://url)``.
* **Bare URLs on a line of their own** (:func:`fix_bare_url`): ``https://x.org/a``
  becomes ``<https://x.org/a>``, a CommonMark autolink, so it counts as a link.

Link repairs are not applied inside fenced code blocks, code spans, or the front
matter. :func:`repair_text` runs them all.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Collection, Sequence

import ftfy

from worklog_gen.log.diagnostics import Diagnostic, DiagnosticCode

# ftfy with every fixer off except those that undo a wrong decoding. The author's
# own characters (curly quotes, "ﬃ", full-width forms, NFC/NFD) must survive.
_ENCODING_ONLY = ftfy.TextFixerConfig(
    unescape_html=False,
    remove_terminal_escapes=False,
    fix_encoding=True,
    restore_byte_a0=True,
    replace_lossy_sequences=True,
    decode_inconsistent_utf8=True,
    fix_c1_controls=True,
    fix_latin_ligatures=False,
    fix_character_width=False,
    uncurl_quotes=False,
    fix_line_breaks=False,
    fix_surrogates=False,
    remove_control_chars=False,
    normalization=None,
    explain=False,
)

# A necessary sign of UTF-8 read as Windows-1252/Latin-1: a UTF-8 lead byte shown as
# U+00C2..U+00F4 followed by a continuation byte shown as U+0080..U+00BF or one of
# the Windows-1252 characters at 0x80..0x9F; or a stray C1 control. ftfy's own
# check (``ftfy.badness.is_bad``) is far slower, so lines pass this one first.
_CP1252_HIGH = "".join(bytes([b]).decode("cp1252") for b in range(0x80, 0xA0) if b not in (0x81, 0x8D, 0x8F, 0x90, 0x9D))
_MOJIBAKE_HINT = re.compile(f"[\u00c2-\u00f4][\u0080-\u00bf{_CP1252_HIGH}]|[\u00c2\u00c3] |[\u0080-\u009f]")

_FENCE_OPEN = re.compile(r"^(?P<lead>[ \t]*(?:(?:[-+*]|\d{1,9}[.)]|>)[ \t]*)*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_BACKWARDS_HINT = re.compile(r"\[[ \t]*(?:(?:https?|ftp)://|www\.)", re.IGNORECASE)
_URL_LABEL = re.compile(r"^(?:https?|ftp)://\S+$|^www\.\S+$", re.IGNORECASE)
# A link target that is a URL or a path (so the link is not backwards). A scheme-like word
# only counts when no space follows before the end or a link title: a paper's title such as
# "FlashAttention: Fast and Memory-Efficient ..." is prose, not a URI.
_URL_OR_PATH = re.compile(
    r"^\s*(?:<|[a-z][a-z0-9+.\-]*:\S*(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*$|www\.|/|#|\.{1,2}/|\?)",
    re.IGNORECASE)
_BARE_URL = re.compile(
    r"^(?P<lead>(?:[ ]{0,3}|[ \t]*(?=(?:[-+*]|\d{1,9}[.)])[ \t]))(?:(?:[-+*]|\d{1,9}[.)])[ \t]+|>[ \t]?)*)"
    r"(?P<url>(?:https?|ftp)://[^\s<>`]+)(?P<trail>[ \t]*)$",
    re.IGNORECASE,
)
_CODE_SPAN_RUN = re.compile(r"`+")


def decode_bytes(data: bytes, path: str = "<bytes>") -> tuple[str, list[Diagnostic]]:
    """Decode a worklog file's bytes to text.

    UTF-8 is expected; a UTF-8 byte-order mark is kept (as U+FEFF) for
    :func:`normalize_line_ends` to report. Other bytes are decoded as UTF-16 (with
    its byte-order mark), else Windows-1252, else Latin-1, with a warning naming the
    line of the first byte that is not UTF-8. Never raises on content.
    """
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        bad_line = data.count(b"\n", 0, exc.start) + 1
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), [
                Diagnostic(path, 1, "file is UTF-16, decoded as such; save it as UTF-8", DiagnosticCode.ENCODING)
            ]
        except UnicodeDecodeError:
            pass
    for encoding in ("cp1252", "latin-1"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        msg = f"file is not valid UTF-8 (first bad byte on this line); decoded as {encoding}"
        return text, [Diagnostic(path, bad_line, msg, DiagnosticCode.ENCODING)]
    raise AssertionError("latin-1 decodes any bytes")  # pragma: no cover


def normalize_line_ends(text: str, path: str = "<string>") -> tuple[str, list[Diagnostic]]:
    """Drop a leading byte-order mark and turn CRLF and lone CR line ends into LF.

    The number of lines (CommonMark's: LF, CRLF or a lone CR ends a line) is kept.
    Reports one warning at line 1 when anything changed.
    """
    changes = []
    if text.startswith("\ufeff"):
        text = text[1:]
        changes.append("byte-order mark removed")
    if "\r" in text:
        crlf = text.count("\r\n")
        text = text.replace("\r\n", "\n")
        lone = text.count("\r")
        text = text.replace("\r", "\n")
        kinds = [f"{n} {name}" for n, name in ((crlf, "CRLF"), (lone, "CR")) if n]
        changes.append(f"{' and '.join(kinds)} line end(s) changed to LF")
    if not changes:
        return text, []
    return text, [Diagnostic(path, 1, "; ".join(changes), DiagnosticCode.LINE_ENDS)]


def fix_encoding_lines(lines: list[str], path: str = "<string>") -> list[Diagnostic]:
    """Undo mojibake in ``lines`` in place (see the module docstring), one warning per
    changed line."""
    diagnostics = []
    for i, line in enumerate(lines):
        if not _MOJIBAKE_HINT.search(line):
            continue
        fixed = ftfy.fix_text(line, _ENCODING_ONLY)
        if fixed == line or "\n" in fixed or "\r" in fixed:
            continue
        lines[i] = fixed
        before, after = _changed_words(line, fixed)
        msg = f"mojibake repaired: {before!r} -> {after!r}"
        diagnostics.append(Diagnostic(path, i + 1, msg, DiagnosticCode.MOJIBAKE))
    return diagnostics


def fix_backwards_link(line: str) -> tuple[str, list[tuple[str, str]]]:
    """Swap ``[https://url](Title)`` into ``[Title](https://url)`` wherever it occurs in ``line``.

    A link is backwards when its text is an absolute URL (``http(s)://``, ``ftp://``
    or ``www.``) and its target is not a URL or path (it has no scheme and does not
    start with ``/``, ``#``, ``./``, ``?`` or ``<``). The title may hold balanced
    parentheses and backslash escapes. Links inside code spans and images are left
    alone. Returns the new line and the ``(url, title)`` pairs swapped.
    """
    if "](" not in line or not _BACKWARDS_HINT.search(line):
        return line, []
    code = code_span_ranges(line)
    out: list[str] = []
    swapped: list[tuple[str, str]] = []
    pos = 0
    i = line.find("[")
    while i != -1:
        close = line.find("]", i + 1)
        if close == -1:
            break
        label = line[i + 1 : close]
        end = _matching_paren(line, close + 1) if line.startswith("(", close + 1) else -1
        if (
            end != -1
            and "[" not in label
            and _URL_LABEL.match(label.strip())
            and not (i > 0 and line[i - 1] in "!\\")
            and not any(a <= i < b for a, b in code)
        ):
            title = line[close + 2 : end]
            if title.strip() and not _URL_OR_PATH.match(title):
                url = label.strip()
                out.append(line[pos:i])
                out.append(f"[{_label_text(title.strip())}]({_destination(url)})")
                swapped.append((url, title.strip()))
                pos = end + 1
                i = line.find("[", pos)
                continue
        i = line.find("[", i + 1)
    if not swapped:
        return line, []
    out.append(line[pos:])
    return "".join(out), swapped


def fix_bare_url(line: str) -> str | None:
    """``<url>`` for a line that holds only a URL (after any list or quote markers), else ``None``.

    Lines indented four spaces or more without a list marker (code) are left alone.
    """
    m = _BARE_URL.match(line)
    if m is None:
        return None
    return f"{m['lead']}<{m['url']}>{m['trail']}"


def fix_link_lines(
    lines: list[str],
    path: str = "<string>",
    *,
    start: int = 0,
    boundaries: Sequence[int] = (),
) -> list[Diagnostic]:
    """Repair backwards links and bare URL lines in ``lines[start:]`` in place.

    Fenced code blocks are skipped. Their state is reset at each index in
    ``boundaries`` (entry headers: an unclosed fence must not swallow the next
    entry). Returns one warning per repair.
    """
    diagnostics = []
    reset = set(boundaries)
    fence: tuple[str, int] | None = None  # (fence char, length) while inside a fenced block
    for i in range(start, len(lines)):
        line = lines[i]
        if i in reset:
            fence = None
            continue
        if "```" in line or "~~~" in line:
            fence, is_fence_line = track_fence(line, fence)
            if is_fence_line:
                continue
        if fence is not None:
            continue
        if "](" in line:
            new, swapped = fix_backwards_link(line)
            for url, title in swapped:
                msg = f"backwards link repaired: [{title}]({url})"
                diagnostics.append(Diagnostic(path, i + 1, msg, DiagnosticCode.BACKWARDS_LINK))
            lines[i] = new
        elif "://" in line:
            bare = fix_bare_url(line)
            if bare is not None:
                lines[i] = bare
                msg = f"bare URL made a link: {bare.strip()}"
                diagnostics.append(Diagnostic(path, i + 1, msg, DiagnosticCode.BARE_URL))
    return diagnostics


def repair_text(
    text: str,
    path: str = "<string>",
    *,
    boundaries: Collection[int] = (),
    prose_start: Callable[[list[str]], int] | None = None,
) -> tuple[str, list[Diagnostic]]:
    """Run every repair on ``text``; return the repaired text and the warnings.

    The result has as many lines as ``text`` (counting CRLF and lone CR as line
    ends), so line numbers stay right. ``boundaries`` are the 0-based indices of
    the lines at which fenced-code tracking restarts (entry headers); ``prose_start(lines)`` gives the
    index of the first line after the front matter, where link repairs begin.
    """
    text, diagnostics = normalize_line_ends(text, path)
    lines = text.split("\n")
    diagnostics += fix_encoding_lines(lines, path)
    start = prose_start(lines) if prose_start else 0
    diagnostics += fix_link_lines(lines, path, start=start, boundaries=sorted(boundaries))
    return "\n".join(lines), diagnostics


def track_fence(line: str, fence: tuple[str, int] | None) -> tuple[tuple[str, int] | None, bool]:
    """Fence state after ``line`` and whether ``line`` opens or closes a fence.

    ``fence`` is ``None`` outside a fenced code block, else the opening fence's
    character and length.

    Lenient about container prefixes (list and quote markers), as CommonMark
    fences inside list items and block quotes are common in notes.
    """
    m = _FENCE_OPEN.match(line)
    if m is None:
        return fence, False
    char, length = m["fence"][0], len(m["fence"])
    if fence is None:
        if char == "`" and "`" in m["info"]:
            return None, False  # an inline code span, not a fence
        return (char, length), True
    if char == fence[0] and length >= fence[1] and not m["info"].strip():
        return None, True
    return fence, False


def edit_outside_code(text: str, edit: Callable[[str, list[tuple[int, int]]], str], needle: str = "") -> str:
    """``text`` with ``edit(line, code_spans)`` for each line outside fenced code blocks (fence lines
    too are left) that holds ``needle``, every line in its place; ``code_spans`` are the line's
    (:func:`code_span_ranges`), which an edit leaves alone."""
    if needle not in text:
        return text
    lines, fence = text.split("\n"), None
    for i, line in enumerate(lines):
        fence, marker = track_fence(line, fence)
        if not marker and fence is None and needle in line:
            lines[i] = edit(line, code_span_ranges(line))
    return "\n".join(lines)


def in_spans(at: int, spans: list[tuple[int, int]]) -> bool:
    """Whether position ``at`` of a line lies in one of its code ``spans``."""
    return any(a <= at < b for a, b in spans)


def code_span_ranges(line: str) -> list[tuple[int, int]]:
    """``[start, end)`` ranges of the code spans in one line (matching backtick runs)."""
    if "`" not in line:
        return []
    runs = [(m.start(), m.end()) for m in _CODE_SPAN_RUN.finditer(line)]
    ranges = []
    k = 0
    while k < len(runs):
        a, b = runs[k]
        for j in range(k + 1, len(runs)):
            c, d = runs[j]
            if d - c == b - a:
                ranges.append((a, d))
                k = j
                break
        k += 1
    return ranges


def _matching_paren(line: str, open_at: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``open_at``, honouring nesting and backslash escapes; -1 if none."""
    depth = 0
    i = open_at
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _label_text(title: str) -> str:
    """``title`` safe as link text: brackets escaped unless they balance."""
    depth = 0
    for ch in title:
        depth += (ch == "[") - (ch == "]")
        if depth < 0:
            break
    if depth == 0:
        return title
    return re.sub(r"(?<!\\)([\[\]])", r"\\\1", title)


def _destination(url: str) -> str:
    """``url`` as a link destination, in ``<...>`` when its parentheses do not balance."""
    if url.count("(") != url.count(")") or url.startswith("<"):
        return f"<{url}>"
    return url


def _changed_words(before: str, after: str) -> tuple[str, str]:
    """The words around the part of ``before`` that differs from ``after``, for a message."""
    p = 0
    while p < min(len(before), len(after)) and before[p] == after[p]:
        p += 1
    s = 0
    while s < min(len(before), len(after)) - p and before[-1 - s] == after[-1 - s]:
        s += 1
    while p > 0 and not before[p - 1].isspace():
        p -= 1
    while s > 0 and not before[-s].isspace():
        s -= 1
    return before[p : len(before) - s].strip(), after[p : len(after) - s].strip()
