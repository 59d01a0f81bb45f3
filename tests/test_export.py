"""Export: the JSON shape the CLI prints, and the one-file markdown export."""

import json
from types import SimpleNamespace

from markdown_it import MarkdownIt

from worklog_gen.site.export import to_json, to_markdown

CFG = SimpleNamespace(
    url_prefix="worklog",
    topics=[SimpleNamespace(id="tiled-matmul", title="Tiled matmul", aliases=["matmul", "GEMM"])],
)


def test_to_json_has_exactly_the_documented_shape(make_entry, make_log):
    entries = [
        make_entry("2025-12-09", "Read [Brrr](https://horace.io/brrr_intro.html). Slides - Done", 154,
                   links=[("Brrr", "https://horace.io/brrr_intro.html")], tasks=[("Slides - Done", "done")],
                   path="worklog/log.md", line=21),
        make_entry("2025-12-15", "Coded Triton MatMul.\n\nEntry for TA -> Tmr", 148,
                   tasks=[("Entry for TA -> Tmr", "carried")]),
    ]
    data = to_json(make_log(entries), CFG)
    assert json.loads(json.dumps(data)) == data  # JSON-ready
    assert set(data) == {"target_date", "entries"} and data["target_date"] == "2026-05-12"
    first, second = data["entries"]
    assert first == {
        "date": "2025-12-09",
        "countdown": 154,
        "url": "worklog/2025-12-09/",
        "source": "worklog/log.md:21",
        "links": [{"title": "Brrr", "url": "https://horace.io/brrr_intro.html"}],
        "tasks": [{"text": "Slides - Done", "status": "done"}],
        "topics": [],
        "words": 5,  # passed through from the entry
        "kind": "day", "title": None, "tags": [], "day_number": None, "draft": False,
    }
    assert second["topics"] == ["tiled-matmul"] and second["tasks"][0]["status"] == "carried"


def test_to_json_without_target_or_countdown(make_entry, make_log):
    data = to_json(make_log([make_entry("2025-12-09", "x")], target=None), CFG)
    assert data["target_date"] is None and data["entries"][0]["countdown"] is None


def test_to_markdown_is_one_clean_file_with_iso_headings(make_entry, make_log):
    entries = [
        make_entry("2025-12-10", "Second day.\n\n# My own heading\n\n```\n# not a heading\n```\n", 153),
        make_entry("2025-12-09", "First day.\n\nNotes\n-----\n\n- list\n", 154),
    ]
    out = to_markdown(make_log(entries, preamble="Ruthless work-ethic\n", title="Worklog"))
    assert out.endswith("\n") and not out.endswith("\n\n")
    tokens = MarkdownIt("commonmark").parse(out)
    headings = [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == [
        ("h1", "Worklog"),
        ("h2", "2025-12-09 (T-154)"),
        ("h4", "Notes"),  # setext heading, two levels down
        ("h2", "2025-12-10 (T-153)"),
        ("h3", "My own heading"),
    ]
    assert "```\n# not a heading\n```" in out  # code is left alone
    assert "Target date: 2026-05-12" in out and "Ruthless work-ethic" in out
    assert out.index("First day.") < out.index("Second day.")
