"""Edge cases of the online-softmax notebook's kernels, under ``TRITON_INTERPRET=1`` on the CPU.

The notebook's own correctness section runs in ``test_notebooks.py``; here its definitions
(the source before "## 3. Correctness") are driven at the shapes that break index
arithmetic: one column, rows one past a chunk, non-power-of-two splits, empty segments,
all ``-inf`` rows, and bad input.

Triton decides at import whether ``@triton.jit`` interprets, and other tests import it
without the interpreter, so the kernels run in one child process started with
``TRITON_INTERPRET=1``: it evaluates a list of calls and returns each result (a tensor)
or the exception it raised (type and message); the assertions are made here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "online_softmax.py"
BLOCK = 64  # small chunks: every loop runs several iterations at these sizes

pytestmark = [pytest.mark.notebook, pytest.mark.xdist_group("softmax_kernels")]

CHILD = r'''
import sys
from pathlib import Path
from types import SimpleNamespace

import torch

notebook, calls_path, results_path = map(Path, sys.argv[1:4])
# the source before the correctness section, compiled under the notebook's own file name so that
# line numbers match the file (the interpreter re-reads each kernel's source from it)
lines = notebook.read_text().splitlines(keepends=True)
end = lines.index("# ## 3. Correctness\n") - 1  # the '# %% [markdown]' line of that cell
namespace = {"__name__": "online_softmax"}
exec(compile("".join(lines[:end]), str(notebook), "exec"), namespace)


def fused_stages_on_card(optin, row_bytes, loop_stages, block):
    """The notebook's fused_config on a card allowing ``optin`` bytes of shared memory per block, for a
    kernel that keeps ``loop_stages - 1`` prefetched rows of ``row_bytes`` (plus 1 KiB of scratch) in
    shared memory. Compiling and the occupancy query are stood in for: the interpreter compiles nothing."""
    class Kernel:
        def warmup(self, *args, LOOP_STAGES, **kwargs):
            return SimpleNamespace(metadata=SimpleNamespace(shared=(LOOP_STAGES - 1) * row_bytes + 1024))
    saved = {k: namespace.get(k) for k in ("PROPS", "softmax_fused_kernel", "occupancy")}
    namespace.update(PROPS=SimpleNamespace(shared_memory_per_block_optin=optin), softmax_fused_kernel=Kernel(),
                     occupancy=lambda kernel, num_warps: {"shared_bytes": kernel.metadata.shared})
    try:
        x = torch.empty(2, block)
        return namespace["fused_config"](x, x, 8, loop_stages)
    finally:
        namespace.update(saved)
        namespace["_FUSED_CONFIGS"].clear()


namespace["fused_stages_on_card"] = fused_stages_on_card

results = {}
for key, function, args, kwargs in torch.load(calls_path):
    try:
        results[key] = namespace[function](*args, **kwargs)
    except Exception as exc:  # reported to the test, which asserts on it
        results[key] = (type(exc).__name__, str(exc))

results["constants"] = {k: namespace[k] for k in ("FUSED_MAX_N", "FUSED_LIMIT", "TARGET_PROGRAMS")}
torch.save(results, results_path)
'''


def variant_calls(name: str, x, splits: int) -> list:
    """(key, function, args, kwargs) for every softmax of the notebook on ``x``."""
    return [
        ((name, "three-pass"), "softmax_rowwise", (x, "three-pass"), {"block_size": BLOCK}),
        ((name, "online"), "softmax_rowwise", (x, "online"), {"block_size": BLOCK}),
        ((name, "three-pass split-row"), "softmax_split", (x, "three-pass", splits, BLOCK), {}),
        ((name, "online split-row"), "softmax_split", (x, "online", splits, BLOCK), {}),
        ((name, "fused"), "softmax_fused", (x,), {}),
        ((name, "dispatcher"), "softmax", (x,), {}),
        ((name, "dispatcher, looped paths"), "softmax", (x,), {"fused_max_n": 1, "block_size": BLOCK}),
    ]


def seeded_logits(M: int, N: int, seed: int):
    return torch.randn(M, N, generator=torch.Generator().manual_seed(seed)) * 4


# (3, 65): one element past a chunk; 3 splits is not a power of two; (2, 300) in 8 splits of
# whole 64-element chunks leaves the last three segments empty
SHAPES = {"1x1": ((1, 1), 2), "3x64": ((3, 64), 3), "3x65": ((3, 65), 3), "4x300": ((4, 300), 3),
          "2x300 splits 8": ((2, 300), 8)}


def hard_rows():
    x = seeded_logits(4, 200, 0)
    x[0, ::2] = float("-inf")
    x[1, :150] = float("-inf")  # whole segments of a split row without a finite element
    x[2] = torch.linspace(-1, 1, 200) * 3e38  # near the fp32 maximum: x - max overflows to -inf
    x[3] = torch.linspace(-1, 1, 200) * 1e30
    return x


def neg_inf_row():
    x = seeded_logits(3, 130, 1)
    x[1] = float("-inf")
    return x


BAD = {
    "1-D": ("softmax", (torch.randn(10),), {}),
    "int64": ("softmax", (torch.ones(2, 3, dtype=torch.int64),), {}),
    "column stride": ("softmax", (torch.randn(5, 4).t(),), {}),
    "no columns": ("softmax", (torch.empty(3, 0),), {}),
    "fused too long": ("softmax_fused", (torch.zeros(1, 32769),), {}),
    "zero splits": ("softmax_split", (torch.randn(2, 8), "online"), {"splits": 0}),
    "unknown algorithm": ("softmax_rowwise", (torch.randn(2, 8), "two-pass"), {}),
}
# (shared memory per block the card allows, bytes of one prefetched row, loop stages asked for, row length):
# a 2^15-element fp32 row is 128 KiB, over the 99 KB of sm_86/sm_89 (RTX 4090, L4) and within sm_90's
# 227 KB and sm_80's 163 KB (CUDA C++ Programming Guide, technical specifications), with the stages kept
CARDS = {"sm_90, 2^15 fp32, 2 stages": ((227 * 1024, 2**17, 2, 2**15), 2),
         "sm_89, 2^15 fp32, 2 stages": ((99 * 1024, 2**17, 2, 2**15), 1),
         "sm_89, 2^14 fp32, 2 stages": ((99 * 1024, 2**16, 2, 2**14), 2),
         "sm_80, 2^15 fp32, 3 stages": ((163 * 1024, 2**17, 3, 2**15), 2)}
DISPATCH = {"2 rows of 2^20": (2, 2**20), "1 row of 3 chunks": (1, 3 * 4096)}


@pytest.fixture(scope="module")
def inputs():
    data = {name: seeded_logits(*shape, seed=sum(shape)) for name, (shape, _) in SHAPES.items()}
    data["hard rows"], data["all -inf row"], data["no rows"] = hard_rows(), neg_inf_row(), torch.empty(0, 100)
    return data


@pytest.fixture(scope="module")
def results(inputs, tmp_path_factory):
    """Every call, evaluated once in a child process under the interpreter."""
    calls = []
    for name, (_, splits) in SHAPES.items():
        calls += variant_calls(name, inputs[name], splits)
    for name in ("hard rows", "all -inf row", "no rows"):
        calls += variant_calls(name, inputs[name], 4)
    calls += [(("bad", k), f, a, kw) for k, (f, a, kw) in BAD.items()]
    calls += [(("dispatch", k), "choose_path", mn, {}) for k, mn in DISPATCH.items()]
    calls.append((("dispatch", "1 row of 3 chunks, looped"), "choose_path", DISPATCH["1 row of 3 chunks"],
                  {"fused_max_n": 1}))
    calls += [(("stages", k), "fused_stages_on_card", a, {}) for k, (a, _) in CARDS.items()]
    folder = tmp_path_factory.mktemp("softmax")
    torch.save(calls, folder / "calls.pt")
    env = {**os.environ, "TRITON_INTERPRET": "1", "WORKLOG_GEN_OUTPUT": str(folder / "output")}
    child = subprocess.run([sys.executable, "-c", CHILD, str(NOTEBOOK), str(folder / "calls.pt"),
                            str(folder / "results.pt")], cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=600)
    assert child.returncode == 0, child.stderr[-4000:]
    return torch.load(folder / "results.pt")


def outputs(results, name: str) -> dict:
    found = {variant: out for (case, variant), out in
             ((k, v) for k, v in results.items() if isinstance(k, tuple)) if case == name}
    assert len(found) == 7, sorted(found)
    for variant, out in found.items():
        assert isinstance(out, torch.Tensor), f"{name}, {variant} raised {out}"
    return found


def relative_error(out, x) -> float:
    ref = torch.softmax(x.double(), dim=-1)
    return ((out.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("name", list(SHAPES))
def test_every_variant_matches_fp64_torch(results, inputs, name):
    x = inputs[name]
    for variant, out in outputs(results, name).items():
        assert out.shape == x.shape and out.dtype == x.dtype, variant
        assert not out.isnan().any(), variant
        assert relative_error(out, x) < 1e-5, variant
        assert torch.allclose(out.sum(dim=-1), torch.ones(x.shape[0]), atol=1e-5), variant


def test_rows_with_some_neg_inf_and_huge_values_have_no_nan(results, inputs):
    x = inputs["hard rows"]
    assert not torch.softmax(x.double(), dim=-1).isnan().any()
    for variant, out in outputs(results, "hard rows").items():
        assert not out.isnan().any(), variant
        assert (out[0, ::2] == 0).all() and (out[1, :150] == 0).all(), variant
        assert relative_error(out, x) < 1e-5, variant


def test_all_neg_inf_row_is_nan_as_in_torch(results, inputs):
    assert torch.softmax(inputs["all -inf row"], dim=-1)[1].isnan().all()
    for variant, out in outputs(results, "all -inf row").items():
        assert out[1].isnan().all(), variant
        assert not out[[0, 2]].isnan().any(), variant
        assert relative_error(out[[0, 2]], inputs["all -inf row"][[0, 2]]) < 1e-5, variant


def test_no_rows_gives_an_empty_result(results):
    for variant, out in outputs(results, "no rows").items():
        assert out.shape == (0, 100), variant


@pytest.mark.parametrize("case, error, words", [
    ("1-D", "ValueError", "2-D"), ("int64", "TypeError", "int64"), ("column stride", "ValueError", "contiguous"),
    ("no columns", "ValueError", "empty row"), ("fused too long", "ValueError", "FUSED_LIMIT"),
    ("zero splits", "ValueError", "splits"), ("unknown algorithm", "ValueError", "algorithm"),
])
def test_bad_input_is_refused_with_a_reason(results, case, error, words):
    assert results[("bad", case)][0] == error
    assert words in results[("bad", case)][1]


def test_dispatcher_picks_by_row_length_and_row_count(results):
    target = results["constants"]["TARGET_PROGRAMS"]
    path, splits = results[("dispatch", "2 rows of 2^20")]
    assert path == "online split-row"
    assert 2 * splits >= target and splits & (splits - 1) == 0  # enough programs; a power of two
    # never more segments than chunks: 3 chunks of 4096 give at most 3
    assert results[("dispatch", "1 row of 3 chunks")] == ("fused", 1)  # 12288 <= FUSED_MAX_N
    assert results[("dispatch", "1 row of 3 chunks, looped")] == ("online split-row", 3)


@pytest.mark.parametrize("card", list(CARDS))
def test_fused_kernel_drops_loop_stages_that_overflow_the_cards_shared_memory(results, card):
    """An RTX 4090 or L4 (99 KB per block) cannot hold a prefetched 2^15-element fp32 row; the notebook
    compiles first and launches with the stages that fit instead of raising OutOfResources."""
    (optin, _, _, _), stages = CARDS[card]
    config = results[("stages", card)]
    assert isinstance(config, dict), config
    assert config["loop_stages"] == stages
    assert config["shared_bytes"] <= optin
