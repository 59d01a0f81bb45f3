# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   worklog_gen:
#     compute_capability: '9.0'  # runs flash_attention's TMA forward cells
#     memory_gib: 16  # B·H·N = 16k·32, d = 128 bf16: q, k, v, o, do and grads ~1 GiB; cuDNN workspace
# ---

# %% [markdown]
# # FlashAttention backward
#
# Training runs attention twice: the [forward](flash-attention.md) pass, then the backward, which
# turns the gradient of the output, $dO$, into $dQ$, $dK$ and $dV$. It does two and a half times
# the forward's work and is harder to keep on the tensor cores. This page builds it in Triton on
# top of the forward topic's kernels (imported from that notebook, not copied), in two layouts,
# and holds it against cuDNN, FlashAttention-2 and FlexAttention's backward in the same run.
#
# You will learn:
#
# - why the backward does 2.5 times the forward's work, and what a layout that recomputes adds;
# - how $P$ is recomputed from the one number per query the forward saved, the log-sum-exp;
# - why $dK, dV$ and $dQ$ want different loop orders, and two ways to reconcile them:
#   a separate $dQ$ pass, or one kernel that adds $dQ$ with atomics;
# - what FlashAttention-3 changes on Hopper, and which of it Triton 3.6 can express.

# %% tags=["hide-input", "backward"] summary="Imports, settings, and the forward topic's kernels"
import math

import torch
import triton
import triton.language as tl
from IPython.display import display

from worklog_gen.kit.attention import backward_only, flex_attention, sdpa, sdpa_backends, step_against_cudnn
from worklog_gen.kit.cells import import_cells
from worklog_gen.kit.charts import benchmark_chart
from worklog_gen.kit.compiler import compiler_output_kept, failed_pass
from worklog_gen.kit.markdown import prose, table
from worklog_gen.kit.measure import bench, gpu_info, tflops
from worklog_gen.kit.notebook import headline, interpret_mode, save_data
from worklog_gen.kit.paired import paired_ratio
from worklog_gen.kit.power import clock_split

# The forward topic's cells tagged "forward": its kernels, their launcher, naive attention and the
# FLOP count, run here as a module. Its imports cell also sets Triton's allocator on the GPU.
forward = import_cells("flash_attention.py", tag="forward")
attention_forward, naive_attention, attention_flops = (forward.attention_forward, forward.naive_attention,
                                                       forward.attention_flops)

TOPIC = "flash-attention-backward"
GPU = not interpret_mode()
DEVICE = "cuda" if GPU else "cpu"
DTYPES = (torch.bfloat16, torch.float16) if GPU else (torch.float32,)  # the interpreter has no bf16
DTYPE_NAME = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
TOKENS = 16384 * 32  # B * H * N, the FlashAttention papers' protocol, as in the forward topic
SEQ_LENS = [1024, 2048, 4096, 8192, 16384]
H, D = 16, 128  # heads, head_dim: hidden size 2048
ROUNDS = 9  # paired rounds per headline
# The forward topic's tuned configurations on an H100 (its tuning.csv): the forward only makes O and the
# log-sum-exp here, and is never timed.
FWD_CFG = {False: dict(version="persistent", BLOCK_M=128, BLOCK_N=128, num_warps=4, num_stages=2, warp_specialize=True),
           True: dict(version="tma", BLOCK_M=128, BLOCK_N=128, num_warps=4, num_stages=2, warp_specialize=True,
                      reverse=True)} if GPU else {c: dict(BLOCK_M=32, BLOCK_N=16, num_warps=4, num_stages=1) for c in (False, True)}

torch.manual_seed(0)
INFO = gpu_info()
if GPU:
    print(INFO)

# %% [markdown]
# ## 1. Napkin math: 2.5 times the forward
#
# The forward does two matmuls per block of scores, $S = QK^\top$ and $O = PV$: $4N^2d$ FLOPs per
# head. The backward does five: $S = QK^\top$ again (nothing of size $N^2$ was saved),
# $dV = P^\top dO$, $dP = dO\,V^\top$, $dK = dS^\top Q$ and $dQ = dS\,K$, with
# $dS = P \circ (dP - \Delta)$ in between. Five to two is the **2.5×** the FlashAttention papers
# count, and so does this page: TFLOP/s below are $2.5 \times 4BHN^2d$ over the time, halved under
# a causal mask.
#
# A layout that splits the work by output does more: a $dQ$ pass of its own needs $S$ and $dP$ again,
# **seven** matmuls, so it can reach at most 5/7 of the tensor cores' rate in counted FLOP/s. A
# single kernel does the five once but has many programs adding to the same rows of $dQ$: in fp32,
# $N/\text{BLOCK\_N}$ partial sums of every row, which is the traffic in the table below.
#
# **Prediction, written before measuring.** The fused kernel with $dQ$ by atomics beats the two-kernel
# layout by up to 7/5, less what the atomics cost, and reaches cuDNN's backward; the two-kernel layout
# stays near 0.8× cuDNN, as in the forward topic's last run.

# %% tags=["hide-input"] summary="FLOPs, bytes and the atomics' traffic at N = 8192"
def backward_flops(batch: int, heads: int, n: int, d: int, causal: bool) -> float:
    """The counted FLOPs: 2.5 x the forward's 4 B H N^2 d (five matmuls to two), halved if causal."""
    return 2.5 * attention_flops(batch, heads, n, d, causal)


n = 8192
b = TOKENS // (H * n)
flops = backward_flops(b, H, n, D, False)
compulsory = 8 * b * H * n * D * 2  # Q, K, V, O, dO read and dQ, dK, dV written, bf16
atomics = (n // 128) * b * H * n * D * 4  # BLOCK_N = 128: one fp32 partial dQ per key block
display(table([{"layout": "two kernels: dK, dV, then dQ", "matmuls": 7, "TFLOP done": 7 / 5 * flops / 1e12,
                "GB": compulsory / 1e9, "FLOP/byte": 7 / 5 * flops / compulsory},
               {"layout": "one kernel, dQ by atomics", "matmuls": 5, "TFLOP done": flops / 1e12,
                "GB": (compulsory + atomics) / 1e9, "FLOP/byte": flops / (compulsory + atomics)}],
              formats={"TFLOP done": ".1f", "GB": ".2f", "FLOP/byte": ".0f"},
              caption=f"B={b} H={H} N={n} d={D}, bf16, not causal; counted: {flops / 1e12:.1f} TFLOP. "
                      "The atomics' bytes go to L2, whose bandwidth is several times HBM's"))

# %% [markdown]
# ## 2. P from the log-sum-exp, and Δ
#
# The forward kept, per query $i$, only $\text{lse}_i = \log_2 \sum_j 2^{S_{ij} c}$ with
# $c = \log_2 e / \sqrt d$. Any block of $P$ comes back exactly from it:
# $P_{ij} = 2^{S_{ij} c - \text{lse}_i}$, one fused multiply-add and one `ex2` per score, no running
# max and no rescaling, because the row's total is already known. The other per-row number the
# softmax's gradient needs is $\Delta_i = \sum_j P_{ij}\,dP_{ij}$, which equals
# $\sum_k dO_{ik} O_{ik}$: a row of $d$ numbers instead of $N$. A small kernel computes it first.

# %% tags=["backward"]
@triton.jit
def attention_bwd_delta(o_ptr, do_ptr, delta_ptr, n, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    """delta (B*H, N) fp32 = rowsum(O * dO); o, do (B*H, N, HEAD_DIM) contiguous."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,)
    bh = tl.program_id(1).to(tl.int64)
    ptrs = bh * n * HEAD_DIM + offs_m[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]  # (BLOCK_M, HEAD_DIM)
    o = tl.load(o_ptr + ptrs, mask=offs_m[:, None] < n, other=0.0).to(tl.float32)
    do = tl.load(do_ptr + ptrs, mask=offs_m[:, None] < n, other=0.0).to(tl.float32)
    tl.store(delta_ptr + bh * n + offs_m, tl.sum(o * do, 1), mask=offs_m < n)


# %% [markdown]
# ## 3. Two loop orders, two kernels
#
# $dK_j$ and $dV_j$ sum over every query $i$; $dQ_i$ sums over every key $j$. A program that owns
# a block of **keys** keeps $dK, dV$ in registers and loops over the queries; one that owns a block of
# **queries** keeps $dQ$ and loops over the keys. The FlashAttention-2 paper's layout, and version 1
# here, runs each loop order in a kernel of its own, so no two programs write the same row. The
# $dQ$ kernel pays for it: it recomputes $S$ and $dP$, two of the seven matmuls. Both loop over
# blocks read through tensor descriptors made in the kernel (see the forward topic), whose rows past
# $N$ read as zeros and add nothing; causal loops mask only the blocks that cross the diagonal.

# %% tags=["backward"]
@triton.jit
def _dkdv_over_queries(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, start_n, lo, hi, n, qk_scale,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, MASK: tl.constexpr,
                       NUM_STAGES: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    offs_m, offs_n = tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_N)  # offsets within the tiles
    for start_m in tl.range(lo, hi, BLOCK_M, num_stages=NUM_STAGES, warp_specialize=WARP_SPECIALIZE):
        q = q_desc.load([start_m, 0])  # (BLOCK_M, HEAD_DIM); rows past n are zeros
        lse = tl.load(lse_ptr + start_m + offs_m, mask=offs_m < n - start_m, other=0.0)
        p_t = tl.math.exp2(tl.dot(k, q.T) * qk_scale - lse[None, :])  # (BLOCK_N, BLOCK_M): P, transposed
        if MASK:  # key index <= query index, as an offset against a scalar (the forward's note)
            p_t = tl.where(offs_m[None, :] - offs_n[:, None] >= start_n - start_m, p_t, 0.0)
        do = do_desc.load([start_m, 0])  # (BLOCK_M, HEAD_DIM)
        dv = tl.dot(p_t.to(do.dtype), do, dv)  # dV += P^T dO
        delta = tl.load(delta_ptr + start_m + offs_m, mask=offs_m < n - start_m, other=0.0)
        ds_t = p_t * (tl.dot(v, do.T) - delta[None, :])  # dS^T = P^T o (dP^T - delta)
        dk = tl.dot(ds_t.to(q.dtype), q, dk)  # dK += dS^T Q
    return dk, dv


@triton.jit
def attention_bwd_dkdv(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, sm_scale, qk_scale, n,
                       HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                       NUM_STAGES: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    """dK, dV (B*H, N, HEAD_DIM) for one block of BLOCK_N keys (program 0) of one head (program 1)."""
    start_n = tl.program_id(0) * BLOCK_N
    bh = tl.program_id(1).to(tl.int64)
    head = bh * n * HEAD_DIM
    q_desc = tl.make_tensor_descriptor(q_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    do_desc = tl.make_tensor_descriptor(do_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(k_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(v_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    k, v = k_desc.load([start_n, 0]), v_desc.load([start_n, 0])  # (BLOCK_N, HEAD_DIM) each
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    lse_ptr, delta_ptr = lse_ptr + bh * n, delta_ptr + bh * n
    lo = start_n if CAUSAL else 0  # queries before the keys see none of them
    if CAUSAL:  # the first BLOCK_N queries cross the diagonal: masked
        dk, dv = _dkdv_over_queries(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, start_n, lo, lo + BLOCK_N, n,
                                    qk_scale, BLOCK_M, BLOCK_N, True, NUM_STAGES, False)
        lo += BLOCK_N
    dk, dv = _dkdv_over_queries(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, start_n, lo, n, n, qk_scale,
                                BLOCK_M, BLOCK_N, False, NUM_STAGES, WARP_SPECIALIZE)
    dk_desc = tl.make_tensor_descriptor(dk_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    dv_desc = tl.make_tensor_descriptor(dv_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    dk_desc.store([start_n, 0], (dk * sm_scale).to(dk_desc.dtype))
    dv_desc.store([start_n, 0], dv.to(dv_desc.dtype))


# %% tags=["backward"]
@triton.jit
def _dq_over_keys(dq, q, do, lse, delta, k_desc, v_desc, start_m, lo, hi, qk_scale,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, MASK: tl.constexpr, NUM_STAGES: tl.constexpr):
    offs_m, offs_n = tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N, num_stages=NUM_STAGES):
        k, v = k_desc.load([start_n, 0]), v_desc.load([start_n, 0])  # (BLOCK_N, HEAD_DIM); past n: zeros
        p = tl.math.exp2(tl.dot(q, k.T) * qk_scale - lse[:, None])  # (BLOCK_M, BLOCK_N), recomputed
        if MASK:
            p = tl.where(offs_n[None, :] - offs_m[:, None] <= start_m - start_n, p, 0.0)
        ds = p * (tl.dot(do, v.T) - delta[:, None])  # dS = P o (dO V^T - delta), dP recomputed
        dq = tl.dot(ds.to(k.dtype), k, dq)  # dQ += dS K
    return dq


@triton.jit
def attention_bwd_dq(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, sm_scale, qk_scale, n,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                     NUM_STAGES: tl.constexpr):
    """dQ (B*H, N, HEAD_DIM) for one block of BLOCK_M queries (program 0) of one head (program 1)."""
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1).to(tl.int64)
    head = bh * n * HEAD_DIM
    q_desc = tl.make_tensor_descriptor(q_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    do_desc = tl.make_tensor_descriptor(do_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(k_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(v_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    offs_m = tl.arange(0, BLOCK_M)
    q, do = q_desc.load([start_m, 0]), do_desc.load([start_m, 0])  # (BLOCK_M, HEAD_DIM)
    lse = tl.load(lse_ptr + bh * n + start_m + offs_m, mask=offs_m < n - start_m, other=0.0)
    delta = tl.load(delta_ptr + bh * n + start_m + offs_m, mask=offs_m < n - start_m, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    hi = start_m if CAUSAL else n  # keys below the diagonal block: no mask
    dq = _dq_over_keys(dq, q, do, lse, delta, k_desc, v_desc, start_m, 0, hi, qk_scale, BLOCK_M, BLOCK_N, False,
                       NUM_STAGES)
    if CAUSAL:
        dq = _dq_over_keys(dq, q, do, lse, delta, k_desc, v_desc, start_m, hi, tl.minimum(hi + BLOCK_M, n), qk_scale,
                           BLOCK_M, BLOCK_N, True, NUM_STAGES)
    dq_desc = tl.make_tensor_descriptor(dq_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    dq_desc.store([start_m, 0], (dq * sm_scale).to(dq_desc.dtype))


# %% [markdown]
# ## 4. One kernel, dQ by atomics
#
# Version 2 keeps the key-block loop order and computes $dQ$ in it too: each step's
# $dS\,K_j$ is block $j$'s share of $dQ_i$, and it is **added** to an fp32 buffer that every key
# block of the head adds to. Five matmuls, no recomputation; the price is the adds and the buffer
# (zeroed before, scaled and cast to the input dtype by a last small kernel). $dS$ is computed
# transposed for $dK$, so $dQ$'s matmul reads it transposed, from shared memory. Two ways to add:
#
# - **pointers:** `tl.atomic_add` on a tile of addresses, relaxed (no ordering is needed, only the
#   sum): one reduction instruction per element, as FlashAttention-2 does;
# - **TMA:** `desc.atomic_add`, Hopper's bulk tensor reduction (`cp.reduce.async.bulk.tensor`): the
#   tile goes to shared memory and one instruction adds all of it in L2, as FlashAttention-3 does.
#   The interpreter has no bulk reduction, so the CPU checks run the pointer form.

# %% tags=["backward"]
@triton.jit
def _fused_over_queries(dk, dv, k, v, q_desc, do_desc, dq_desc, dq_ptr, lse_ptr, delta_ptr, start_n, lo, hi, n,
                        qk_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        MASK: tl.constexpr, NUM_STAGES: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
                        DQ_TMA: tl.constexpr):
    offs_m, offs_n, offs_d = tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_N), tl.arange(0, HEAD_DIM)
    for start_m in tl.range(lo, hi, BLOCK_M, num_stages=NUM_STAGES, warp_specialize=WARP_SPECIALIZE):
        q = q_desc.load([start_m, 0])  # (BLOCK_M, HEAD_DIM)
        lse = tl.load(lse_ptr + start_m + offs_m, mask=offs_m < n - start_m, other=0.0)
        p_t = tl.math.exp2(tl.dot(k, q.T) * qk_scale - lse[None, :])  # (BLOCK_N, BLOCK_M)
        if MASK:
            p_t = tl.where(offs_m[None, :] - offs_n[:, None] >= start_n - start_m, p_t, 0.0)
        do = do_desc.load([start_m, 0])
        dv = tl.dot(p_t.to(do.dtype), do, dv)  # dV += P^T dO
        delta = tl.load(delta_ptr + start_m + offs_m, mask=offs_m < n - start_m, other=0.0)
        ds_t = (p_t * (tl.dot(v, do.T) - delta[None, :])).to(q.dtype)  # dS^T
        dk = tl.dot(ds_t, q, dk)  # dK += dS^T Q
        dq = tl.dot(ds_t.T, k)  # (BLOCK_M, HEAD_DIM) fp32: this key block's share of dQ
        if DQ_TMA:  # one bulk reduction of the tile in L2; rows past n are dropped
            dq_desc.atomic_add([start_m, 0], dq)
        else:
            tl.atomic_add(dq_ptr + (start_m + offs_m)[:, None] * HEAD_DIM + offs_d[None, :], dq,
                          mask=(offs_m < n - start_m)[:, None], sem="relaxed")
    return dk, dv


@triton.jit
def attention_bwd_fused(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, dq_acc_ptr, sm_scale, qk_scale,
                        n, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                        NUM_STAGES: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, DQ_TMA: tl.constexpr):
    """dK, dV (B*H, N, HEAD_DIM) for one block of keys, and its share of dQ added to dq_acc (B*H, N, HEAD_DIM) fp32,
    zeroed before; the unscaled sum (dQ / sm_scale)."""
    start_n = tl.program_id(0) * BLOCK_N
    bh = tl.program_id(1).to(tl.int64)
    head = bh * n * HEAD_DIM
    q_desc = tl.make_tensor_descriptor(q_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    do_desc = tl.make_tensor_descriptor(do_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    dq_desc = tl.make_tensor_descriptor(dq_acc_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(k_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(v_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    k, v = k_desc.load([start_n, 0]), v_desc.load([start_n, 0])
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    lse_ptr, delta_ptr = lse_ptr + bh * n, delta_ptr + bh * n
    lo = start_n if CAUSAL else 0
    if CAUSAL:
        dk, dv = _fused_over_queries(dk, dv, k, v, q_desc, do_desc, dq_desc, dq_acc_ptr + head, lse_ptr, delta_ptr,
                                     start_n, lo, lo + BLOCK_N, n, qk_scale, HEAD_DIM, BLOCK_M, BLOCK_N, True,
                                     NUM_STAGES, False, DQ_TMA)
        lo += BLOCK_N
    dk, dv = _fused_over_queries(dk, dv, k, v, q_desc, do_desc, dq_desc, dq_acc_ptr + head, lse_ptr, delta_ptr,
                                 start_n, lo, n, n, qk_scale, HEAD_DIM, BLOCK_M, BLOCK_N, False, NUM_STAGES,
                                 WARP_SPECIALIZE, DQ_TMA)
    dk_desc = tl.make_tensor_descriptor(dk_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    dv_desc = tl.make_tensor_descriptor(dv_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    dk_desc.store([start_n, 0], (dk * sm_scale).to(dk_desc.dtype))
    dv_desc.store([start_n, 0], dv.to(dv_desc.dtype))


@triton.jit
def attention_bwd_dq_convert(dq_acc_ptr, dq_ptr, numel, sm_scale, BLOCK: tl.constexpr):
    """dQ = dq_acc * sm_scale, cast to dQ's dtype; both flat, numel elements."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(dq_acc_ptr + offs, mask=offs < numel, other=0.0)
    tl.store(dq_ptr + offs, (acc * sm_scale).to(dq_ptr.dtype.element_ty), mask=offs < numel)


# %% tags=["hide-input", "backward"] summary="The launcher, and torch.autograd.Function so that loss.backward() works"
def attention_backward(q, k, v, o, lse, do, causal: bool = False, *, version: str = "fused", BLOCK_M: int = 64,
                       BLOCK_N: int = 128, num_warps: int = 8, num_stages: int = 2, warp_specialize: bool = False,
                       dq_reduce: str = "tma", dq_blocks: tuple = (128, 64, 8, 2),
                       kernels: list | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK, dV (B, H, N, d), each like q, of softmax(Q K^T / sqrt(d)) V for the output gradient ``do``.

    q, k, v, o, do: (B, H, N, d) contiguous, one dtype (bf16, fp16; fp32 under the interpreter), d a power
    of two in 16..256; lse (B, H, N) fp32, log2 units, as the forward topic's ``attention_forward`` returns.
    version "two": the dK/dV kernel at (BLOCK_M queries per step, BLOCK_N keys per program, num_warps,
    num_stages, warp_specialize) and the dQ kernel at ``dq_blocks`` (BLOCK_M, BLOCK_N, num_warps,
    num_stages); version "fused": one kernel at those blocks, dQ added in fp32 by ``dq_reduce`` "tma" or
    "pointers" (section 4). Causal needs BLOCK_M to divide BLOCK_N (and, for "two", the dQ kernel's
    BLOCK_N to divide its BLOCK_M). ``kernels``, if given, collects each compiled kernel launched (its
    registers and spills). Raises ValueError on bad inputs."""
    B, H_, N, D_ = q.shape
    if {t.shape for t in (q, k, v, o, do)} != {q.shape} or lse.shape != (B, H_, N) or q.dim() != 4:
        raise ValueError(f"q, k, v, o, do must be (B, H, N, d) and lse (B, H, N): {q.shape} {lse.shape}")
    if D_ not in (16, 32, 64, 128, 256) or version not in ("two", "fused") or dq_reduce not in ("tma", "pointers") \
            or BLOCK_N % BLOCK_M or dq_blocks[0] % dq_blocks[1]:
        raise ValueError(f"head_dim {D_} must be a power of two in 16..256, version 'two' or 'fused' ({version!r}), "
                         f"dq_reduce 'tma' or 'pointers' ({dq_reduce!r}), BLOCK_M must divide BLOCK_N")
    q, k, v, o, do = (t.contiguous() for t in (q, k, v, o, do))
    delta = torch.empty((B, H_, N), device=q.device, dtype=torch.float32)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    if not q.numel():
        return dq, dk, dv
    launched = []
    launched.append(attention_bwd_delta[(triton.cdiv(N, 64), B * H_)](o, do, delta, N, HEAD_DIM=D_, BLOCK_M=64))
    scale = 1 / math.sqrt(D_)
    args, meta = (q, k, v, do, lse, delta), dict(HEAD_DIM=D_, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal,
                                                NUM_STAGES=num_stages, WARP_SPECIALIZE=warp_specialize, num_warps=num_warps)
    grid = (triton.cdiv(N, BLOCK_N), B * H_)
    if version == "two":
        launched.append(attention_bwd_dkdv[grid](*args, dk, dv, scale, scale * math.log2(math.e), N, **meta))
        bm, bn, w, s = dq_blocks
        launched.append(attention_bwd_dq[(triton.cdiv(N, bm), B * H_)](
            *args, dq, scale, scale * math.log2(math.e), N, HEAD_DIM=D_, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
            NUM_STAGES=s, num_warps=w))
    else:
        dq_acc = torch.zeros(q.shape, device=q.device, dtype=torch.float32)
        launched.append(attention_bwd_fused[grid](*args, dk, dv, dq_acc, scale, scale * math.log2(math.e), N,
                                                  DQ_TMA=dq_reduce == "tma", **meta))
        launched.append(attention_bwd_dq_convert[(triton.cdiv(dq.numel(), 4096),)](dq_acc, dq, dq.numel(), scale,
                                                                                   BLOCK=4096))
    if kernels is not None:
        kernels.extend(launched)
    return dq, dk, dv


BWD_CFG = {c: dict(version="fused", dq_reduce="tma") if GPU else dict(version="fused", BLOCK_M=16, BLOCK_N=32,
                                                                      num_warps=4, num_stages=1, dq_reduce="pointers")
           for c in (False, True)}  # tuned in section 6


class FlashAttention(torch.autograd.Function):
    """softmax(Q K^T / sqrt(d)) V: the forward topic's kernel, and this page's backward."""

    @staticmethod
    def forward(ctx, q, k, v, causal: bool):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        o, lse = attention_forward(q, k, v, causal, **FWD_CFG[causal])
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal = causal
        return o

    @staticmethod
    def backward(ctx, do):
        if GPU:  # autograd runs the backward on a thread of its own, which has no allocator yet
            triton.set_allocator(forward.scratch)
        return (*attention_backward(*ctx.saved_tensors, do, ctx.causal, **BWD_CFG[ctx.causal]), None)


def flash_attention(q, k, v, causal: bool = False) -> torch.Tensor:
    """Differentiable attention: ``flash_attention(q, k, v).sum().backward()`` fills q.grad, k.grad, v.grad."""
    return FlashAttention.apply(q, k, v, causal)


# %% [markdown]
# ## 5. Tuning: every configuration checked, then timed
#
# Version 1's candidates vary the dK/dV kernel's blocks around the forward topic's last choice; version
# 2's take `BLOCK_N` (keys per program) 64 or 128, `BLOCK_M` (queries per step) 32 or 64, 4 or 8
# warps, 2 or 3 stages, warp specialization of the query loop (4 warps asked, two consumer groups
# given) and either way of adding $dQ$. One rule prunes them first: the fp32 accumulators and tiles
# a computing thread holds, at most 256 since a thread has 255 registers. With $b_N$ = `BLOCK_N`,
# $b_M$ = `BLOCK_M` and $t$ computing threads, $(2 b_N d + 2 b_N b_M + b_M d) / t \le 256$ (the
# last term only for version 2, which holds a share of $dQ$). Every survivor must match cuDNN's
# gradients at N = 8192 and naive attention's at N = 1000, then is timed at N = 8192, not causal; the
# six fastest are timed causal too. The compiled kernel's registers and spills are kept with its row.

# %% tags=["hide-input"] summary="Candidates and the pruning rule"
def candidate_configs() -> list[dict]:
    """Every configuration tried: version 1 around the forward topic's last choice, version 2 as the text says."""
    two = [dict(version="two", BLOCK_M=bm, BLOCK_N=bn, num_warps=w, num_stages=s, warp_specialize=ws, dq_blocks=dqb)
           for bm, bn, w, s, ws, dqb in ((64, 128, 8, 2, False, (128, 64, 8, 2)), (64, 128, 8, 3, False, (128, 64, 8, 2)),
                                         (64, 128, 8, 3, False, (128, 128, 8, 2)), (64, 128, 8, 3, False, (128, 128, 8, 3)),
                                         (64, 128, 4, 2, True, (128, 128, 8, 2)), (64, 128, 4, 3, True, (128, 128, 8, 2)))]
    fused = [dict(version="fused", BLOCK_M=bm, BLOCK_N=bn, num_warps=w, num_stages=s, warp_specialize=ws, dq_reduce=r)
             for bn in (64, 128) for bm in (32, 64) for w in (4, 8) for s in (2, 3) for ws in (False, True)
             for r in ("tma", "pointers") if not (ws and w != 4) and not (r == "pointers" and (ws or s != 2))]
    return two + fused


def fits(cfg: dict, d: int = 128) -> bool:
    """The pruning rule above: fp32 values per computing thread (two consumer groups of 4 warps if specialized)."""
    threads = 32 * (8 if cfg["warp_specialize"] else cfg["num_warps"])
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    return (2 * bn * d + 2 * bn * bm + (bm * d if cfg["version"] == "fused" else 0)) / threads <= 256


def label(cfg: dict) -> str:
    extra = (" ws" if cfg.get("warp_specialize") else "") + (f" dQ {cfg['dq_reduce']}" if cfg["version"] == "fused"
                                                            else " dQ {}x{} w{} s{}".format(*cfg["dq_blocks"]))
    return f"{cfg['version']} {cfg['BLOCK_M']}x{cfg['BLOCK_N']} w{cfg['num_warps']} s{cfg['num_stages']}{extra}"


# %% tags=["hide-input", "hide-output"] summary="The tuning run: check, then time, every configuration; the best of each"
CONFIG_KEYS = ("version", "BLOCK_M", "BLOCK_N", "num_warps", "num_stages", "warp_specialize", "dq_reduce", "dq_blocks")
tune_rows = []


def grad_error(grads, ref) -> float:
    """The worst of ||g - r|| / ||r|| over dQ, dK, dV; where a true gradient is zero, ||g||."""
    return max(((g.float() - r.float()).norm() / (r.float().norm() if r.float().norm() > 0 else 1)).item()
               for g, r in zip(grads, ref))


def try_config(cfg: dict, causal: bool, big: tuple, small: tuple) -> dict:
    """Check ``cfg`` against ``big`` (q, k, v, o, lse, do, cuDNN's grads) and ``small`` (the same at N = 1000,
    naive attention's grads), then time it; the row, with the compiled kernels' registers and spills."""
    row = {"causal": causal, "config": label(cfg), **{key: cfg.get(key) for key in CONFIG_KEYS}}
    try:
        kernels = []
        with compiler_output_kept() as dumped:
            err_big = grad_error(attention_backward(*big[:6], causal, kernels=kernels, **cfg), big[6])
            err_small = grad_error(attention_backward(*small[:6], causal, **cfg), small[6])
        main = [kn for kn in kernels if kn is not None and kn.name in ("attention_bwd_fused", "attention_bwd_dkdv")]
        row.update(err=max(err_big, err_small), regs=main[0].n_regs if main else None,
                   spills=main[0].n_spills if main else None)
        if not row["err"] < 2e-2:  # NaN too
            row["status"] = "wrong gradients"
        else:
            q = big[0]
            t = bench(lambda: attention_backward(*big[:6], causal, **cfg))
            row.update(status="ok", ms=t.ms, tflops=tflops(backward_flops(*q.shape, causal), t.ms))
    except Exception as exc:  # a configuration this Triton cannot compile or run: counted, not hidden
        row["status"] = f"no compile: {failed_pass(dumped) or type(exc).__name__}"
    return row


def problem(causal: bool, n: int, batch: int, ref_fn) -> tuple:
    """q, k, v, o, lse, do (the launcher's order) and reference gradients for one shape, bf16, d = 128."""
    q, k, v, do = (torch.randn(batch, H, n, D, device=DEVICE, dtype=torch.bfloat16) for _ in range(4))
    o, lse = attention_forward(q, k, v, causal, **FWD_CFG[causal])
    return q, k, v, o, lse, do, ref_fn(q, k, v, do)


BEST = {}
if GPU:
    cudnn = sdpa(sdpa_backends()["sdpa cudnn"])

    def naive_grads(q, k, v, do, causal):
        qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
        naive_attention(qf, kf, vf, causal).backward(do.float())
        return qf.grad, kf.grad, vf.grad

    n = 8192
    for causal in (False, True):
        big = problem(causal, n, TOKENS // (H * n), lambda q, k, v, do: backward_only(cudnn, q, k, v, do, causal)())
        small = problem(causal, 1000, 1, lambda q, k, v, do: naive_grads(q, k, v, do, causal))
        if not causal:
            configs = [c for c in candidate_configs() if fits(c)]
        else:  # the six fastest without the mask, and each version's fastest
            ok = sorted((r for r in tune_rows if r["status"] == "ok"), key=lambda r: -r["tflops"])
            chosen = ok[:6] + [max((r for r in ok if r["version"] == v), key=lambda r: r["tflops"]) for v in ("two", "fused")]
            configs = list({r["config"]: {key: r[key] for key in CONFIG_KEYS if r[key] is not None} for r in chosen}.values())
        for cfg in configs:
            tune_rows.append(try_config(cfg, causal, big, small))
        ok = [r for r in tune_rows if r["causal"] == causal and r["status"] == "ok"]
        BEST[causal] = {key: max(ok, key=lambda r: r["tflops"])[key] for key in CONFIG_KEYS}
        BEST[causal] = {key: value for key, value in BEST[causal].items() if value is not None}
        BWD_CFG[causal] = BEST[causal]
    save_data("tuning.csv", tune_rows)
    summary = []
    for causal in (False, True):
        rows = [r for r in tune_rows if r["causal"] == causal]
        for version in ("two", "fused"):
            ok = sorted((r for r in rows if r["status"] == "ok" and r["version"] == version), key=lambda r: -r["tflops"])
            problems = sorted({r["status"] for r in rows if r["status"] != "ok" and r["version"] == version})
            summary.append({"mask": "causal" if causal else "none", "version": version,
                            "tried": sum(r["version"] == version for r in rows), "best": ok[0]["config"] if ok else "—",
                            "TFLOP/s": ok[0]["tflops"] if ok else float("nan"),
                            "regs / spills": f"{ok[0]['regs']} / {ok[0]['spills']}" if ok else "—",
                            "not kept": "; ".join(f"{sum(r['status'] == p and r['version'] == version for r in rows)} {p}"
                                                  for p in problems) or "—"})
    display(table(summary, formats={"TFLOP/s": ".0f"}, caption=f"bf16, B·H·N = 16k·32, N = {n}, d = {D}; every "
                  "configuration, its registers, spills and time, is in the notebook's data (tuning.csv)"))

# %% [markdown]
# ## 6. Correctness
#
# `loss.backward()` through `flash_attention` at the tuned configurations, against autograd through naive
# attention in fp32 on the same (rounded) inputs: bf16 and fp16 (fp32 under the interpreter), head_dim
# 64 and 128, causal and not, sequence lengths no block divides; and every other version at one of
# them. The table gives the worst relative error of the three gradients; where a true gradient is zero
# (N = 1: a softmax over one key has none), the size of the computed one.

# %% tags=["hide-cell"] summary="Check the gradients against autograd through naive attention"
CHECK_N = (1000, 3001) if GPU else (1, 100, 257)
TOL = {torch.bfloat16: 2e-2, torch.float16: 2e-2, torch.float32: 1e-5}
OTHERS = [dict(version="two", BLOCK_M=64, BLOCK_N=128, num_warps=8, dq_blocks=(128, 64, 8, 2)),
          dict(version="fused", BLOCK_M=64, BLOCK_N=128, num_warps=8, dq_reduce="pointers"),
          dict(version="fused", BLOCK_M=64, BLOCK_N=128, num_warps=8, dq_reduce="tma")] if GPU else \
    [dict(version="two", BLOCK_M=16, BLOCK_N=32, num_warps=4, num_stages=1, dq_blocks=(32, 16, 4, 1))]
grad_rows = []
for dtype in DTYPES:
    for d in (64, 128):
        for causal in (False, True):
            row = {"dtype": DTYPE_NAME[dtype], "d": d, "causal": causal}
            for n in CHECK_N:
                q, k, v = (torch.randn(1, 2, n, d, device=DEVICE, dtype=dtype).requires_grad_() for _ in range(3))
                do = torch.randn(1, 2, n, d, device=DEVICE, dtype=dtype)
                qf, kf, vf = (t.detach().float().requires_grad_() for t in (q, k, v))
                naive_attention(qf, kf, vf, causal).backward(do.float())
                flash_attention(q, k, v, causal).backward(do)
                ref = (qf.grad, kf.grad, vf.grad)
                worst = grad_error((q.grad, k.grad, v.grad), ref)
                if dtype == DTYPES[0] and d == 128:  # the other versions, at one dtype and head_dim
                    o, lse = attention_forward(q.detach(), k.detach(), v.detach(), causal, **FWD_CFG[causal])
                    worst = max(worst, *(grad_error(attention_backward(q.detach(), k.detach(), v.detach(), o, lse, do,
                                                                       causal, **cfg), ref) for cfg in OTHERS))
                assert worst < TOL[dtype], f"{row} N={n}: gradient relative error {worst:.2e}"
                row[f"N={n}"] = worst
            grad_rows.append(row)
save_data("gradients.csv", grad_rows)
display(table(grad_rows, formats={f"N={n}": ".1e" for n in CHECK_N},
              caption="worst relative error of dQ, dK, dV against autograd through fp32 naive attention"))

# %% [markdown]
# ## 7. One step at a time
#
# Each step at N = 8192, d = 128, bf16, in pairs with cuDNN's backward (5 rounds), then the peers:
# FlashAttention-2 (SDPA's flash backend) and FlexAttention's backward, the Triton kernel torch generates.

# %% tags=["hide-input"] summary="Pair every step, and the peers, with cuDNN"
def tuned(causal: bool, **match) -> dict | None:
    """The fastest checked configuration of the tuning run with these fields; None if none was right."""
    rows = [r for r in tune_rows if r["causal"] == causal and r["status"] == "ok"
            and all(r[key] == value for key, value in match.items())]
    best = max(rows, key=lambda r: r["tflops"], default=None)
    return best and {key: best[key] for key in CONFIG_KEYS if best[key] is not None}


step_rows = []
if GPU:
    n = 8192
    b = TOKENS // (H * n)
    q, k, v, do = (torch.randn(b, H, n, D, device=DEVICE, dtype=torch.bfloat16) for _ in range(4))
    peers = {"sdpa flash": sdpa(sdpa_backends()["sdpa flash"]), "flex attention": flex_attention}
    for causal in (False, True):
        o, lse = attention_forward(q, k, v, causal, **FWD_CFG[causal])
        steps = [("1. two kernels, the forward topic's last blocks",
                  dict(version="two", BLOCK_M=64, BLOCK_N=128, num_warps=8, num_stages=2, warp_specialize=False,
                       dq_blocks=(128, 64, 8, 2))),
                 ("2. two kernels, tuned", tuned(causal, version="two")),
                 ("3. one kernel, dQ by pointer atomics", tuned(causal, version="fused", dq_reduce="pointers")),
                 ("4. one kernel, dQ by TMA reduction", tuned(causal, version="fused", dq_reduce="tma",
                                                              warp_specialize=False)),
                 ("5. + warp specialization", tuned(causal, version="fused", warp_specialize=True))]
        steps += [(f"peer: {name}", name) for name in peers]
        cudnn_bwd = backward_only(cudnn, q, k, v, do, causal)
        for step, cfg in [s for s in steps if s[1]]:
            run = backward_only(peers[cfg], q, k, v, do, causal) if isinstance(cfg, str) else \
                lambda cfg=cfg: attention_backward(q, k, v, o, lse, do, causal, **cfg)
            step_rows.append(step_against_cudnn(cudnn_bwd, run, backward_flops(b, H, n, D, causal),
                                                mask="causal" if causal else "none", step=step,
                                                config=label(cfg) if isinstance(cfg, dict) else "—")[1])
    save_data("steps.csv", step_rows)
    display(table(step_rows, formats={"TFLOP/s": ".0f", "% of cuDNN": ".0f"},
                  caption=f"bf16, B={b} H={H} N={n} d={D}; % of cuDNN: cuDNN's backward time / this one's, median "
                          "of 5 pairs; TFLOP/s counted as 2.5 × the forward's FLOPs"))

# %% [markdown]
# ## 8. Against every backward over N
#
# The tuned kernel, cuDNN, FlashAttention-2 and FlexAttention, each checked against cuDNN's gradients and
# then timed, from N = 1k to 16k at B·H·N = 16k·32, with the 20–80 % quantile bands.

# %% tags=["hide-input"] summary="The sweep: every backward, checked, then timed"
bwd_rows = []
if GPU:
    for causal in (False, True):
        for n in SEQ_LENS:
            b = TOKENS // (H * n)
            q, k, v, do = (torch.randn(b, H, n, D, device=DEVICE, dtype=torch.bfloat16) for _ in range(4))
            o, lse = attention_forward(q, k, v, causal, **FWD_CFG[causal])
            runs = {"triton flash": lambda: attention_backward(q, k, v, o, lse, do, causal, **BWD_CFG[causal]),
                    "sdpa cudnn": backward_only(cudnn, q, k, v, do, causal),
                    **{name: backward_only(fn, q, k, v, do, causal) for name, fn in peers.items()}}
            ref = runs["sdpa cudnn"]()
            for name, fn in runs.items():
                assert grad_error(fn(), ref) < 2e-2, (name, n, causal)
                t = bench(fn)
                f = backward_flops(b, H, n, D, causal)
                bwd_rows.append({"provider": name, "causal": causal, "n": n, "batch": b, "ms": t.ms,
                                 "tflops": tflops(f, t.ms), "tflops_lo": tflops(f, t.ms_hi), "tflops_hi": tflops(f, t.ms_lo)})
    save_data("backward.csv", bwd_rows)
    for causal in (False, True):
        display(benchmark_chart([r for r in bwd_rows if r["causal"] == causal], x="n", y="tflops", provider="provider",
                                y_lo="tflops_lo", y_hi="tflops_hi", xlabel="sequence length N",
                                ylabel="TFLOP/s (2.5 × the forward's FLOPs)",
                                title=f"bf16 attention backward, d={D}, {'causal' if causal else 'not causal'}, "
                                      f"B·H·N = 16k·32, {INFO['device']}"))

# %% [markdown]
# ## 9. The headlines, paired
#
# At N = 8192 (and 16384), d = 128, bf16, each the median of paired rounds against cuDNN,
# FlashAttention-2 and FlexAttention; the goals are issue #34's.

# %% tags=["hide-input"] summary="Pairs, and the headline figures they give"
pairs = {}
if GPU:
    for n, causal, name in ((8192, False, "sdpa cudnn"), (8192, True, "sdpa cudnn"), (16384, False, "sdpa cudnn"),
                            (8192, False, "sdpa flash"), (8192, False, "flex attention"), (8192, True, "flex attention")):
        b = TOKENS // (H * n)
        q, k, v, do = (torch.randn(b, H, n, D, device=DEVICE, dtype=torch.bfloat16) for _ in range(4))
        o, lse = attention_forward(q, k, v, causal, **FWD_CFG[causal])
        base = backward_only(cudnn if name == "sdpa cudnn" else peers[name], q, k, v, do, causal)
        pairs[n, causal, name] = paired_ratio(base, lambda: attention_backward(q, k, v, o, lse, do, causal,
                                                                               **BWD_CFG[causal]), rounds=ROUNDS)
    save_data("headline_pairs.json", {f"N={n} {'causal' if c else 'full'} vs {name}": vars(p)
                                      for (n, c, name), p in pairs.items()})

    def fig(n: int, causal: bool, name: str, goal: float, hid: str, what: str):
        p, b = pairs[n, causal, name], TOKENS // (H * n)
        f = backward_flops(b, H, n, D, causal)
        headline(hid, p.ratio, "x", f"median of {ROUNDS} paired rounds, {name} backward time / Triton backward time "
                 f"(dQ, dK, dV from O, lse, dO), bf16, B={b} H={H} N={n} d={D}, {'causal' if causal else 'not causal'}; "
                 f"spread {p.spread()}; config {label(BWD_CFG[causal])}", label=what, goal=goal,
                 baseline=f"{name} backward, paired: {tflops(f, p.baseline_ms):.0f} TFLOP/s against "
                          f"{tflops(f, p.candidate_ms):.0f}")

    fig(8192, False, "sdpa cudnn", 0.95, "fa_bwd_vs_cudnn", "Backward against cuDNN")
    fig(8192, True, "sdpa cudnn", 0.9, "fa_bwd_causal_vs_cudnn", "Backward against cuDNN, causal")
    fig(16384, False, "sdpa cudnn", 0.9, "fa_bwd_16k_vs_cudnn", "Backward against cuDNN, N = 16384")
    fig(8192, False, "sdpa flash", 1.5, "fa_bwd_vs_sdpa_flash", "Backward against FlashAttention-2")
    fig(8192, False, "flex attention", 1.15, "fa_bwd_vs_flex", "Backward against FlexAttention")
    fig(8192, True, "flex attention", 1.15, "fa_bwd_causal_vs_flex", "Backward against FlexAttention, causal")
    p, b = pairs[8192, False, "sdpa cudnn"], TOKENS // (H * 8192)
    headline("fa_bwd_tflops", tflops(backward_flops(b, H, 8192, D, False), p.candidate_ms), "TFLOP/s",
             f"2.5 x 4BHN^2d / median paired time, bf16, B={b} H={H} N=8192 d={D}, not causal; "
             f"config {label(BWD_CFG[False])}", label="Backward, bf16",
             baseline=f"cuDNN in the same pairs: {tflops(backward_flops(b, H, 8192, D, False), p.baseline_ms):.0f} TFLOP/s")
    display(table([{"pair": f"N={n} {'causal' if c else 'not causal'} against {name}", "ratio": p.ratio,
                    "spread": p.spread(), "baseline ms": p.baseline_ms, "Triton ms": p.candidate_ms}
                   for (n, c, name), p in pairs.items()],
                  formats={"ratio": ".3f", "baseline ms": ".3f", "Triton ms": ".3f"},
                  caption="ratio: the baseline's backward time / the Triton backward's, median over paired rounds"))

# %% [markdown]
# ## 10. Where the rest goes
#
# The forward topic's split: throughput is SMs × clock × work per clock, sampled by `nvidia-smi` while
# the tuned kernel and cuDNN's backward each run for a few seconds (cuDNN, kernel, kernel, cuDNN). With
# them, the compiled kernel's registers and spills: a spill is a trip to local memory in the inner loop.

# %% tags=["hide-input"] summary="Clock, power and work per clock; registers and spills"
power_rows, mean = [], {}
if GPU:
    n = 8192
    b = TOKENS // (H * n)
    q, k, v, do = (torch.randn(b, H, n, D, device=DEVICE, dtype=torch.bfloat16) for _ in range(4))
    o, lse = attention_forward(q, k, v, False, **FWD_CFG[False])
    kernels, fused_best = [], tuned(False, version="fused")
    attention_backward(q, k, v, o, lse, do, False, kernels=kernels, **BWD_CFG[False])
    if fused_best and fused_best != BWD_CFG[False]:  # the fastest one-kernel configuration too
        attention_backward(q, k, v, o, lse, do, False, kernels=kernels, **fused_best)
    runs = {"sdpa cudnn": backward_only(cudnn, q, k, v, do, False),
            "triton flash": lambda: attention_backward(q, k, v, o, lse, do, False, **BWD_CFG[False])}
    power_rows, mean = clock_split(runs, ["sdpa cudnn", "triton flash", "triton flash", "sdpa cudnn"],
                                   backward_flops(b, H, n, D, False), torch.cuda.get_device_properties(0).multi_processor_count)
    save_data("power.csv", power_rows)
    display(table([{"provider": name, **m} for name, m in mean.items()],
                  formats={"tflops": ".0f", "sm_mhz": ".0f", "power_w": ".0f", "flop_per_clk_sm": ".0f",
                           "pj_per_flop": ".2f", "% of dense peak": ".0f"},
                  caption="means of two runs each; counted FLOPs; % of dense peak: FLOP per SM per clock over 4096"))
    display(table([{"kernel": kn.name, "registers": kn.n_regs, "spills": kn.n_spills,
                    "shared KiB": kn.metadata.shared / 1024} for kn in kernels
                   if kn is not None and kn.name in ("attention_bwd_dkdv", "attention_bwd_dq", "attention_bwd_fused")],
                  formats={"shared KiB": ".0f"}, caption=f"the tuned configuration ({label(BWD_CFG[False])})"
                  + (f" and the fastest one-kernel one ({label(fused_best)})" if fused_best and fused_best != BWD_CFG[False] else "")
                  + "; spills: 4-byte values per thread kept in local memory"))

# %% [markdown]
# ## 11. What FlashAttention-3 changes
#
# FlashAttention-3 (Shah et al., [arXiv:2407.08608](https://arxiv.org/abs/2407.08608)) writes the
# backward for Hopper as this page's version 2 does: one kernel per key block, $dQ$ added in fp32
# by TMA's bulk reduction, a last pass to scale and cast it. What it adds on top:
#
# - **warp specialization with register reallocation:** a producer warp group issues the TMA loads
#   with few registers (`setmaxnreg`), and the consumer groups get the rest, so $dK, dV$ stay in
#   registers with room for $S$ and $dP$; Triton's `warp_specialize=True` makes the producer, and
#   the compiler picks the split;
# - **$P$ and $dS$ through shared memory**, laid out so that both matmuls that read them (and the
#   transposed one for $dQ$) take them from there, and the choice of which operand is transposed per
#   head dimension; Triton decides these layouts itself;
# - **overlap inside a warp group:** the exponentials of the next block run while the tensor cores
#   finish this one's matmuls, scheduled by hand. `tl` has no way to ask for it; Gluon
#   (`triton.experimental.gluon`), which exposes warp groups and asynchronous `wgmma`, does.
#
# Next: [FlashAttention-3 in Gluon](flash-attention-3.md) writes these by hand, the forward and then the
# backward, and measures each against cuDNN as this page does.

# %% [markdown]
# ## 12. What we measured, against the prediction
# %% tags=["hide-input"] summary="The numbers of this run"
if GPU:
    def step(mask: str) -> str:  # section 7's rows, in order
        return " → ".join(f"{r['step'].split('. ', 1)[-1]} {r['TFLOP/s']:.0f}" for r in step_rows
                          if r["mask"] == mask and not r["step"].startswith("peer"))
    cud, ours = mean.get("sdpa cudnn"), mean.get("triton flash")
    two, one = tuned(False, version="two"), tuned(False, version="fused")
    best_of = {c["version"]: max(r["tflops"] for r in tune_rows if r["config"] == label(c) and not r["causal"])
               for c in (two, one) if c}
    spills = {c["version"]: next(r["spills"] for r in tune_rows if r["config"] == label(c) and not r["causal"])
              for c in (two, one) if c}
    display(prose(
        f"- **Backward:** {tflops(backward_flops(TOKENS // (H * 8192), H, 8192, D, False), pairs[8192, False, 'sdpa cudnn'].candidate_ms):.0f} "
        f"TFLOP/s at N = 8192, not causal: {pairs[8192, False, 'sdpa cudnn'].ratio:.2f}× cuDNN, "
        f"{pairs[8192, False, 'sdpa flash'].ratio:.2f}× FlashAttention-2 and {pairs[8192, False, 'flex attention'].ratio:.2f}× "
        f"FlexAttention, in pairs; causal, {pairs[8192, True, 'sdpa cudnn'].ratio:.2f}× cuDNN. Configuration: "
        f"{label(BWD_CFG[False])}.\n"
        f"- **Steps, not causal (TFLOP/s, section 7):** {step('none')}. Causal: {step('causal')}.\n"
        + (f"- **The 7/5:** the best two-kernel configuration's {best_of['two']:.0f} counted TFLOP/s are "
           f"{7 / 5 * best_of['two']:.0f} done on the tensor cores, since its dQ pass repeats two matmuls.\n" if two else "")
        + (f"- **One kernel against two (the prediction):** the fastest one-kernel configuration, {label(one)}, did "
           f"{best_of['fused']:.0f} counted TFLOP/s with {spills['fused']} spilled values per thread, against "
           f"{best_of['two']:.0f} for two kernels ({spills['two']} spilled): the prediction "
           + ("held.\n" if best_of["fused"] > best_of["two"] else "failed. Its two fp32 accumulators of BLOCK_N × d "
              "stay in registers beside the tiles of S, dP and the dQ share (section 10's spills), and the two "
              "kernels' repeated matmuls cost less than that and the adds.\n")
           if two and one else "")
        + (f"- **The gap to cuDNN:** under the power cap the kernel ran at {ours['sm_mhz']:.0f} MHz and "
           f"{ours['power_w']:.0f} W, cuDNN at {cud['sm_mhz']:.0f} MHz and {cud['power_w']:.0f} W. Throughput "
           f"{ours['tflops'] / cud['tflops']:.3f} = clock {ours['sm_mhz'] / cud['sm_mhz']:.3f} × work per clock "
           f"{ours['flop_per_clk_sm'] / cud['flop_per_clk_sm']:.3f}.\n" if ours and cud else "")
        + (f"- **Where the rest goes:** counting the matmuls it does, not the five it needs, the two-kernel layout keeps "
           f"the tensor cores {7 / 5 * ours['% of dense peak']:.0f} % busy per clock (7/5 × {ours['% of dense peak']:.0f} %) "
           f"against cuDNN's {cud['% of dense peak']:.0f} %: what separates them is the two matmuls it repeats, which only one "
           "kernel avoids, and that kernel, in Triton 3.6, spills (section 10).\n"
           if ours and cud and BWD_CFG[False]["version"] == "two" else "")))
else:
    display(prose("CPU mode: the kernels were checked against naive attention; nothing was timed."))
