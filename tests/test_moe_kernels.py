"""The mixture-of-experts notebooks' kernels beyond their own correctness cells.

Under ``TRITON_INTERPRET=1`` (fp32: the interpreter has no bf16), the backward notebook is run, which
imports the forward notebook's cells as it does on a GPU, and then: the counting sort against
``torch.argsort(stable=True)`` at ragged sizes, with empty experts and block sizes other than the
notebook's; the fused layer with one token; the pointer-per-group peer; ``loss.backward()`` of a
training loss through the autograd function against autograd through the fp32 loop; the same bits
on every run (the combine uses no atomics); and bad input as clear errors. On the host: the
kernels compiled for sm_90 use wgmma, the weights come by TMA, and the backward's epilogue adds the
routing weights' gradients with reductions.
"""

from __future__ import annotations

import pytest

from interpreted import JIT_FUNCTIONS, REPO, run_for_sm90, run_interpreted

# its module fixtures (compiled kernels, built sites) run once: on one worker (pyproject addopts)
pytestmark = pytest.mark.xdist_group("moe_kernels")

FORWARD = REPO / "notebooks" / "moe.py"
BACKWARD = REPO / "notebooks" / "moe_backward.py"

CHILD = r'''
fwd = namespace["fwd"]
permute, permute_torch, Routing = fwd.permute, fwd.permute_torch, fwd.Routing
torch.manual_seed(3)

# the counting sort at ragged sizes and blocks: sorted rows per expert as torch's stable argsort gives them
results["sort"] = []
for rows, k, experts, block_m in ((1001, 1, 5, 16), (257, 3, 40, 32), (9, 2, 64, 16), (600, 4, 7, 64)):
    ids = torch.randint(0, max(1, experts - 2), (rows, k), dtype=torch.int32)  # the last two experts get none
    r = permute(ids, torch.rand(rows, k), experts, block_m)
    order, counts = permute_torch(ids, experts)
    start = r.expert_start.long()
    got = torch.cat([r.sorted[start[e]:start[e] + counts[e]].long() for e in range(experts)])
    results["sort"].append((got, order, r.expert_start.clone(), counts, int(r.num_blocks), r.block_expert.clone(),
                            r.dest.clone(), r.sorted.clone(), block_m))

# one token, top-2 of 4 experts; and the same layer twice gives the same bits
s = fwd.MoEShape("one token", 1, 16, 4, 2, 16, True)
x, router_w, w1, w2 = fwd.make_layer(s, torch.float32)
ids, weights = fwd.route(x, router_w, 2, True)
r = permute(ids, weights, 4, 16)
results["one"] = (fwd.moe_experts(x, w1, w2, r, fwd.CPU_CFG), fwd.moe_reference(x, w1, w2, ids.long(), weights))
s = fwd.SMALL[0]
x, router_w, w1, w2 = fwd.make_layer(s, torch.float32)
results["repeat"] = [fwd.moe_forward(x, router_w, w1, w2, s.top_k, s.renormalize, fwd.CPU_CFG) for _ in range(2)]
results["torch layer"] = (fwd.moe_torch(x, router_w, w1, w2, s.top_k, s.renormalize),
                          namespace["layer_reference"](x, router_w, w1, w2, s.top_k, s.renormalize))

# the pointer-per-group peer, with an empty group
xs, wp, counts = torch.randn(30, 24), torch.randn(4, 20, 24), [7, 0, 13, 10]
out = torch.empty(30, 20)
fwd.pointer_array_gate_up(xs, wp, counts, out, fwd.CPU_CFG)
results["peer"] = (out, torch.cat([xs[a:a + c] @ wp[e].T for e, (a, c) in enumerate(zip([0, 7, 7, 20], counts))]))

# a training loss through the autograd function, against autograd through the fp32 loop
MoELayer, reference, CFG = namespace["MoELayer"], namespace["layer_reference"], namespace["CFG"]
s = fwd.MoEShape("train", 45, 32, 8, 3, 24, False)
params = fwd.make_layer(s, torch.float32, seed=5)
ours = [p.clone().requires_grad_() for p in params]
ref = [p.clone().requires_grad_() for p in params]
target = torch.randn(45, 32)
(MoELayer.apply(*ours, 3, False, CFG) - target).square().mean().backward()
(reference(*ref, 3, False) - target).square().mean().backward()
results["train"] = [(a.grad, b.grad) for a, b in zip(ours, ref)]

bad = fwd.CPU_CFG
results["top_k"] = attempt(fwd.route, x, router_w, 0, False)
results["block_m"] = attempt(fwd.grouped_gemm, x, w1, permute(ids, weights, 4, 32), bad)
results["tma weight"] = attempt(fwd.grouped_gemm, x, w1, r, bad, tma=True, transpose_w=False)
results["block_k"] = attempt(namespace["weight_grad"], x, x, permute(ids, weights, 4, 16), fwd.GemmConfig(16, 16, 32, 1, 4, 1))

# the weight gradient with its sorted operand by TMA (padding slots are zeros) against the pointer loads
s = fwd.SMALL[0]
x, router_w, w1, w2 = fwd.make_layer(s, torch.float32)
r = permute(*fwd.route(x, router_w, s.top_k, s.renormalize), s.experts, 16)
_, h, aux = fwd.moe_experts(x, w1, w2, r, fwd.CPU_CFG, save=True)
dy = torch.randn_like(x)
wg = namespace["weight_grad"]
results["tma"] = [(wg(dy, h, r, fwd.CPU_CFG, a_gather=True, a_scale=True, tma=t), wg(aux, x, r, fwd.CPU_CFG, b_gather=True, tma=t)) for t in (False, True)]
'''


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory) -> dict:
    # grad_rows: the notebook's own gradient checks (28 s here), which test_notebooks runs
    return run_interpreted(BACKWARD, CHILD, tmp_path_factory.mktemp("moe"), leave_out=("grad_rows",))


def relative(got, expected) -> float:
    return ((got - expected).norm() / expected.norm()).item()


@pytest.mark.notebook
def test_the_counting_sort_is_torchs_stable_argsort_with_segments_padded_to_blocks(interpreted):
    import torch

    assert len(interpreted["sort"]) == 4
    for got, order, start, counts, blocks, block_expert, dest, sorted_rows, block_m in interpreted["sort"]:
        assert torch.equal(got, order)
        sizes = (start[1:] - start[:-1]).long()
        assert torch.equal(sizes, (counts + block_m - 1) // block_m * block_m)  # padded, empty experts take none
        assert blocks == int(sizes.sum()) // block_m
        assert torch.equal(block_expert[:blocks].long(), torch.repeat_interleave(torch.arange(len(counts)), sizes // block_m))
        assert bool((block_expert[blocks:] == len(counts)).all())
        assert torch.equal(sorted_rows[dest.long()].long(), torch.arange(order.numel()))  # dest is the inverse
        assert int((sorted_rows >= 0).sum()) == order.numel()  # every row once, padding -1


@pytest.mark.notebook
def test_one_token_and_the_torch_layer_match_the_fp32_loop(interpreted):
    got, want = interpreted["one"]
    assert relative(got, want) < 1e-5
    got, want = interpreted["torch layer"]
    assert relative(got, want) < 1e-5


@pytest.mark.notebook
def test_the_layer_gives_the_same_bits_every_run(interpreted):
    import torch

    first, second = interpreted["repeat"]
    assert torch.equal(first, second)


@pytest.mark.notebook
def test_the_weight_gradient_reads_its_sorted_operand_by_tma_as_by_pointers(interpreted):
    (p2, p1), (t2, t1) = interpreted["tma"]
    assert relative(t2, p2) < 1e-6 and relative(t1, p1) < 1e-6


@pytest.mark.notebook
def test_the_pointer_per_group_peer_matches_a_loop_of_matmuls(interpreted):
    got, want = interpreted["peer"]
    assert relative(got, want) < 1e-5


@pytest.mark.notebook
def test_a_training_loss_backward_matches_autograd_through_the_fp32_loop(interpreted):
    assert len(interpreted["train"]) == 4  # x, router, w1, w2
    for got, want in interpreted["train"]:
        assert got is not None and relative(got, want) < 1e-4


@pytest.mark.notebook
@pytest.mark.parametrize("case, words", [("top_k", "top_k must be in 1..16, got 0"), ("block_m", "BLOCK_M 16 must equal"),
                                         ("tma weight", "TMA needs the weight"), ("block_k", "BLOCK_K 32 must divide")])
def test_bad_input_is_a_clear_error(interpreted, case, words):
    kind, message = interpreted[case]
    assert kind == "ValueError" and words in message


AOT = JIT_FUNCTIONS + r'''
import json
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from worklog_gen.kit.gemm import grouped_tile

ns.update(grouped_tile=grouped_tile, EPI_STORE=tl.constexpr(0), EPI_SWIGLU=tl.constexpr(1), EPI_ROUTE=tl.constexpr(2))
if len(sys.argv) > 2:  # the backward notebook's kernels too
    tree = ast.parse(open(sys.argv[2]).read())
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef) and any("triton.jit" in ast.unparse(d) for d in n.decorator_list)]
    exec(compile(ast.Module(body=keep, type_ignores=[]), sys.argv[2], "exec"), ns)


def build(fn, sig, consts, **options):
    kernel = triton.compile(ASTSource(fn=fn, signature={**sig, **{k: "constexpr" for k in consts}}, constexprs=consts),
                            target=GPUTarget("cuda", 90, 32), options=options)
    ptx = kernel.asm["ptx"]
    return {"wgmma": "wgmma.mma_async" in ptx, "tma": "cp.async.bulk.tensor" in ptx,
            "reduction": "red.global" in ptx or "atom.global" in ptx}


ptrs = dict(a_ptr="*bf16", b_ptr="*bf16", b_desc="tensordesc<bf16[128, 64]>", c_ptr="*bf16", sorted_ptr="*i32",
            block_expert_ptr="*i32", num_blocks_ptr="*i32", weights_ptr="*fp32", aux_ptr="*bf16")
ints = {n: "i32" for n in ("N", "K", "stride_am", "stride_be", "stride_bk", "stride_bn", "stride_cm", "B_ROWS_PER_EXPERT",
                           "NUM_PROGS")}
blocks = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_SIZE_M=8, TOP_K=6, FLATTEN=True)
out = {}
for name, consts in (("fused gate/up", dict(GATHER=True, B_TMA=True, EPILOGUE=1, SAVE=True)),
                     ("down, routing weight", dict(GATHER=False, B_TMA=True, EPILOGUE=2, SAVE=False)),
                     ("backward δ, weights by pointers", dict(GATHER=True, B_TMA=False, EPILOGUE=0, SAVE=False))):
    sig = dict(ptrs) if consts["B_TMA"] else {k: v for k, v in ptrs.items() if k != "b_desc"}
    if not consts["B_TMA"]:
        consts = {**consts, "b_desc": None}
    order = [n for n in ns["moe_grouped_gemm"].arg_names if n not in consts and n not in blocks]
    out[name] = build(ns["moe_grouped_gemm"], {n: {**sig, **ints}[n] for n in order}, {**consts, **blocks},
                      num_warps=8, num_stages=3)
if "moe_weight_grad" in ns:
    sig = dict(a_ptr="*bf16", b_ptr="*bf16", b_desc="tensordesc<bf16[64, 128]>", c_ptr="*bf16", sorted_ptr="*i32",
               expert_start_ptr="*i32", weights_ptr="*fp32", M="i32", N="i32", stride_a="i32", stride_b="i32")
    consts = dict(a_desc=None, TOP_K=6, A_GATHER=True, A_SCALE=True, A_TMA=False, B_TMA=True, B_GATHER=False,
                  BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
    out["weight gradient"] = build(ns["moe_weight_grad"], sig, consts, num_warps=8, num_stages=3)
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def sm90() -> dict:
    return run_for_sm90(AOT, str(FORWARD), str(BACKWARD))


def test_the_fused_gate_up_gemm_for_hopper_takes_weights_by_tma_into_wgmma(sm90):
    fused, down = sm90["fused gate/up"], sm90["down, routing weight"]
    assert fused["wgmma"] and fused["tma"] and not fused["reduction"]
    assert down["wgmma"] and down["tma"]


def test_the_backward_gemm_with_weights_by_pointers_still_uses_tensor_cores(sm90):
    assert sm90["backward δ, weights by pointers"]["wgmma"] and not sm90["backward δ, weights by pointers"]["tma"]


def test_the_weight_gradient_is_a_tensor_core_gemm_on_hopper_with_its_sorted_operand_by_tma(sm90):
    assert sm90["weight gradient"]["wgmma"] and sm90["weight gradient"]["tma"]
