"""The FlashAttention backward notebook's kernels beyond its own correctness cells.

Under ``TRITON_INTERPRET=1`` (fp32: the interpreter has no bf16), with the forward imported from
the forward topic's notebook as the backward notebook does: both layouts (two kernels; one kernel
with dQ added by pointer atomics) match autograd through naive attention at a length no block
divides, causal and not, with several heads and blocks other than the notebook's own; one key
gives dV = dO and no dQ, dK; Δ is rowsum(O · dO); ``loss.backward()`` works through the autograd
function; bad input is a clear error. On the host: the FLOP count, and the one-kernel layout
compiled for sm_90 with its dQ added by TMA's bulk reduction (which the interpreter lacks) or by
relaxed reductions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from interpreted import JIT_FUNCTIONS, run_for_sm90, run_interpreted

# its module fixtures (compiled kernels, built sites) run once: on one worker (pyproject addopts)
pytestmark = pytest.mark.xdist_group("flash_attention_backward_kernels")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "flash_attention_backward.py"

CHILD = r'''
forward, backward = namespace["attention_forward"], namespace["attention_backward"]
naive, flash_attention = namespace["naive_attention"], namespace["flash_attention"]
FWD = dict(BLOCK_M=32, BLOCK_N=16, num_stages=1)
LAYOUTS = [dict(version="two", BLOCK_M=16, BLOCK_N=64, num_warps=4, num_stages=1, dq_blocks=(64, 16, 4, 1)),
           dict(version="two", BLOCK_M=32, BLOCK_N=32, num_warps=4, num_stages=1, dq_blocks=(32, 32, 4, 1)),
           dict(version="fused", BLOCK_M=16, BLOCK_N=64, num_warps=4, num_stages=1, dq_reduce="pointers"),
           dict(version="fused", BLOCK_M=32, BLOCK_N=32, num_warps=4, num_stages=1, dq_reduce="pointers")]
torch.manual_seed(7)
q, k, v, do = (torch.randn(2, 3, 77, 32) for _ in range(4))
results["grads"] = []
for causal in (False, True):
    o, lse = forward(q, k, v, causal, **FWD)
    qf, kf, vf = (t.clone().requires_grad_() for t in (q, k, v))
    naive(qf, kf, vf, causal).backward(do)
    for cfg in LAYOUTS:
        results["grads"].append((f"{cfg['version']} {cfg['BLOCK_M']}x{cfg['BLOCK_N']} causal={causal}",
                                 backward(q, k, v, o, lse, do, causal, **cfg), (qf.grad, kf.grad, vf.grad)))
q1, k1, v1, do1 = (torch.randn(1, 1, 1, 16) for _ in range(4))
o1, lse1 = forward(q1, k1, v1, False, **FWD)
results["one"] = ([backward(q1, k1, v1, o1, lse1, do1, False, **cfg) for cfg in LAYOUTS], do1)
o, lse = forward(q, k, v, False, **FWD)
delta = torch.empty(2, 3, 77)
namespace["attention_bwd_delta"][(2, 6)](o, do, delta, 77, HEAD_DIM=32, BLOCK_M=64)
results["delta"] = (delta, (o * do).sum(-1))
qa, ka, va = (t.clone().requires_grad_() for t in (q, k, v))
flash_attention(qa, ka, va, True).square().sum().backward()
qb, kb, vb = (t.clone().requires_grad_() for t in (q, k, v))
naive(qb, kb, vb, True).square().sum().backward()
results["autograd"] = [(a.grad, b.grad) for a, b in ((qa, qb), (ka, kb), (va, vb))]
results["version"] = attempt(backward, q, k, v, o, lse, do, version="cuda")
results["reduce"] = attempt(backward, q, k, v, o, lse, do, version="fused", dq_reduce="shared")
results["blocks"] = attempt(backward, q, k, v, o, lse, do, BLOCK_M=64, BLOCK_N=32)
results["shape"] = attempt(backward, q, k, v, o, lse[:, :, :5], do)
'''


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict:
    return run_interpreted(NOTEBOOK, CHILD, tmp_path_factory.mktemp("flash_attention_backward"))


def relative(got, expected) -> float:
    return ((got - expected).norm() / expected.norm()).item()


@pytest.mark.notebook
def test_both_layouts_match_autograd_at_a_ragged_length_with_several_heads(interpreted):
    assert len(interpreted["grads"]) == 8
    for name, grads, expected in interpreted["grads"]:
        for label, got, ref in zip("QKV", grads, expected):
            assert relative(got, ref) < 1e-5, f"{name}: d{label} off by {relative(got, ref):.1e}"


@pytest.mark.notebook
def test_one_key_gives_dv_equal_to_do_and_no_dq_or_dk(interpreted):
    results, do = interpreted["one"]
    for dq, dk, dv in results:
        assert dq.abs().max().item() < 1e-6 and dk.abs().max().item() < 1e-6
        assert (dv - do).abs().max().item() < 1e-6


@pytest.mark.notebook
def test_delta_is_the_row_sum_of_o_times_do(interpreted):
    delta, expected = interpreted["delta"]
    assert (delta - expected).abs().max().item() < 1e-5


@pytest.mark.notebook
def test_loss_backward_through_the_autograd_function_matches_naive_attention(interpreted):
    for got, expected in interpreted["autograd"]:
        assert relative(got, expected) < 1e-5


@pytest.mark.notebook
@pytest.mark.parametrize("case, words", [("version", "'two' or 'fused'"), ("reduce", "'tma' or 'pointers'"),
                                         ("blocks", "divide"), ("shape", "lse (B, H, N)")])
def test_bad_input_is_a_clear_error(interpreted, case, words):
    kind, message = interpreted[case]
    assert kind == "ValueError" and words in message


def test_the_flop_count_is_two_and_a_half_forwards():
    tree = ast.parse(NOTEBOOK.read_text())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "backward_flops")
    namespace = {"attention_flops": lambda b, h, n, d, causal: 4 * b * h * n * n * d / (2 if causal else 1)}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(NOTEBOOK), "exec"), namespace)
    assert namespace["backward_flops"](4, 16, 8192, 128, False) == 2.5 * 4 * 4 * 16 * 8192**2 * 128
    assert namespace["backward_flops"](4, 16, 8192, 128, True) == namespace["backward_flops"](4, 16, 8192, 128, False) / 2


AOT = JIT_FUNCTIONS + r'''
import json
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

out = {}
for tma in (False, True):
    sig = {name: "*bf16" for name in ("q_ptr", "k_ptr", "v_ptr", "do_ptr", "dk_ptr", "dv_ptr")}
    sig |= {"lse_ptr": "*fp32", "delta_ptr": "*fp32", "dq_acc_ptr": "*fp32", "sm_scale": "fp32", "qk_scale": "fp32", "n": "i32"}
    consts = dict(HEAD_DIM=128, BLOCK_M=64, BLOCK_N=128, CAUSAL=True, NUM_STAGES=2, WARP_SPECIALIZE=False, DQ_TMA=tma)
    order = ["q_ptr", "k_ptr", "v_ptr", "do_ptr", "lse_ptr", "delta_ptr", "dk_ptr", "dv_ptr", "dq_acc_ptr", "sm_scale",
             "qk_scale", "n"]
    kernel = triton.compile(ASTSource(fn=ns["attention_bwd_fused"], signature={k: sig[k] for k in order}
                                      | {k: "constexpr" for k in consts}, constexprs=consts),
                            target=GPUTarget("cuda", 90, 32), options=dict(num_warps=8, num_stages=2))
    ptx = kernel.asm["ptx"]
    out[str(tma)] = {"bulk": "cp.reduce.async.bulk.tensor" in ptx, "red": "red.relaxed" in ptx or "red.global" in ptx,
                     "wgmma": "wgmma.mma_async" in ptx}
print(json.dumps(out))
'''


def test_the_one_kernel_layout_for_hopper_adds_dq_by_bulk_tensor_reduction_or_by_reductions():
    """Compiled for sm_90 (no GPU needed): with DQ_TMA the dQ share goes out in one bulk tensor
    reduction per step, without it as element reductions; the matmuls are wgmma either way."""
    out = run_for_sm90(AOT, str(NOTEBOOK))
    assert out["True"]["bulk"] and out["True"]["wgmma"]
    assert out["False"]["red"] and not out["False"]["bulk"] and out["False"]["wgmma"]
