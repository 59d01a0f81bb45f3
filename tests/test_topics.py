"""Topic matching: names as whole words, any case, in prose only."""

from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worklog_gen.site.topics import match_topics, prose

TOPICS = [
    SimpleNamespace(id="vector-add", title="Vector add", aliases=["vector add", "vector addition", "vecadd"]),
    SimpleNamespace(
        id="tiled-matmul", title="Tiled matmul", aliases=["matmul", "GEMM", "matrix multiplication", "tiled GEMM"]
    ),
    SimpleNamespace(id="online-softmax", title="Online softmax", aliases=["softmax", "online softmax", "safe softmax"]),
]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Coded Triton MatMul, both tiled GEMM and Memory Coalesced.", ["tiled-matmul"]),
        ("gemm", ["tiled-matmul"]),
        ("Next, MATRIX   MULTIPLICATION in Triton", ["tiled-matmul"]),
        ("I see a ReLU followed by a Softmax.", ["online-softmax"]),
        ("The tiled-matmul notebook", ["tiled-matmul"]),
        ("vector-add and online-softmax", ["vector-add", "online-softmax"]),
        ("Learning Triton One Kernel At a Time: Vector Addition", ["vector-add"]),
        ("softmax, then GEMM, then vecadd", ["vector-add", "tiled-matmul", "online-softmax"]),
        ("**GEMM** in bold and `softmax` in code", ["tiled-matmul", "online-softmax"]),
    ],
)
def test_names_match_as_whole_words_in_any_case(text, expected):
    assert match_topics(text, TOPICS) == expected


@pytest.mark.parametrize(
    "text",
    [
        "matmuls and GEMMs are plural",  # longer words
        "log_softmax and softmaxed",
        "vectoradd, vector adder, supervecadd",
        "submatmul",
    ],
)
def test_no_match_inside_other_words(text):
    assert match_topics(text, TOPICS) == []


@pytest.mark.parametrize(
    "text",
    [
        "[a blog post](https://example.com/posts/matmul-in-triton/)",
        "<https://example.com/softmax>",
        "see https://example.com/gemm/vecadd for details",
        "www.softmax.org",
        "[https://x.org/gemm](https://x.org/gemm)",
    ],
)
def test_no_match_inside_urls(text):
    assert match_topics(text, TOPICS) == []


def test_link_text_is_prose_but_code_blocks_are_not():
    body = "[Triton matmul tutorial](https://x.org/a)\n\n```python\nsoftmax(x)\n```\n\n    gemm(a, b)\n"
    assert match_topics(body, TOPICS) == ["tiled-matmul"]
    assert prose(body) == "Triton matmul tutorial"


def test_prose_keeps_one_line_per_block():
    assert prose("# Title\n\nFirst *para*\nstill first.\n\n- item one\n- item two\n") == (
        "Title\nFirst para still first.\nitem one\nitem two"
    )


def test_title_and_id_are_names_even_without_aliases():
    topic = SimpleNamespace(id="flash-attn", title="Flash attention", aliases=[])
    assert match_topics("Read about FLASH ATTENTION today", [topic]) == ["flash-attn"]
    assert match_topics("flash-attn kernels", [topic]) == ["flash-attn"]
    assert match_topics("a flash of attention", [topic]) == []


# Underscores are left out here: in markdown `_gemm_` is emphasis, whose prose is the
# word "gemm" (a real mention); glued underscores are covered by the test below.
@given(
    left=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=0, max_size=3),
    right=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=0, max_size=3),
)
def test_a_name_glued_to_word_characters_never_matches(left, right):
    text = f"{left}gemm{right}"
    expected = ["tiled-matmul"] if not left and not right else []
    assert match_topics(text, TOPICS) == expected


def test_underscore_glued_names_do_not_match_but_emphasis_does():
    assert match_topics("used log_softmax and gemm_kernel", TOPICS) == []
    assert match_topics("the _GEMM_ part", TOPICS) == ["tiled-matmul"]


def test_the_repository_s_moe_topic_catches_a_log_s_words_for_its_mixture_of_experts_project():
    """The MoE topic as this repository's mkdocs.yml configures it: the ways a log names the project
    (upper-case MOE glued to a parenthesis, DeepSeek-MoE in any case, MegaBlocks, grouped GEMM) link to
    it, and words that only contain the letters do not."""
    from worklog_gen.config import read_mkdocs_yml

    config = read_mkdocs_yml(Path(__file__).resolve().parents[1] / "mkdocs.yml")
    plugin = next(p["worklog"] for p in config["plugins"] if isinstance(p, dict) and "worklog" in p)
    moe = [SimpleNamespace(**t) for t in plugin["topics"] if t["id"] == "moe"]
    assert moe
    for text in ("Sketched the GPU kernels for MOE from first principles.",
                 "Next: the custom kernel for MOE(with triton), then the report.",
                 "Porting the deepseek-MOE kernel into the nanogpt speedrun.",
                 "Watched the MegaBlocks talk: dropless routing.",
                 "A grouped GEMM over ragged experts."):
        assert match_topics(text, moe) == ["moe"], text
    for text in ("Shoes: moes, moelleux, Moesha.", "The expert said so."):
        assert match_topics(text, moe) == [], text


def test_a_day_written_in_two_files_keeps_the_topics_of_both(tmp_path):
    """A T-minus log and a notes file both write 12/09/25: the day's one page links the topics
    each mentions, and each topic page lists the day once, with the text that mentions it."""
    import datetime as dt

    from worklog_gen.config import load_plugin_config
    from worklog_gen.site.generate import generate

    (tmp_path / "worklog").mkdir()
    (tmp_path / "worklog" / "tminus.md").write_text(
        "12/09/25 (T - 154)\nTiled a GEMM with 64x64 blocks; 610 TFLOP/s in bf16.\n\n"
        "12/10/25 (T - 153)\nRead about the L2 cache and swizzled launch order.\n", encoding="utf-8")
    (tmp_path / "worklog" / "notes.md").write_text(
        "12/09/25 (T - 154)\nEvening: wrote the online softmax in one pass over the row.\n", encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: Kernels by hand\nplugins:\n  - worklog:\n      topics:\n"
        "        - {id: tiled-matmul, title: Tiled matmul, aliases: [GEMM]}\n"
        "        - {id: online-softmax, title: Online softmax}\n"
        "        - {id: l2-cache, title: L2 cache}\n", encoding="utf-8")
    cfg, root = load_plugin_config(tmp_path / "mkdocs.yml")
    files = generate(cfg, root, site_name="Kernels by hand", build_date=dt.date(2025, 12, 12)).files
    day = files["worklog/2025-12-09.md"]
    topics = day[day.index("## Topics"):]
    assert "[Tiled matmul](../topics/tiled-matmul.md)" in topics
    assert "[Online softmax](../topics/online-softmax.md)" in topics
    assert "L2 cache" not in topics
    for topic, text in [("tiled-matmul", "Tiled a GEMM"), ("online-softmax", "Evening: wrote the online softmax")]:
        page = files[f"topics/{topic}.md"]
        assert "## Days that mention it (1)" in page, page
        assert page.count("(../worklog/2025-12-09.md)") == 1 and text in page, page
    assert "(../worklog/2025-12-10.md)" in files["topics/l2-cache.md"]
