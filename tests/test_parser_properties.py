"""Properties of the parser over generated text (hypothesis).

* :func:`parse` never raises, whatever the text: header lines of every shape, CRLF,
  lone CR, a byte-order mark, front matter, any Unicode.
* It never loses or duplicates a line: the file put back together from front matter,
  preamble, headers and bodies is the repaired text, line for line, and the repairs
  keep the number of lines.
* An entry's links, tasks and words do not depend on the entries around it.
* :func:`count_words` (two regexes over the text) equals its rule applied word by word.
* :func:`entry_tasks` finds every line that :func:`parse_task` reads as a task.
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from worklog_gen.log.front_matter import front_matter_span
from worklog_gen.log.repair import normalize_line_ends, repair_text
from worklog_gen.log.tasks import entry_tasks, parse_task
from worklog_gen.log.words import count_words
from worklog_gen.log import parse
from worklog_gen.log.shapes import HEADER_RE

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

dashes = st.sampled_from(["-", " - ", "\u2013", " \u2013 ", "- ", " +", "\u2212"])
headers = st.builds(
    lambda prefix, a, b, y, sep, n, tail: f"{prefix}{a:02d}/{b}/{y} (T{sep}{n}){tail}",
    st.sampled_from(["", "## ", "   "]),
    st.integers(0, 40),
    st.integers(0, 40),
    st.sampled_from(["25", "2025", "26", "1999"]),
    dashes,
    st.integers(0, 400),
    st.sampled_from(["", " ", "\t"]),
)
iso_headers = st.builds(
    lambda m, d, n: f"2025-{m:02d}-{d:02d} (T - {n})", st.integers(0, 14), st.integers(0, 33), st.integers(0, 200)
)
words = st.sampled_from(
    ["Done", "done", "Next", "next", "->", "Tmr", "- Done;", "; Done.", "(Done,", "x_ptr", "__init__", "*em*", "**bold**",
     "`code`", "``a ` b``", "&amp;", "&", "AT&T", "\\*", "\\", "<b>", "<https://a.org>", "<", ">", "|", "~~s~~", "~",
     "[a](https://a.org)", "[https://b.org](B (c))", "[ref][r]", "[r]", "![i](x.png)", "]:", "[", "]", "(", ")", "caf\u00e9",
     "\u00c3\u00a9", "E\u00ef\u00ac\u0192cient", "\u2194", "12/09/25", "1.", "2)", "#", "-", "+", "=", "word", "GPU", "ﬃ", "\u00a0"]
)  # fmt: skip
prose = st.lists(words, min_size=1, max_size=8).map(" ".join)
block_lines = st.one_of(
    prose,
    prose.map(lambda s: "- " + s),
    prose.map(lambda s: "  - " + s),
    prose.map(lambda s: "1. " + s),
    prose.map(lambda s: "> " + s),
    prose.map(lambda s: "# " + s),
    prose.map(lambda s: "    " + s),
    prose.map(lambda s: "\t" + s),
    prose.map(lambda s: "| " + s + " |"),
    st.sampled_from(
        ["", "", "", "```", "```python", "~~~", "    ", "---", "***", "===", "|---|---|", "<!--", "-->", "<div>", "</div>",
         "<pre>", "</pre>", "[r]: https://r.org", "https://bare.org/x", "- [ ] open task", "- [x] done task", "-", "*",
         "- ```", "  ```", "> ```", "1.   wide marker", "* star", "  * nested star", "10) item", "+ plus", "- ", "<!-- c",
         "c -->", "<script>", "</script>", "<?x", "?>", "  - [x] nested task", "trailing  ", "ends with \\", " ---",
         "   ***", "> > deep", "  > quoted", "[r]:", "  https://r.org", '  "title"', "#", "## h ##", "- - -", "~~~~"]
    ),  # fmt: skip
    headers,
    iso_headers,
)
markdownish = st.lists(block_lines, max_size=40).map("\n".join)
line_ends = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def any_text(draw) -> str:
    lines = draw(st.lists(st.one_of(block_lines, st.text(max_size=30)), max_size=30))
    ends = draw(st.lists(line_ends, min_size=len(lines), max_size=len(lines)))
    text = "".join(line + end for line, end in zip(lines, ends))
    if draw(st.booleans()):
        text = draw(st.sampled_from(["---\ntitle: x\n---\n", "<!-- ---\nlayout: page\n--- -->\n", "---\n: [\n---\n"])) + text
    if draw(st.booleans()):
        text = "\ufeff" + text
    return text


def commonmark_lines(text: str) -> int:
    """Lines as CommonMark counts them: LF, CRLF and a lone CR end a line."""
    return len(re.split(r"\r\n|\r|\n", text.removeprefix("\ufeff")))


@SETTINGS
@given(any_text(), st.sampled_from(["auto", "mdy", "dmy"]))
@example("---\n  https://r.org\n---\n", "auto")  # a URL in the front matter is YAML: never made a link
def test_parse_never_raises_and_keeps_every_line(text, order):
    log = parse(text, "p.md", date_order=order)
    lines = normalize_line_ends(text)[0].split("\n")
    fixed, _ = repair_text(text, "p.md", boundaries=[i for i, line in enumerate(lines) if HEADER_RE.match(line)],
                           prose_start=lambda ls: front_matter_span(ls)[0])
    assert len(fixed.split("\n")) == commonmark_lines(text)
    assert log.reassemble() == fixed
    # Entries tile the file after the preamble: each line belongs to one part.
    (f,) = log.files
    start = f.front_matter_lines + f.preamble_lines + 1
    for e in f.entries:
        assert e.line == start and e.end_line >= e.line - (0 if e.header else 1)
        start = e.end_line + 1
    assert start == f.line_count + 1 or not f.entries
    for e in log.entries:
        assert all(e.line <= link.line <= e.end_line for link in e.links)
        assert all(e.line < t.line <= e.end_line for t in e.tasks)


@SETTINGS
@given(st.text())
def test_repair_keeps_the_number_of_lines(text):
    fixed, diagnostics = repair_text(text)
    assert len(fixed.split("\n")) == commonmark_lines(text)
    assert all(1 <= d.line <= commonmark_lines(text) for d in diagnostics)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(markdownish, min_size=1, max_size=4))
def test_each_entry_is_read_on_its_own(bodies):
    text = "".join(f"12/{9 + k:02d}/25 (T - {154 - k})\n{body}\n" for k, body in enumerate(bodies))
    together = parse(text, "p.md", date_order="mdy").entries
    for k, e in enumerate(together):
        alone = parse("\n" * (e.line - 1) + e.header + "\n" + e.body, "p.md", date_order="mdy").entries[0]
        assert (alone.line, alone.words, alone.links, alone.tasks) == (e.line, e.words, e.links, e.tasks)


word_pieces = st.sampled_from(
    [" ", "  ", "\t", "\n", "\x1c", "\x1f", "\x85", "\xa0", "\u2003", "\u3000", "\u200b", "a", "Z", "7", "_", "-", "->",
     "|", "**", ".", "é", "ﬃ", "中", "٣", "→", "–", "’", "https://", "http://a.org", "HTTP://", "ftp+x.y-z://", "www.",
     "WWW.", "x://", "1://", "://", "www", "e\u0301", "\U0001f600", "\ud800"]
)  # fmt: skip


_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://|www\.")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(word_pieces, st.text(max_size=4)), max_size=30).map("".join))
def test_count_words_equals_the_rule(text):
    words = [w for w in text.split() if any(c.isalnum() for c in w) and not _URL_START.match(w)]
    assert count_words(text) == len(words)


task_pieces = st.sampled_from(
    ["Done", "DONE", "done", "dOnE", "Next", "next", "NEXT", "Tmr", "tmr", "Tomorrow", "TOMORROW", "->", "\u2192", " - ", "-",
     ";", ".", ",", "!", "(", ")", " ", "  ", "\t", "[ ]", "[x]", "[X]", "- ", "* ", "1. ", "> ", "word", "\u0130", "\u212a",
     "caf\u00e9", "[", "]", "x"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(task_pieces, max_size=10).map("".join), min_size=1, max_size=6))
@example(["- [x] Tiled GEMM", "- [X]", "* [ ]\tnotes"])
@example(["Kafka. (Done, edits pending)", "mid-term; Done.", "Slides -\tDONE", "Swizzling - Done; - Next;"])
@example(["Write the kernel ->Tmr", "Later \u2192 tomorrow", "- Next!", "x. next )"])
def test_entry_tasks_finds_every_task(lines):
    """The cheap test that skips lines (``tasks._HINT``) never skips a task."""
    expected = [t for i, line in enumerate(lines) if (t := parse_task(line, 10 + i)) is not None]
    assert entry_tasks(lines, 10, set()) == expected
