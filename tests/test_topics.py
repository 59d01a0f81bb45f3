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
