"""The FlashAttention notebook's launcher and model beyond its own correctness cells.

Under ``TRITON_INTERPRET=1`` (fp32: the interpreter has no bf16): one query attends to one
key (the output is that value), a causal first row attends only to itself, the result depends
on neither the block sizes nor the version (pointers, descriptors, persistent) nor the order of
the causal programs nor the one masked loop that warp specialization takes, the causal mask
added through the dot is the causal mask, a persistent program walks tiles of several heads at
a ragged length, the saved log-sum-exp is its
definition (what the backward topic recomputes P from), and bad input is a clear error. The
backward has its own topic and tests (tests/test_flash_attention_backward_kernels.py). On the host: the FLOP and byte model,
and the causal kernel compiled for sm_90.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from interpreted import JIT_FUNCTIONS, run_for_sm90, run_interpreted

# its module fixtures (compiled kernels, built sites) run once: on one worker (pyproject addopts)
pytestmark = pytest.mark.xdist_group("flash_attention_kernels")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "flash_attention.py"


def notebook_function(name: str):
    """A top-level function of the notebook that needs no GPU, compiled on its own."""
    node = next(n for n in ast.parse(NOTEBOOK.read_text()).body if isinstance(n, ast.FunctionDef) and n.name == name)
    namespace: dict = {}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(NOTEBOOK), "exec"), namespace)
    return namespace[name]


def test_the_flop_model_is_4bhn2d_halved_when_causal():
    flops = notebook_function("attention_flops")
    assert flops(2, 16, 8192, 128, False) == 4 * 2 * 16 * 8192**2 * 128
    assert flops(2, 16, 8192, 128, True) == flops(2, 16, 8192, 128, False) / 2


def test_the_naive_version_moves_the_n_squared_scores():
    nbytes = notebook_function("attention_bytes")
    fused, naive = nbytes(4, 16, 8192, 128), nbytes(4, 16, 8192, 128, naive=True)
    assert fused == 4 * 4 * 16 * 8192 * 128 * 2
    assert naive - fused == 4 * 4 * 16 * 8192**2 * 2


CHILD = r'''
forward, naive = namespace["attention_forward"], namespace["naive_attention"]
torch.manual_seed(4)
q, k, v = (torch.randn(1, 2, 1, 64) for _ in range(3))
results["one"] = [(forward(q, k, v, version=version)[0], v) for version in ("pointers", "tma", "persistent")]
q, k, v = (torch.randn(1, 1, 77, 32) for _ in range(3))
results["causal"] = (forward(q, k, v, True, BLOCK_M=32, BLOCK_N=16, num_stages=1)[0], v)
results["blocks"] = [forward(q, k, v, False, version=version, BLOCK_M=bm, BLOCK_N=bn, num_stages=1)[0]
                     for version in ("pointers", "tma", "persistent") for bm, bn in ((16, 16), (32, 16), (64, 32))]
# the reversed causal order and the one masked loop of warp specialization, in both descriptor versions;
# and the log-sum-exp against its definition
results["reverse"] = [forward(q, k, v, True, version=version, BLOCK_M=32, BLOCK_N=16, num_stages=1, reverse=rev,
                              warp_specialize=ws)[0]
                      for version in ("tma", "persistent") for rev in (False, True) for ws in (False, True)]
# the causal mask added through the dot (BLOCK_N == BLOCK_M) and compared in every block, against naive
results["additive"] = ([forward(q, k, v, True, version=version, BLOCK_M=bm, BLOCK_N=bm, num_stages=1, reverse=True,
                                warp_specialize=True, additive_mask=additive)[0]
                        for version in ("tma", "persistent") for bm in (16, 32) for additive in (True, False)],
                       naive(q, k, v, True))
# the persistent version with more tiles than programs (3 under the interpreter), several heads, ragged N
q3, k3, v3 = (torch.randn(2, 3, 77, 32) for _ in range(3))
results["persistent"] = [(forward(q3, k3, v3, causal, version="persistent", BLOCK_M=16, BLOCK_N=16, num_stages=1,
                                  reverse=causal)[0], naive(q3, k3, v3, causal)) for causal in (False, True)]
s = (q @ k.transpose(-2, -1)) / 32 ** 0.5
results["lse"] = (forward(q, k, v, False, BLOCK_M=32, BLOCK_N=16, num_stages=1)[1],
                  torch.logsumexp(s, -1) / torch.log(torch.tensor(2.0)))
results["shape"] = attempt(forward, q, k[:, :, :5], v)
results["dims"] = attempt(forward, torch.randn(1, 1, 8, 24), torch.randn(1, 1, 8, 24), torch.randn(1, 1, 8, 24))
results["split"] = attempt(forward, q, k, v, BLOCK_M=16, BLOCK_N=32)
results["version"] = attempt(forward, q, k, v, version="cuda")
'''


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict:
    return run_interpreted(NOTEBOOK, CHILD, tmp_path_factory.mktemp("flash_attention"))


@pytest.mark.notebook
def test_one_key_gives_its_value(interpreted):
    for out, v in interpreted["one"]:
        assert (out - v).abs().max().item() < 1e-6


@pytest.mark.notebook
def test_the_first_causal_row_sees_only_itself(interpreted):
    out, v = interpreted["causal"]
    assert (out[0, 0, 0] - v[0, 0, 0]).abs().max().item() < 1e-6


@pytest.mark.notebook
def test_the_result_depends_on_neither_the_blocks_nor_the_version(interpreted):
    first, *rest = interpreted["blocks"]
    assert len(rest) == 8 and all((first - r).abs().max().item() < 1e-5 for r in rest)


@pytest.mark.notebook
def test_the_causal_order_and_the_one_masked_loop_give_the_same_result(interpreted):
    first, *rest = interpreted["reverse"]
    assert len(rest) == 7 and all((first - r).abs().max().item() < 1e-6 for r in rest)


@pytest.mark.notebook
def test_the_mask_added_through_the_dot_is_the_causal_mask_at_a_ragged_length(interpreted):
    outs, expected = interpreted["additive"]
    assert len(outs) == 8 and all((out - expected).abs().max().item() < 1e-5 for out in outs)


AOT = JIT_FUNCTIONS + r'''
import json
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

out = {}
for additive in (False, True):
    sig = {name: "*bf16" for name in ("q_ptr", "k_ptr", "v_ptr", "o_ptr")} | {"lse_ptr": "*fp32", "qk_scale": "fp32", "n": "i32"}
    consts = dict(HEAD_DIM=128, BLOCK_M=128, BLOCK_N=128, CAUSAL=True, EVEN_N=True, NUM_STAGES=2,
                  WARP_SPECIALIZE=True, REVERSE=True, ADDITIVE_MASK=additive)
    kernel = triton.compile(ASTSource(fn=ns["attention_fwd_tma"], signature=sig | {k: "constexpr" for k in consts},
                                      constexprs=consts), target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4, num_stages=2))
    ptx = kernel.asm["ptx"]
    out[str(additive)] = {"ws": "ttg.warp_specialize" in kernel.asm["ttgir"], "selp": ptx.count("selp.f32"),
                          "wgmma": "wgmma.mma_async" in ptx}
print(json.dumps(out))
'''


def test_the_causal_kernel_for_hopper_adds_its_mask_through_the_dot_and_stays_warp_specialized():
    """Compiled for sm_90 (no GPU needed): both masks keep warp specialization, and the added one drops
    the select per score (64 of each consumer thread's 128x128 / 256 scores)."""
    out = run_for_sm90(AOT, str(NOTEBOOK))
    select, added = out["False"], out["True"]
    assert select["ws"] and added["ws"] and select["wgmma"] and added["wgmma"]
    assert select["selp"] - added["selp"] >= 64


@pytest.mark.notebook
def test_a_persistent_program_walks_many_tiles_of_many_heads(interpreted):
    for out, expected in interpreted["persistent"]:
        assert (out - expected).abs().max().item() < 1e-5


@pytest.mark.notebook
def test_the_saved_log_sum_exp_is_log2_of_the_row_sums(interpreted):
    lse, expected = interpreted["lse"]
    assert (lse - expected).abs().max().item() < 1e-4


@pytest.mark.notebook
@pytest.mark.parametrize("case, words", [("shape", "must be"), ("dims", "power of two"), ("split", "divide"),
                                         ("version", "'persistent'")])
def test_bad_input_is_a_clear_error(interpreted, case, words):
    kind, message = interpreted[case]
    assert kind == "ValueError" and words in message
