"""LineIndex: lines found over the whole text map back to the right line."""

from __future__ import annotations

import pytest

from worklog_gen.line_index import LineIndex


def test_line_index_finds_lines():
    lines = ["alpha", "Beta done", "", "gamma DONE", "delta"]
    index = LineIndex(lines)
    assert index.containing(["done"]) == [1]
    assert index.lower().containing(["done"]) == [1, 3]
    assert [index.line_of(p) for p in (0, 5, 6, 16, 17)] == [0, 0, 1, 2, 3]


def test_line_index_ascii_lower_keeps_offsets():
    lines = ["caf\u00c9 \u2192 DONE", "\u0130stanbul Next", "", "plain tmr", "\u212a \ud800"]
    index = LineIndex(lines).ascii_lower()
    assert index.text == "\n".join(lines).encode("latin-1", "replace").lower()
    assert index.text.startswith("caf\u00c9 ? done".encode("latin-1"))  # only ASCII letters change
    assert index.containing([b"done"]) == [0]
    assert index.containing([b"next", b"tmr"]) == [1, 3]
    assert index.containing([b"k"]) == []  # the Kelvin sign stays as it is
    assert index.starts == LineIndex(lines).starts


def test_line_index_holding_finds_lines_with_any_of_the_characters():
    lines = ["a [link](x)", "caf\u00e9 \u2192 `code`", "", "plain", "~~s~~ \U0001f600", "]"]
    index = LineIndex(lines)
    assert index.holding("[]") == [0, 5]
    assert index.holding("`~") == [1, 4]
    assert index.holding("z|") == []
    assert index.holding("\u00e9") == [1]  # Latin-1 characters too
    with pytest.raises(ValueError, match="Latin-1"):
        index.holding("?")  # "?" also stands for "\u2192" and "\U0001f600"
    with pytest.raises(ValueError, match="Latin-1"):
        index.holding("\u2192")


def test_line_index_lower_keeps_offsets_when_case_changes_length():
    lines = ["\u0130stanbul", "done"]  # "İ".lower() is two characters
    assert LineIndex(lines).lower().containing(["done"]) == [1]
