"""A Logseq graph as the worklog folder: its journals read, its pages, settings and backups left
out, its pasted images published, and what Logseq writes into a journal (properties, block
references, macros, image sizes, task keywords) shown as Logseq shows it; and, over generated
text, the markup of Logseq and Obsidian read without error, every line in its place."""

from __future__ import annotations

import base64
import re

import pytest
from bs4 import BeautifulSoup
from hypothesis import given, settings
from hypothesis import strategies as st

from worklog_gen.log import logseq, obsidian
from worklog_gen.log.parse import load

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")
SWIZZLE_ID = "6756a1b2-1c3d-4e5f-8a9b-0c1d2e3f4a5b"

DEC_08 = f"""\
- Read the [Triton matmul tutorial](https://triton-lang.org/main/getting-started/tutorials/03-matrix-multiplication.html)
  collapsed:: true
\t- grouped ordering of the program ids keeps tiles of B in L2
\t  id:: {SWIZZLE_ID}
\t- `tl.dot` lowers to wgmma on Hopper
- DONE vector add against `torch.add`
  :LOGBOOK:
  CLOCK: [2025-12-08 Mon 10:02:11]--[2025-12-08 Mon 11:40:05] =>  01:37:54
  :END:
- TODO swizzle the program ids
"""
DEC_09 = f"""\
- Why the swizzle works: (({SWIZZLE_ID}))
- Roofline of my matmul
  ![image.png](../assets/image_1733750000000_0.png){{:height 300, :width 420}}
- DONE swizzle the program ids
- {{{{video https://www.youtube.com/watch?v=Rg0kE9kDvrA}}}}
- Not yet: ((00000000-1111-2222-3333-444444444444))
"""
DEC_10 = """\
type:: journal
source:: lecture 7
tags:: triton, [[warp shuffles]]

- LATER read the FlashAttention paper #attention
- ```python
  id:: stays-in-code
  ```
"""


def _graph() -> dict[str, bytes]:
    """The files of a Logseq graph kept as the worklog folder (``worklog/``): three journals, a page,
    a pasted image, the settings, and a backup whose name starts with a date."""
    return {
        "worklog/journals/2025_12_08.md": DEC_08.encode(),
        "worklog/journals/2025_12_09.md": DEC_09.encode(),
        "worklog/journals/2025_12_10.md": DEC_10.encode(),
        "worklog/pages/Tensor Cores.md": b"- wgmma is the Hopper instruction\n",
        "worklog/assets/image_1733750000000_0.png": PNG,
        "worklog/logseq/config.edn": b"{:meta/version 1}\n",
        "worklog/logseq/bak/journals/2025_12_09/2025-12-09T10_00_00.000Z.Desktop.md": b"- an old copy\n",
    }


def test_to_markdown_writes_what_logseq_shows():
    text = "\n".join([
        "- DONE tiled matmul", "  collapsed:: true", "- LATER read the paper", "  heading:: true",
        "type:: journal", "source:: lecture 7", "- {{video https://youtu.be/x}} {{query (todo now)}}",
        "- ![a.png](../assets/a.png){:height 300, :width 420}", "- `{{video https://in.code}}`",
        "```", "id:: kept", "- TODO in code", "```",
    ])
    assert logseq.to_markdown(text).split("\n") == [
        "- [x] tiled matmul", "- [ ] LATER read the paper",
        "type:: journal  ", "source:: lecture 7", "- <https://youtu.be/x> {{query (todo now)}}",
        '- ![a.png](../assets/a.png){ width="420" height="300" }', "- `{{video https://in.code}}`",
        "```", "id:: kept", "- TODO in code", "```",
    ]


def test_hidden_properties_are_no_words_and_every_line_keeps_its_place():
    text = f"- a block\n  id:: {SWIZZLE_ID}\n  collapsed:: true\n- next"
    assert logseq.without_hidden_properties(text) == "- a block\n\n\n- next"


def test_block_texts_are_the_line_that_starts_each_block(tmp_path):
    day = tmp_path / "2025_12_08.md"
    day.write_text(DEC_08, encoding="utf-8")
    assert logseq.block_texts([day]) == {SWIZZLE_ID: (day, "grouped ordering of the program ids keeps tiles of B in L2")}


def test_a_graph_is_read_for_its_journals_only(tmp_path):
    for name, data in _graph().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (tmp_path / "mkdocs.yml").write_text("site_name: g\nplugins:\n  - worklog\n", encoding="utf-8")
    from worklog_gen.config import exclusion, load_plugin_config

    cfg, root = load_plugin_config(tmp_path / "mkdocs.yml")
    log = load(tmp_path / "worklog", exclude=exclusion(cfg, root))
    assert [e.date.isoformat() for e in log.entries] == ["2025-12-08", "2025-12-09", "2025-12-10"]
    assert {e.path.split("/")[-2] for e in log.entries} == {"journals"}
    shown = "\n".join(line for line in DEC_08.split("\n") if "::" not in line and not re.match(r"\s*(:|CLOCK)", line))
    (tmp_path / "plain.md").write_text("2025-12-08\n" + shown, encoding="utf-8")
    assert log.entries[0].words == load(tmp_path / "plain.md").entries[0].words  # hidden properties are no words
    assert log.entries[2].tags == ["triton", "warp shuffles", "attention"]  # tags::, then #tags
    missing = [d for d in log.diagnostics if d.code.value == "wikilink"]
    assert sorted((d.path.rsplit("/", 1)[-1], d.line, d.message.split(" ")[0]) for d in missing) == [
        ("2025_12_09.md", 6, "block"), ("2025_12_10.md", 3, "wikilink")]  # the unknown block; a page, left out


@pytest.mark.parametrize("sanitize", [False, True], ids=["as-written", "sanitized"])
def test_a_graph_builds_as_logseq_shows_it(build_site, sanitize):
    site = build_site(None, files=_graph(), plugin={"sanitize": sanitize})

    def article(day):
        return BeautifulSoup((site / f"worklog/{day}/index.html").read_text(encoding="utf-8"), "html.parser").find("article")

    dec_08, dec_09, dec_10 = article("2025-12-08"), article("2025-12-09"), article("2025-12-10")
    assert "collapsed::" not in dec_08.get_text() and "id::" not in dec_08.get_text()
    assert "LOGBOOK" not in dec_08.get_text() and "CLOCK" not in dec_08.get_text()  # the drawer Logseq hides
    boxes = [(i["aria-label"], i.has_attr("checked")) for i in dec_08.select("li.task-list-item input")]
    assert boxes == [("done", True), ("open", False)]  # - DONE, - TODO
    ref = dec_09.find("a", string="grouped ordering of the program ids keeps tiles of B in L2")
    assert ref is not None and ref["href"] == "../2025-12-08/"  # the block's day
    read = [a["href"] for a in dec_09.find("h2", id="links").find_next("ul").find_all("a")]
    assert read == ["https://www.youtube.com/watch?v=Rg0kE9kDvrA"]  # a link to another day is written, not read
    image = dec_09.find("img", alt="image.png")
    assert (image["width"], image["height"]) == ("420", "300")
    assert (site / "worklog/2025-12-09" / image["src"]).read_bytes() == PNG  # published from the graph's assets/
    assert dec_09.find("a", href="https://www.youtube.com/watch?v=Rg0kE9kDvrA") is not None
    assert "{{video" not in dec_09.get_text()
    assert "((00000000-1111-2222-3333-444444444444))" in dec_09.get_text()  # no such block: as written
    assert "type:: journal\nsource:: lecture 7\ntags:: triton" in dec_10.get_text()  # shown, one a line
    assert dec_10.find("br") is not None
    assert "id:: stays-in-code" in dec_10.find("code").get_text()
    assert not (site / "worklog/tensor-cores").exists() and "old copy" not in (site / "worklog/index.html").read_text()


# --- over generated text -------------------------------------------------------------------------

_PIECES = st.sampled_from(["%%", "^id-1", "`", "```", "\n", "#", "#cuda", "::", "id:: x", "collapsed:: true", "- ", "- TODO ",
                           "{{video https://x.org/v}}", "{:width 4}", ":LOGBOOK:", ":END:", "CLOCK: [x]", "![a](b.png)", "((", "))", "[[p]]", "x", " ", "\t"])
_TEXTS = st.lists(st.one_of(_PIECES, st.text(max_size=4)), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_the_tools_markup_is_read_without_error_and_lines_keep_their_places(text):
    """Whatever the text: Obsidian's comments and Logseq's hidden properties leave every line in its
    place (the parser's line numbers hold), and the page's Logseq markup, tags and block ids are
    read without an error."""
    assert obsidian.without_comments(text).count("\n") == text.count("\n")
    assert obsidian.without_block_ids(text).count("\n") == text.count("\n")
    assert logseq.without_hidden_properties(text).count("\n") == text.count("\n")
    shown = logseq.to_markdown(text)
    assert len(shown.split("\n")) <= len(text.split("\n"))  # lines left out, none made up
    assert all(tag for tag in obsidian.hashtags(text) + logseq.page_tags(text))


@pytest.mark.parametrize("config, title", [("{:meta/version 1}", "Dec 8th, 2025"),
                                           ('{:journal/page-title-format "EEE, dd.MM.yyyy"}', "Mon, 08.12.2025")],
                         ids=["default-format", "configured-format"])
def test_a_wikilink_to_a_journal_title_leads_to_that_day(tmp_path, config, title):
    """Logseq's date picker links a day by its journal title, in the graph's format: the link leads to
    that day's journal (a day the graph lacks stays text, with a note)."""
    graph = tmp_path / "worklog"
    (graph / "journals").mkdir(parents=True)
    (graph / "logseq").mkdir()
    (graph / "logseq" / "config.edn").write_text(config, encoding="utf-8")
    (graph / "journals" / "2025_12_08.md").write_text("- tiled matmul\n", encoding="utf-8")
    (graph / "journals" / "2025_12_09.md").write_text(f"- carried from [[{title}]] and [[Dec 31st, 2030]]\n",
                                                      encoding="utf-8")
    log = load(graph)
    assert list(log.entries[1].internal_links.values()) == [f"[{title}](<2025_12_08.md>)", "Dec 31st, 2030"]
    assert [d.line for d in log.diagnostics if d.code == "wikilink"] == [1]
