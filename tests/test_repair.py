"""Repairs of damaged exports: each keeps the line structure, reports file:line, drops no text."""

from __future__ import annotations

import unicodedata

import ftfy.bad_codecs  # noqa: F401  (registers "sloppy-windows-1252")
import pytest

from worklog_gen.log.repair import (
    decode_bytes,
    fix_backwards_link,
    fix_bare_url,
    fix_encoding_lines,
    fix_link_lines,
    normalize_line_ends,
    repair_text,
)


def mojibake(text: str) -> str:
    """``text`` as it reads after its UTF-8 bytes were decoded as Windows-1252 (bytes
    that Windows-1252 leaves undefined, such as 0x9D in "”", pass through as C1 controls)."""
    return text.encode("utf-8").decode("sloppy-windows-1252")


# ---------------------------------------------------------------------------
# Line ends and byte-order mark


def test_crlf_and_bom_one_note_at_line_1():
    text, diags = normalize_line_ends("\ufeffa\r\nb\r\n\r\nc", "x.md")
    assert text == "a\nb\n\nc"
    (d,) = diags
    assert (d.path, d.line, d.severity, d.code) == ("x.md", 1, "info", "line-ends")
    assert "byte-order mark" in d.message and "3 CRLF" in d.message


def test_lone_cr_is_a_line_end():
    text, diags = normalize_line_ends("a\rb\r\nc")
    assert text.split("\n") == ["a", "b", "c"]
    assert "1 CR" in diags[0].message


def test_clean_text_untouched():
    assert normalize_line_ends("a\nb\n") == ("a\nb\n", [])


# ---------------------------------------------------------------------------
# Decoding


def test_decode_utf8_keeps_bom_for_the_line_end_repair():
    assert decode_bytes(b"\xef\xbb\xbfa") == ("\ufeffa", [])


def test_decode_cp1252_names_the_line_of_the_bad_byte():
    text, (d,) = decode_bytes("ok\nCaf\u00e9 \u2013 notes\n".encode("cp1252"), "x.md")
    assert text == "ok\nCaf\u00e9 \u2013 notes\n"
    assert (d.line, d.code) == (2, "encoding") and "cp1252" in d.message


def test_decode_latin1_when_cp1252_cannot():
    text, (d,) = decode_bytes(b"a\x81b")  # 0x81 is unassigned in Windows-1252
    assert text == "a\x81b" and "latin-1" in d.message


def test_decode_utf16_with_bom():
    text, (d,) = decode_bytes("12/09/25 (T - 154)\n".encode("utf-16"))
    assert text == "12/09/25 (T - 154)\n" and "UTF-16" in d.message


# ---------------------------------------------------------------------------
# Mojibake


@pytest.mark.parametrize("word", ["E\ufb03cient", "they\u2019ll", "Gordi\u0107", "CPU \u2194 GPU", "\u201clearning-diary\u201d", "caf\u00e9"])
def test_mojibake_fixed(word):
    lines = [f"Read {mojibake(word)} today"]
    (d,) = fix_encoding_lines(lines, "x.md")
    assert lines == [f"Read {word} today"]
    assert (d.line, d.code) == (1, "mojibake")


def test_authors_characters_survive():
    # What a default ftfy run would change: ligatures, curly quotes, full width, NFD.
    nfd = unicodedata.normalize("NFD", "Gordi\u0107")
    lines = ["E\ufb03cient \u201cquoted\u201d it\u2019s \uff21\uff22 " + nfd, "plain ascii", "\u2013 \u2194"]
    before = list(lines)
    assert fix_encoding_lines(lines) == []
    assert lines == before


# ---------------------------------------------------------------------------
# Backwards links


def test_backwards_link_with_nested_parens():
    line = "[https://www.youtube.com/watch?v=s1ILGG0TyYM](Intro to Triton (updated)) and more"
    fixed, swapped = fix_backwards_link(line)
    assert fixed == "[Intro to Triton (updated)](https://www.youtube.com/watch?v=s1ILGG0TyYM) and more"
    assert swapped == [("https://www.youtube.com/watch?v=s1ILGG0TyYM", "Intro to Triton (updated)")]


@pytest.mark.parametrize(
    "line",
    [
        "[https://www.aleksagordic.com/blog/matmul](https://www.aleksagordic.com/blog/matmul)",  # a URL titled with itself
        "[https://a.org](/relative/path)",
        "[https://a.org](#anchor)",
        "`[https://a.org](in a code span)`",
        "![https://a.org](an image alt)",
        "[https://a.org](unbalanced (paren)",
        "[Title](https://a.org)",
    ],
)
def test_not_backwards(line):
    assert fix_backwards_link(line) == (line, [])


def test_backwards_link_title_brackets_escaped_when_unbalanced():
    fixed, _ = fix_backwards_link("[https://a.org](a ] b)")
    assert fixed == "[a \\] b](https://a.org)"


def test_backwards_url_with_unbalanced_paren_goes_in_angle_brackets():
    fixed, _ = fix_backwards_link("[https://en.wikipedia.org/wiki/X_(y](The X page)")
    assert fixed == "[The X page](<https://en.wikipedia.org/wiki/X_(y>)"


# ---------------------------------------------------------------------------
# Bare URLs


@pytest.mark.parametrize(
    "line, fixed",
    [
        ("https://horace.io/brrr_intro.html", "<https://horace.io/brrr_intro.html>"),
        ("- https://a.org/x ", "- <https://a.org/x> "),
        ("  1. https://a.org", "  1. <https://a.org>"),
        ("> https://a.org", "> <https://a.org>"),
        ("        - https://a.org/nested", "        - <https://a.org/nested>"),
    ],
)
def test_bare_url_lines(line, fixed):
    assert fix_bare_url(line) == fixed


@pytest.mark.parametrize("line", ["See https://a.org here", "    https://a.org/indented-code", "<https://a.org>", "https://a.org and"])
def test_not_bare_url_lines(line):
    assert fix_bare_url(line) is None


def test_link_repairs_skip_fences_and_restart_at_boundaries():
    lines = ["```", "https://a.org", "12/09/25 (T - 154)", "https://b.org", "~~~~", "[https://c.org](C t)", "~~~~", "https://d.org"]
    diags = fix_link_lines(lines, "x.md", boundaries=[2])
    # The header at index 2 ends the unclosed fence; the second fence protects its link.
    assert lines[3] == "<https://b.org>" and lines[5] == "[https://c.org](C t)" and lines[7] == "<https://d.org>"
    assert lines[:3] == ["```", "https://a.org", "12/09/25 (T - 154)"]
    assert [(d.line, d.code) for d in diags] == [(4, "bare-url"), (8, "bare-url")]


def test_link_repairs_skip_front_matter():
    lines = ["---", "links:", "- https://a.org", "---", "https://a.org"]
    fix_link_lines(lines, start=4)
    assert lines[2] == "- https://a.org" and lines[4] == "<https://a.org>"


# ---------------------------------------------------------------------------
# All together


def test_repair_text_keeps_lines_and_reports_each():
    raw = "\ufeff12/10/2025 (T - 153)\r\n\r\n[https://a.org](A (b))\r\n" + mojibake("E\ufb03cient") + "\r\nhttps://c.org\r\n"
    fixed, diags = repair_text(raw, "x.md")
    assert fixed.split("\n") == ["12/10/2025 (T - 153)", "", "[A (b)](https://a.org)", "E\ufb03cient", "<https://c.org>", ""]
    assert [(d.line, d.code) for d in diags] == [(1, "line-ends"), (4, "mojibake"), (3, "backwards-link"), (5, "bare-url")]
    assert [str(d).split(": ")[1] for d in diags] == ["info", "warning", "warning", "info"]


def test_repairs_compose_on_one_line_and_each_is_reported():
    """A backwards link whose title is also mojibake, and has a colon as paper titles do:
    the title is repaired and the link turned round, and both repairs are reported."""
    from worklog_gen.log import parse

    text = ("12/09/25 (T - 154)\n"
            "[https://arxiv.org/abs/2205.14135](FlashAttention: Fast and Memory-E\u00ef\u00ac\u0192cient Exact Attention)\n")
    log = parse(text, "p.md")
    (entry,) = log.entries
    assert [(link.title, link.url) for link in entry.links] == [
        ("FlashAttention: Fast and Memory-E\ufb03cient Exact Attention", "https://arxiv.org/abs/2205.14135")]
    assert [(d.line, d.code) for d in log.diagnostics] == [(2, "mojibake"), (2, "backwards-link")]


@pytest.mark.parametrize("line", ["[https://a.org](mailto:me@b.org)", '[https://a.org](https://b.org "t")',
                                  "[https://a.org](/path)", "[https://a.org](#anchor)"])
def test_a_link_to_a_url_or_path_is_not_backwards(line):
    assert fix_backwards_link(line) == (line, [])
