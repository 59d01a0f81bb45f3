# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.16.0
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   worklog_gen:
#     compute_capability: '8.0'  # bf16 tl.dot; versions 2-3 (TMA, warp specialization) only from 9.0, skipped before
#     memory_gib: 24  # sdpa math at N = 2048 (B·H = 256): ~1 G scores, bf16 and fp32 copies; the naive sweep stops at out-of-memory
# ---


# %% [markdown]
# # FlashAttention
#
# Attention is the part of a transformer whose cost grows with the square of the sequence. Written
# as three operations it is bound by memory; FlashAttention (Dao et al.,
# [arXiv:2205.14135](https://arxiv.org/abs/2205.14135); FlashAttention-2,
# [arXiv:2307.08691](https://arxiv.org/abs/2307.08691)) fuses them into one kernel bound by the
# tensor cores. This page builds the forward kernel in Triton and holds it against every attention
# backend of `torch.nn.functional.scaled_dot_product_attention`; the
# [backward pass](flash-attention-backward.md) is the next topic, and imports these kernels.
# The cells it imports are tagged `forward`.
#
# You will learn:
#
# - why naive attention is bound by memory, and how the online softmax of the
#   [online softmax](online-softmax.md) topic removes the traffic;
# - what warp specialization and a persistent schedule do on Hopper, and the form Triton 3.6 needs;
# - why the kernel saves one number per query, the log-sum-exp, for the backward pass;
# - how far a Triton kernel gets against cuDNN and FlashAttention-2, and what the gap is made of.

# %% tags=["hide-input", "forward"] summary="Imports and settings"
import math

import torch
import triton
import triton.language as tl
from IPython.display import display

from worklog_gen.kit.attention import flex_attention, sdpa, sdpa_backends
from worklog_gen.kit.charts import benchmark_chart, roofline_chart
from worklog_gen.kit.compiler import compiler_output_kept, failed_pass
from worklog_gen.kit.markdown import prose, table
from worklog_gen.kit.measure import bench, gpu_info, measure_ceilings, tflops
from worklog_gen.kit.notebook import headline, interpret_mode, save_data
from worklog_gen.kit.paired import paired_ratio
from worklog_gen.kit.power import clock_split
from worklog_gen.kit.roofline import RooflinePoint, save_roofline

TOPIC = "flash-attention"
GPU = not interpret_mode()
DEVICE = "cuda" if GPU else "cpu"
DTYPES = (torch.bfloat16, torch.float16) if GPU else (torch.float32,)  # the interpreter has no bf16
HOPPER = not GPU or torch.cuda.get_device_capability() >= (9, 0)  # TMA descriptors and warp specialization
VERSIONS_HERE = ("pointers", "tma", "persistent") if HOPPER else ("pointers",)  # the interpreter runs all three
DTYPE_NAME = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
TOKENS = 16384 * 32  # B * H * N, the FlashAttention papers' protocol
SEQ_LENS = [512, 1024, 2048, 4096, 8192, 16384]
HEADS = {64: 32, 128: 16}  # head_dim -> heads (hidden size 2048, as in the papers)
ROUNDS = 9  # paired rounds per headline


def scratch(size: int, alignment: int, stream) -> torch.Tensor:
    """Triton's allocator, for the 128 bytes of each device-side tensor descriptor (section 3)."""
    return torch.empty(size, device="cuda", dtype=torch.int8)


torch.manual_seed(0)
if GPU:
    triton.set_allocator(scratch)

# %% [markdown]
# ## 1. Napkin math, and the prediction
#
# Per head, $QK^\top$ is $2N^2d$ FLOPs and $PV$ another $2N^2d$: **$4BHN^2d$ FLOPs** in all,
# half of it under a causal mask. The fused kernel reads $Q, K, V$ and writes $O$: $4BHNd$
# elements, 2 bytes each in bf16. The naive one also writes $S = QK^\top$ and $P$ and reads them
# back: $4BHN^2$ more elements at least. At $N = 8192$, $d = 128$ the fused intensity is $N/2$ =
# 4096 FLOP/byte, far right of the bf16 ridge point (about 200): compute-bound. The naive one,
# about $d/2$ = 64 FLOP/byte, is memory-bound.
#
# **Prediction, written before measuring.** The naive version runs out of memory past
# N = 32k. A plain Triton kernel with tuned blocks should reach about half of the measured bf16
# roof; torch's flash backend (FlashAttention-2, written before Hopper's `wgmma`) should be
# behind it, and cuDNN's Hopper kernels ahead of both.

# %% tags=["hide-input", "forward"] summary="FLOPs and bytes"
def attention_flops(batch: int, heads: int, n: int, d: int, causal: bool) -> float:
    """4 B H N^2 d (two matmuls of 2 N^2 d each per head), halved under a causal mask."""
    return 4 * batch * heads * n * n * d / (2 if causal else 1)


def attention_bytes(batch: int, heads: int, n: int, d: int, itemsize: int = 2, naive: bool = False) -> float:
    """Compulsory bytes: Q, K, V read and O written (4 B H N d elements); the naive
    version also writes S and P and reads them back (4 B H N^2 elements, at least)."""
    elems = 4 * batch * heads * n * d + (4 * batch * heads * n * n if naive else 0)
    return elems * itemsize


# %% tags=["hide-input"] summary="The napkin figures, and the measured roofs"
n, d = 8192, 128
b, h = TOKENS // (HEADS[d] * n), HEADS[d]
napkin = [{"version": "naive" if naive else "fused", "TFLOP": attention_flops(b, h, n, d, False) / 1e12,
           "GB": attention_bytes(b, h, n, d, naive=naive) / 1e9,
           "FLOP/byte": attention_flops(b, h, n, d, False) / attention_bytes(b, h, n, d, naive=naive)}
          for naive in (False, True)]
ceilings = None
if GPU:
    print(gpu_info())
    ceilings = measure_ceilings()
    save_data("ceilings", ceilings.to_dict())
display(table(napkin, formats={"TFLOP": ".2f", "GB": ".2f", "FLOP/byte": ".0f"},
              caption=f"B={b} H={h} N={n} d={d}, bf16" + (
                  f"; measured roofs: bf16 {ceilings.bf16_tflops:.0f} TFLOP/s, copy {ceilings.copy_gbps:.0f} GB/s, "
                  f"ridge {ceilings.ridge_point('bf16'):.0f} FLOP/byte" if ceilings else "")))

# %% [markdown]
# ## 2. Naive attention: matmul, softmax, matmul
#
# The reference everything is checked against, and the memory problem that motivates the rest:
# $S$ and $P$ are $B \cdot H \cdot N^2$ numbers each.

# %% tags=["forward"]
def naive_attention(q, k, v, causal: bool, lse: bool = False):
    """softmax(Q K^T / sqrt(d)) V with S and P materialised; q, k, v (B, H, N, d). With ``lse``,
    also log2 of each row's sum of exp(S) (B, H, N), fp32: what the fused kernel saves."""
    s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))  # (B, H, N, N)
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    o = torch.softmax(s.float(), dim=-1).to(q.dtype) @ v
    return (o, torch.logsumexp(s.float(), -1) / math.log(2)) if lse else o


# %% tags=["hide-input"] summary="Its memory, measured: the peak at N = 16k, and where it runs out"
memory_rows = []
if GPU:
    free, total = torch.cuda.mem_get_info()
    for n in (16384, 24576, 32768, 49152, 65536):
        b, h = max(TOKENS // (HEADS[128] * n), 1), HEADS[128]
        try:
            q, k, v = (torch.randn(b, h, n, 128, device=DEVICE, dtype=torch.bfloat16) for _ in range(3))
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            naive_attention(q, k, v, causal=False)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - base
            memory_rows.append({"N": n, "B": b, "H": h, "peak GiB": peak / 2**30, "bytes per score": peak / (b * h * n * n),
                                "result": "ran"})
        except torch.OutOfMemoryError:
            memory_rows.append({"N": n, "B": b, "H": h, "result": f"out of memory ({b * h * n * n * 8 / 2**30:.0f} GiB for S, P)"})
            break
        finally:
            q = k = v = None
            torch.cuda.empty_cache()
    save_data("naive_memory.csv", memory_rows)
    display(table(memory_rows, formats={"peak GiB": ".1f", "bytes per score": ".1f"},
                  caption=f"naive attention, bf16, d=128; the card has {total / 2**30:.0f} GiB"))

# %% [markdown]
# ## 3. The fused kernel
#
# One program per (block of `BLOCK_M` queries, batch × head). It loads its $Q$ block once, then
# for each block of `BLOCK_N` keys:
#
# 1. $S = QK^\top$ for the block, on the tensor cores (`tl.dot`), in fp32;
# 2. the online softmax: the new running max $m$, the factor $\alpha = 2^{m_{old} - m}$ that
#    rescales the running sum $\ell$ **and the output accumulator**, and $P = 2^{S c - m}$;
# 3. $O \mathrel{+}= PV$ on the tensor cores, $P$ cast to the input dtype.
#
# At the end $O / \ell$ is written once, and $m + \log_2 \ell$, the log-sum-exp of the row, is
# saved for the backward pass. The scale $1/\sqrt d$ and $\log_2 e$ are folded into one constant
# $c$, so each score costs one fused multiply-add and the hardware's `ex2`, masked ones too: $m$ is
# finite after the first block (key 0, which every row may see), and $-\infty \cdot c - m = -\infty$.
# Scaling masked blocks first cost the causal kernel 3–5 % in pairs. Causal key loops stop at the diagonal.
#
# **Version 1: pointers.** Every thread computes addresses and issues its own loads.

# %% tags=["hide-input", "forward"] summary="The online-softmax step that every version shares, and version 1"
@triton.jit
def _online_softmax_step(acc, l_i, m_i, s, v, qk_scale):
    """One key block of the online softmax. s: (BLOCK_M, BLOCK_N) fp32 scores, unscaled, masked ones
    -inf; v: (BLOCK_N, HEAD_DIM). Returns acc (BLOCK_M, HEAD_DIM), l_i, m_i (BLOCK_M,). Every key loop
    starts at key 0, which every row may see, so m_i is finite after the first block: -inf - m is -inf."""
    m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)  # the max of the unscaled scores, scaled once
    p = tl.math.exp2(s * qk_scale - m_new[:, None])  # scale and subtract: one fused multiply-add
    alpha = tl.math.exp2(m_i - m_new)  # rescales what was summed under the old max
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])  # (BLOCK_M, HEAD_DIM) fp32
    return acc, l_i, m_new


@triton.jit
def _keys_pointers(acc, l_i, m_i, q, k_base, v_base, offs_m, lo, hi, n, qk_scale,
                   HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr,
                   BOUNDS_MASK: tl.constexpr, NUM_STAGES: tl.constexpr):
    offs_d = tl.arange(0, HEAD_DIM)
    for start_n in tl.range(lo, hi, BLOCK_N, num_stages=NUM_STAGES):
        offs_n = start_n + tl.arange(0, BLOCK_N)  # (BLOCK_N,)
        kv = offs_n[:, None] * HEAD_DIM + offs_d[None, :]  # (BLOCK_N, HEAD_DIM)
        if BOUNDS_MASK:  # only where N is ragged: the loads of an even N are unmasked
            k = tl.load(k_base + kv, mask=offs_n[:, None] < n, other=0.0)
            v = tl.load(v_base + kv, mask=offs_n[:, None] < n, other=0.0)
        else:
            k = tl.load(k_base + kv)
            v = tl.load(v_base + kv)
        s = tl.dot(q, tl.trans(k))  # (BLOCK_M, BLOCK_N) fp32, unscaled
        if CAUSAL_MASK:
            s = tl.where(offs_m[:, None] >= offs_n[None, :], s, float("-inf"))
        if BOUNDS_MASK:
            s = tl.where(offs_n[None, :] < n, s, float("-inf"))
        acc, l_i, m_i = _online_softmax_step(acc, l_i, m_i, s, v, qk_scale)
    return acc, l_i, m_i


@triton.jit
def attention_fwd_pointers(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr,  # (B*H, N, HEAD_DIM) contiguous; lse (B*H, N)
                           qk_scale, n,  # log2(e) / sqrt(HEAD_DIM); sequence length N
                           HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           CAUSAL: tl.constexpr, EVEN_N: tl.constexpr, NUM_STAGES: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64) * n * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,)
    offs_d = tl.arange(0, HEAD_DIM)
    q_offsets = head + offs_m[:, None] * HEAD_DIM + offs_d[None, :]  # (BLOCK_M, HEAD_DIM)
    q = tl.load(q_ptr + q_offsets, mask=offs_m[:, None] < n, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)  # running max, log2 units
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)  # running sum of 2^(s - m)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    hi = start_m * BLOCK_M if CAUSAL else n  # keys below the diagonal block need no causal mask
    acc, l_i, m_i = _keys_pointers(acc, l_i, m_i, q, k_ptr + head, v_ptr + head, offs_m, 0, hi, n, qk_scale,
                                   HEAD_DIM, BLOCK_N, False, not EVEN_N, NUM_STAGES)
    if CAUSAL:  # the diagonal block, masked; the blocks above it are never loaded
        acc, l_i, m_i = _keys_pointers(acc, l_i, m_i, q, k_ptr + head, v_ptr + head, offs_m, hi,
                                       tl.minimum(hi + BLOCK_M, n), n, qk_scale, HEAD_DIM, BLOCK_N, True,
                                       not EVEN_N, NUM_STAGES)
    tl.store(lse_ptr + tl.program_id(1).to(tl.int64) * n + offs_m, m_i + tl.math.log2(l_i), mask=offs_m < n)
    tl.store(o_ptr + q_offsets, (acc / l_i[:, None]).to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < n)


# %% [markdown]
# **Version 2: tensor descriptors made in the kernel, and warp specialization.** Hopper's Tensor
# Memory Accelerator (TMA) copies a whole tile between HBM and shared memory from one instruction
# and a *descriptor* (base, shape, strides, tile shape). Each program makes its own descriptors
# (`tl.make_tensor_descriptor`), one per tensor **over its own head**: rows past $N$ load as zeros
# and stores past $N$ are dropped, so a ragged $N$ needs no load masks. Made in the kernel, the
# descriptors let Triton 3.6 **warp-specialize** the key loop (`tl.range(..., warp_specialize=True)`),
# as Triton's own fused-attention tutorial does: one warp group only issues TMA loads, and one or
# two consumer groups of 64 rows each only compute, handing buffers over through barriers. The
# pass takes `num_warps = 4` and one loop with no `tl.dot` outside it, so the causal kernel cannot
# peel off its diagonal block: its one loop **masks every block** (a compare and a select per score,
# an offset against a scalar for the reason in section 5's note) or, with `BLOCK_N = BLOCK_M`,
# **adds the mask through the dot**: `tl.dot(q, k.T, acc)` starts from `acc`, here -1e30 above the
# diagonal times a flag that is 1 only at `start_n == q0`, one multiply per score.
#
# Versions 2 and 3 need Hopper (compute capability 9.0). On an older card (an A100, an RTX 3090 or
# 4090, an L4) the notebook skips them and runs, checks, tunes and times version 1, which loads with
# pointers and `cp.async` and computes with `mma.sync`.

# %% tags=["forward"]
@triton.jit
def _keys_tma(acc, l_i, m_i, q, k_desc, v_desc, q0, lo, hi, n, qk_scale, BLOCK_M: tl.constexpr,
              BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, BOUNDS_MASK: tl.constexpr,
              NUM_STAGES: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, ADDITIVE_MASK: tl.constexpr = False):
    """Keys lo..hi for the queries q0..q0 + BLOCK_M; each mask compares an offset with a scalar. ADDITIVE_MASK
    (BLOCK_N == BLOCK_M): the dot starts from -1e30 above the diagonal at start_n == q0 (-inf * 0 is NaN)."""
    offs_m, offs_n = tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_N)  # offsets within the tile
    if ADDITIVE_MASK:
        diagonal = tl.where(offs_n[None, :] > offs_m[:, None], -1.0e30, 0.0)  # (BLOCK_M, BLOCK_N), loop-invariant
    for start_n in tl.range(lo, hi, BLOCK_N, num_stages=NUM_STAGES, warp_specialize=WARP_SPECIALIZE):
        k = k_desc.load([start_n, 0])  # (BLOCK_N, HEAD_DIM); rows past n are zeros
        if ADDITIVE_MASK:  # one multiply per score, before the dot, instead of a compare and a select after it
            s = tl.dot(q, k.T, diagonal * (start_n == q0).to(tl.float32))
        else:
            s = tl.dot(q, k.T)  # (BLOCK_M, BLOCK_N) fp32, unscaled
        if CAUSAL_MASK:  # key index <= query index
            s = tl.where(offs_n[None, :] - offs_m[:, None] <= q0 - start_n, s, float("-inf"))
        if BOUNDS_MASK:  # a ragged N: the zero rows past it must not count
            s = tl.where(offs_n[None, :] < n - start_n, s, float("-inf"))
        v = v_desc.load([start_n, 0])
        acc, l_i, m_i = _online_softmax_step(acc, l_i, m_i, s, v, qk_scale)
    return acc, l_i, m_i


@triton.jit
def _tile_tma(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, qk_scale, n, bh, start_m, HEAD_DIM: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, EVEN_N: tl.constexpr,
              NUM_STAGES: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, ADDITIVE_MASK: tl.constexpr):
    """One (BLOCK_M queries, head bh) tile: its descriptors, its key loops, O and the log-sum-exp."""
    head = bh.to(tl.int64) * n * HEAD_DIM
    q_desc = tl.make_tensor_descriptor(q_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(k_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(v_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(o_ptr + head, [n, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    q0 = start_m * BLOCK_M
    q = q_desc.load([q0, 0])  # (BLOCK_M, HEAD_DIM)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    if CAUSAL and WARP_SPECIALIZE:  # one loop: every block masked, or the mask added to the diagonal block's dot
        acc, l_i, m_i = _keys_tma(acc, l_i, m_i, q, k_desc, v_desc, q0, 0, tl.minimum(q0 + BLOCK_M, n), n, qk_scale,
                                  BLOCK_M, BLOCK_N, not ADDITIVE_MASK, not EVEN_N, NUM_STAGES, True, ADDITIVE_MASK)
    elif CAUSAL:  # the blocks below the diagonal unmasked, then the diagonal block
        acc, l_i, m_i = _keys_tma(acc, l_i, m_i, q, k_desc, v_desc, q0, 0, q0, n, qk_scale, BLOCK_M, BLOCK_N,
                                  False, False, NUM_STAGES, False)
        acc, l_i, m_i = _keys_tma(acc, l_i, m_i, q, k_desc, v_desc, q0, q0, tl.minimum(q0 + BLOCK_M, n), n, qk_scale,
                                  BLOCK_M, BLOCK_N, True, not EVEN_N, NUM_STAGES, False)
    else:
        acc, l_i, m_i = _keys_tma(acc, l_i, m_i, q, k_desc, v_desc, q0, 0, n, n, qk_scale, BLOCK_M, BLOCK_N,
                                  False, not EVEN_N, NUM_STAGES, WARP_SPECIALIZE)
    tl.store(lse_ptr + bh.to(tl.int64) * n + q0 + tl.arange(0, BLOCK_M), m_i + tl.math.log2(l_i),
             mask=tl.arange(0, BLOCK_M) < n - q0)  # an offset against a scalar, as in _keys_tma
    o_desc.store([q0, 0], (acc / l_i[:, None]).to(o_desc.dtype))  # rows past n dropped


@triton.jit
def attention_fwd_tma(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, qk_scale, n,  # as attention_fwd_pointers
                      HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      CAUSAL: tl.constexpr, EVEN_N: tl.constexpr, NUM_STAGES: tl.constexpr,
                      WARP_SPECIALIZE: tl.constexpr, REVERSE: tl.constexpr, ADDITIVE_MASK: tl.constexpr):
    # causal: the longest rows first, so that the last wave holds the short ones
    start_m = tl.num_programs(0) - 1 - tl.program_id(0) if REVERSE else tl.program_id(0)
    _tile_tma(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, qk_scale, n, tl.program_id(1), start_m, HEAD_DIM, BLOCK_M,
              BLOCK_N, CAUSAL, EVEN_N, NUM_STAGES, WARP_SPECIALIZE, ADDITIVE_MASK)


# %% [markdown]
# **Version 3: persistent.** One program per SM walks the tiles $t, t + \#SMs, \ldots$ as in
# version 2, with no launch in between: the loading warps fetch the next tile while the consumers
# still write the last one's $O$, so each tile's prologue and epilogue hide behind a neighbour's.

# %% tags=["forward"]
@triton.jit
def attention_fwd_persistent(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, qk_scale, n, bh_total,  # as version 2; B*H
                             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             CAUSAL: tl.constexpr, EVEN_N: tl.constexpr, NUM_STAGES: tl.constexpr,
                             WARP_SPECIALIZE: tl.constexpr, REVERSE: tl.constexpr, ADDITIVE_MASK: tl.constexpr):
    tiles_m = tl.cdiv(n, BLOCK_M)
    for tile in tl.range(tl.program_id(0), tiles_m * bh_total, tl.num_programs(0)):
        start_m = tiles_m - 1 - tile // bh_total if REVERSE else tile % tiles_m  # causal: longest rows first
        bh = tile % bh_total if REVERSE else tile // tiles_m
        _tile_tma(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, qk_scale, n, bh, start_m, HEAD_DIM, BLOCK_M, BLOCK_N,
                  CAUSAL, EVEN_N, NUM_STAGES, WARP_SPECIALIZE, ADDITIVE_MASK)


# %% tags=["hide-input", "forward"] summary="The launcher: checks, the output and log-sum-exp, the grid"
def attention_forward(q, k, v, causal: bool = False, *, version: str = "tma", BLOCK_M: int = 128,
                      BLOCK_N: int = 64, num_warps: int = 4, num_stages: int = 2, warp_specialize: bool = False,
                      reverse: bool = False, additive_mask: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q K^T / sqrt(d)) V at one configuration: O (B, H, N, d) like q, and the log-sum-exp
    (B, H, N) fp32 of each query row, log2 of sum_j 2^(s_ij log2(e) / sqrt(d)). q, k, v: (B, H, N, d),
    contiguous, one dtype (bf16, fp16; fp32 under the interpreter), d a power of two in 16..256.
    version: "pointers", "tma" or "persistent" (one program per SM); BLOCK_N divides BLOCK_M;
    warp_specialize, reverse (causal: the longest rows first) and additive_mask (causal, warp-specialized,
    BLOCK_M == BLOCK_N: the mask through the dot's accumulator) as in the text, for the last two.
    Raises ValueError on bad inputs."""
    if q.shape != k.shape or q.shape != v.shape or len({q.dtype, k.dtype, v.dtype}) > 1 or q.dim() != 4:
        raise ValueError(f"q, k, v must be (B, H, N, d) of one dtype: {q.shape} {k.shape} {v.shape}")
    if not (q.is_contiguous() and k.is_contiguous() and v.is_contiguous()):
        raise ValueError("q, k, v must be contiguous")
    B, H, N, D = q.shape
    if D not in (16, 32, 64, 128, 256) or BLOCK_M % BLOCK_N or version not in ("pointers", "tma", "persistent"):
        raise ValueError(f"head_dim {D} must be a power of two in 16..256, BLOCK_N must divide BLOCK_M, "
                         f"version 'pointers', 'tma' or 'persistent' ({version!r})")
    o = torch.empty_like(q)
    lse = torch.empty((B, H, N), device=q.device, dtype=torch.float32)
    if q.numel():
        grid = (triton.cdiv(N, BLOCK_M), B * H)
        args = (q, k, v, o, lse, math.log2(math.e) / math.sqrt(D), N)
        meta = dict(HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal, EVEN_N=N % BLOCK_M == 0,
                    NUM_STAGES=num_stages, num_warps=num_warps, num_stages=num_stages)
        if version == "pointers":
            attention_fwd_pointers[grid](*args, **meta)
        else:
            meta.update(WARP_SPECIALIZE=warp_specialize, REVERSE=reverse,
                        ADDITIVE_MASK=causal and warp_specialize and additive_mask and BLOCK_M == BLOCK_N)
            if version == "tma":
                attention_fwd_tma[grid](*args, **meta)
            else:
                sms = torch.cuda.get_device_properties(q.device).multi_processor_count if GPU else 3
                attention_fwd_persistent[(min(sms, grid[0] * grid[1]),)](*args, B * H, **meta)
    return o, lse


# %% [markdown]
# ## 4. Correctness
#
# Against naive attention in fp32 on the same (rounded) inputs: bf16 and fp16 on the GPU (fp32
# under the interpreter), head_dim 64 and 128, causal and not, sequence lengths no block divides,
# every version, warp-specialized or not. The table gives the worst ‖O − O_ref‖ / ‖O_ref‖ of them.

# %% tags=["hide-cell"] summary="Check every version against naive attention in fp32"
CHECK_CFG = dict(BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=2) if GPU else \
    dict(BLOCK_M=32, BLOCK_N=16, num_warps=4, num_stages=1)
WS_CFG = dict(BLOCK_M=128, BLOCK_N=128, num_warps=4, num_stages=2) if GPU else {**CHECK_CFG, "BLOCK_N": 32}  # additive mask
CHECKS = [dict(version="pointers", **CHECK_CFG), dict(version="tma", **CHECK_CFG),
          dict(version="tma", warp_specialize=True, **WS_CFG), dict(version="persistent", warp_specialize=True, **WS_CFG)]
CHECKS = [c for c in CHECKS if c["version"] in VERSIONS_HERE]
CHECK_N = (1000, 3001) if GPU else (1, 100, 257)
TOL = {torch.bfloat16: 2e-2, torch.float16: 2e-2, torch.float32: 1e-5}
correctness = []
for dtype in DTYPES:
    for d in (64, 128):
        for causal in (False, True):
            row = {"dtype": DTYPE_NAME[dtype], "d": d, "causal": causal}
            for n in CHECK_N:
                q, k, v = (torch.randn(1, 2, n, d, device=DEVICE, dtype=dtype) for _ in range(3))
                ref = naive_attention(q.float(), k.float(), v.float(), causal)
                errors = [((attention_forward(q, k, v, causal, reverse=causal, **cfg)[0].float() - ref).norm()
                           / ref.norm()).item() for cfg in CHECKS]
                assert max(errors) < TOL[dtype], f"{row} N={n}: relative error {max(errors):.2e}"
                row[f"N={n}"] = max(errors)
            correctness.append(row)
save_data("correctness.csv", correctness)
display(table(correctness, formats={f"N={n}": ".1e" for n in CHECK_N},
              caption="worst relative error of the output, over every version, against fp32 naive attention"))

# %% [markdown]
# ## 5. Tuning: every configuration checked, then timed
#
# The candidates: `BLOCK_M` and `BLOCK_N` 64 or 128 (`BLOCK_N` ≤ `BLOCK_M`), 4 or 8 warps, 2 or 3
# stages for versions 1 and 2, and warp-specialized ones (4 warps) for 2 and 3. Two rules prune
# them first: at most 128 fp32 values per computing thread for the accumulator and score tile,
# $\text{BLOCK\_M} \cdot (d + \text{BLOCK\_N})$; and $K$, $V$ for every stage plus $Q$ within the
# 227 KiB of shared memory a block may have. A warp-specialized configuration asks for 4 warps and
# gets two consumer groups of 4 from the compiler (as `kit.gemm.keep_configs` notes), so the rule
# counts 8. A survivor is kept only if it matches cuDNN at N = 8192 and naive attention at
# N = 1000, log-sum-exp included; then it is timed at N = 8192.
#
# ??? note "Why every mask in version 2 compares an offset with a scalar: a Triton 3.6 miscompile"
#     With two consumer groups (`BLOCK_M` = 128), a log-sum-exp store masked `q0 + arange < n` left
#     rows 64–127 of every tile unwritten while $O$ was right, and a causal mask built from
#     `q0 + arange` was 18 % off. As an offset against a scalar (`arange < n - q0`) both are right.
#     The N = 1000 check with the log-sum-exp caught it; $O$ at N = 8192 alone passed.

# %% tags=["hide-input"] summary="Candidates and the pruning rules"
def candidate_configs(causal: bool) -> list[dict]:
    """Every (version, blocks, warps, stages, warp specialization) tried on this card; causal programs
    of versions 2 and 3 take the longest rows first. Before Hopper only version 1 runs, and blocks of
    32 keys are tried too: without wgmma the scores, the output and Q all sit in the computing warps'
    registers, and at d = 128 most larger blocks spill (compiled for sm_80, sm_86 and sm_89)."""
    versions = [(v, ws) for v, ws in [("pointers", False), ("tma", False), ("tma", True), ("persistent", True)]
                if v in VERSIONS_HERE]
    return [dict(version=version, BLOCK_M=bm, BLOCK_N=bn, num_warps=w, num_stages=s, warp_specialize=ws,
                 reverse=causal and version != "pointers")
            for version, ws in versions for bm in (64, 128) for bn in ((64, 128) if HOPPER else (32, 64, 128))
            for w in (4, 8) for s in (2, 3) if bn <= bm and not (ws and w != 4)]


SHARED_PER_BLOCK = torch.cuda.get_device_properties(0).shared_memory_per_block_optin if GPU else 227 * 1024
"""Shared memory a block may opt in to (227 KiB on Hopper, 163 on an A100, 99 on sm_86 and sm_89)."""


def fits(cfg: dict, d: int, itemsize: int = 2) -> bool:
    """The pruning rules above: registers per computing thread and shared memory per block."""
    warps = 8 if cfg["warp_specialize"] else cfg["num_warps"]
    regs = (cfg["BLOCK_M"] * d + cfg["BLOCK_M"] * cfg["BLOCK_N"]) / (warps * 32)
    smem = (2 * cfg["num_stages"] * cfg["BLOCK_N"] * d + cfg["BLOCK_M"] * d) * itemsize
    return regs <= 128 and smem <= SHARED_PER_BLOCK


def label(cfg: dict) -> str:
    extra = (" ws" if cfg.get("warp_specialize") else "") + (" rev" if cfg.get("reverse") else "")
    return f"{cfg['version']} {cfg['BLOCK_M']}x{cfg['BLOCK_N']} w{cfg['num_warps']} s{cfg['num_stages']}{extra}"


# %% tags=["hide-input", "hide-output"] summary="The tuning run: check, then time, every configuration at N = 8192; the best of each"
BEST, tune_rows = {}, []
CONFIG_KEYS = ("version", "BLOCK_M", "BLOCK_N", "num_warps", "num_stages", "warp_specialize", "reverse")
if GPU:
    probe = [torch.randn(1, 2, 256, 128, device=DEVICE, dtype=torch.bfloat16) for _ in range(3)]
    for BASELINE in ("sdpa cudnn", "sdpa flash"):  # cuDNN's attention where this torch and card have it
        try:
            sdpa(sdpa_backends()[BASELINE])(*probe, False)
            break
        except RuntimeError as exc:
            print(f"{BASELINE}: not available here ({str(exc).splitlines()[0][:120]}); the next backend is the baseline")
    baseline = sdpa(sdpa_backends()[BASELINE])
    BASE_LABEL = {"sdpa cudnn": "cuDNN", "sdpa flash": "FlashAttention-2"}[BASELINE]
    n = 8192
    for d in (64, 128):
        b, h = TOKENS // (HEADS[d] * n), HEADS[d]
        q, k, v = (torch.randn(b, h, n, d, device=DEVICE, dtype=torch.bfloat16) for _ in range(3))
        small = [torch.randn(1, 2, 1000, d, device=DEVICE, dtype=torch.bfloat16) for _ in range(3)]  # ragged
        for causal in (False, True):
            ref, (small_o, small_lse) = baseline(q, k, v, causal).float(), naive_attention(*(t.float() for t in small), causal, lse=True)
            for cfg in [c for c in candidate_configs(causal) if fits(c, d)]:
                row = {"d": d, "causal": causal, "config": label(cfg), **cfg}
                try:
                    with compiler_output_kept() as dumped:
                        out, (o, lse) = attention_forward(q, k, v, causal, **cfg)[0].float(), \
                            attention_forward(*small, causal, **cfg)
                    row["rel_err"] = err = ((out - ref).norm() / ref.norm()).item()
                    row["lse_err"] = (lse - small_lse).abs().max().item()  # log2 units
                    if not err < 2e-2 or not ((o - small_o).norm() / small_o.norm()).item() < 2e-2:  # NaN too
                        row["status"] = "wrong result"
                    elif not row["lse_err"] < 1e-2:
                        row["status"] = "wrong log-sum-exp"
                    else:
                        t = bench(lambda cfg=cfg: attention_forward(q, k, v, causal, **cfg))
                        row.update(status="ok", ms=t.ms, tflops=tflops(attention_flops(b, h, n, d, causal), t.ms))
                except Exception as exc:  # a configuration this Triton cannot compile: counted, not hidden
                    row["status"] = f"no compile: {failed_pass(dumped) or type(exc).__name__}"
                tune_rows.append(row)
            ok = [r for r in tune_rows if r["d"] == d and r["causal"] == causal and r["status"] == "ok"]
            BEST[d, causal] = {key: max(ok, key=lambda r: r["tflops"])[key] for key in CONFIG_KEYS}
    save_data("tuning.csv", tune_rows)
    summary_rows = []
    for (d, causal), best in BEST.items():
        rows = [r for r in tune_rows if r["d"] == d and r["causal"] == causal]
        ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: -r["tflops"])
        problems = sorted({r["status"] for r in rows if r["status"] != "ok"})
        summary_rows.append({"d": d, "causal": causal, "tried": len(rows), "best": label(best),
                             "TFLOP/s": ok[0]["tflops"], "runner-up": " ".join(f"{r['config']} ({r['tflops']:.0f})" for r in ok[1:2]),
                             "not kept": "; ".join(f"{sum(r['status'] == p for r in rows)} {p}" for p in problems) or "—"})
    display(table(summary_rows, formats={"TFLOP/s": ".0f"}, caption="bf16, N = 8192, B·H·N = 16k·32; "
                  "every configuration and its time is in the notebook's data (tuning.csv)"))


def flash_forward(q, k, v, causal: bool):
    """:func:`attention_forward` at the configuration tuned for this head_dim and mask."""
    return attention_forward(q, k, v, causal, **BEST.get((q.shape[-1], causal), CHECK_CFG))


flash = lambda q, k, v, causal: flash_forward(q, k, v, causal)[0]  # noqa: E731


# %% [markdown]
# ## 6. One step at a time
#
# Each version at N = 8192, head_dim 128, bf16, in pairs with cuDNN (section 7's fastest backend; where
# this torch or card has no cuDNN attention, FlashAttention-2), before Hopper version 1 alone,
# as Simon Boehm's SGEMM worklog does against cuBLAS; last, a peer: FlexAttention, torch's Triton kernel.
# What each step buys: tuning the pointer kernel's blocks is the largest single gain. Descriptors alone do
# not beat it (Triton already pipelines its loads as `cp.async` copies), but warp specialization needs them: one
# warp group loads while two compute. Persistence hides each tile's prologue and epilogue behind a
# neighbour's. Causal: the longest rows first shorten the last wave; a compare and a select in every block
# ate most of what warp specialization gained; added through the dot, the mask costs about 1 % (a scratch run
# with no mask at all). The persistent kernel walks all 64 heads' longest rows at once, so its 132
# tiles share no $K$, $V$ in L2 (one head at a time, it tied version 2).

# %% tags=["hide-input"] summary="Pair every version, and FlexAttention, with cuDNN"
def tuned(d: int, causal: bool, version: str, warp_specialize: bool = False) -> dict | None:
    """The fastest checked configuration of ``version`` in the tuning run; None if none was right."""
    best = max((r for r in tune_rows if r["d"] == d and r["causal"] == causal and r["status"] == "ok"
                and r["version"] == version and r["warp_specialize"] == warp_specialize), key=lambda r: r["tflops"], default=None)
    return best and {key: best[key] for key in CONFIG_KEYS}


step_rows = []
if GPU:
    n, d = 8192, 128
    b, h = TOKENS // (HEADS[d] * n), HEADS[d]
    q, k, v = (torch.randn(b, h, n, d, device=DEVICE, dtype=torch.bfloat16) for _ in range(3))
    first = dict(version="pointers", BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=2)
    steps = [(False, "1. pointers, 64×64 blocks, 4 warps", first),
             (False, "2. pointers, tuned", tuned(d, False, "pointers")),
             (False, "3. descriptors made in the kernel, one per head", tuned(d, False, "tma")),
             (False, "4. + warp specialization of the key loop", tuned(d, False, "tma", True)),
             (False, "5. + persistent: one program per SM", tuned(d, False, "persistent", True)),
             (True, "1. pointers, tuned", tuned(d, True, "pointers")),
             (True, "2. descriptors made in the kernel", tuned(d, True, "tma") and {**tuned(d, True, "tma"), "reverse": False}),
             (True, "3. + the longest rows first", tuned(d, True, "tma")),
             (True, "4. one warp-specialized loop, every block masked",
              tuned(d, True, "tma", True) and {**tuned(d, True, "tma", True), "additive_mask": False}),
             (True, "5. + the mask added through the dot", tuned(d, True, "tma", True)),
             (True, "6. + persistent", tuned(d, True, "persistent", True))]
    steps += [(causal, "peer: FlexAttention (Triton, from torch)", "flex") for causal in (False, True)]
    for causal, step, cfg in [s for s in steps if s[2]]:  # (checked in the tuning run, FlexAttention in section 7)
        run = (lambda: flex_attention(q, k, v, causal)) if cfg == "flex" else lambda cfg=cfg: attention_forward(q, k, v, causal, **cfg)
        p = paired_ratio(lambda: baseline(q, k, v, causal), run, rounds=5)
        step_rows.append({"mask": "causal" if causal else "none", "version": step, "config": "—" if cfg == "flex" else label(cfg),
                          "TFLOP/s": tflops(attention_flops(b, h, n, d, causal), p.candidate_ms),
                          f"% of {BASE_LABEL}": 100 * p.ratio, "spread": p.spread()})
    save_data("steps.csv", step_rows)
    if not HOPPER:
        print("Versions 2 and 3 (TMA descriptors, warp specialization, persistence) need compute capability 9.0: "
              "not on this card")
    display(table(step_rows, formats={"TFLOP/s": ".0f", f"% of {BASE_LABEL}": ".0f"},
                  caption=f"bf16, B=4 H=16 N=8192 d=128; % of {BASE_LABEL}: {BASE_LABEL}'s time / this one's, "
                          "median of 5 pairs"))

# %% [markdown]
# ## 7. Benchmark against every backend of `scaled_dot_product_attention`
#
# Each backend chosen explicitly with `torch.nn.attention.sdpa_kernel`: `FLASH_ATTENTION`
# (FlashAttention-2), `EFFICIENT_ATTENTION` (the memory-efficient kernel from xFormers),
# `CUDNN_ATTENTION`, and `MATH` (the naive composition) up to N = 2048; and, at head_dim 128,
# FlexAttention, torch's Triton kernel. bf16, B·H·N = 16k·32 tokens, head_dim 64 (32 heads) and 128 (16 heads), causal and not, with the
# 20–80 % quantile bands.

# %% tags=["hide-input"] summary="The sweep over N: every backend, checked against the kernel, then timed"
BACKENDS = sdpa_backends() if GPU else {}


def providers(n: int, d: int) -> dict:
    """Ours, FlexAttention at d = 128, every SDPA backend; math only to N = 2048 (S and P for 32 heads: gigabytes)."""
    return {"triton flash": flash, **({"flex attention": flex_attention} if d == 128 else {}),
            **{name: sdpa(backend) for name, backend in BACKENDS.items() if name != "sdpa math" or n <= 2048}}


bench_rows, unavailable = [], {}
if GPU:
    for d in (64, 128):
        for causal in (False, True):
            for n in SEQ_LENS:
                b, h = TOKENS // (HEADS[d] * n), HEADS[d]
                q, k, v = (torch.randn(b, h, n, d, device=DEVICE, dtype=torch.bfloat16) for _ in range(3))
                ref = flash(q, k, v, causal).float()
                for name, fn in providers(n, d).items():
                    try:
                        out = fn(q, k, v, causal).float()
                    except RuntimeError as exc:  # a backend this build or shape does not support
                        unavailable[name] = str(exc).splitlines()[0][:200]
                        continue
                    assert ((out - ref).norm() / ref.norm()).item() < 2e-2, (name, n, d)
                    t = bench(lambda fn=fn: fn(q, k, v, causal))
                    f = attention_flops(b, h, n, d, causal)
                    bench_rows.append({"provider": name, "d": d, "causal": causal, "n": n, "batch": b, "heads": h,
                                       "ms": t.ms, "tflops": tflops(f, t.ms), "tflops_lo": tflops(f, t.ms_hi),
                                       "tflops_hi": tflops(f, t.ms_lo), "flops": f,
                                       "bytes": attention_bytes(b, h, n, d), "ms_lo": t.ms_lo, "ms_hi": t.ms_hi})
    save_data("benchmark.csv", bench_rows)
    for name, why in unavailable.items():
        print(f"{name}: not available here: {why}")


def sweep_chart(d: int, causal: bool):
    rows = [r for r in bench_rows if r["d"] == d and r["causal"] == causal]
    return benchmark_chart(rows, x="n", y="tflops", provider="provider", y_lo="tflops_lo", y_hi="tflops_hi",
                           xlabel="sequence length N", ylabel="TFLOP/s",
                           title=f"bf16 attention forward, d={d}, {'causal' if causal else 'not causal'}, "
                                 f"B·H·N = 16k·32, {ceilings.device}")


# %%
if GPU:
    display(sweep_chart(128, False))
    display(sweep_chart(128, True))

# %% tags=["hide-output"] summary="The same at head_dim 64"
if GPU:
    display(sweep_chart(64, False))
    display(sweep_chart(64, True))

# %% [markdown]
# ## 8. The headlines, paired, at N = 8192, head_dim 128
#
# Against FlashAttention-2 (SDPA's flash backend) and the sweep's fastest backend, in bf16, causal
# and not, and in fp16, each the median of paired rounds; the goals are issue #23's, and #34's
# for the fastest backend.

# %% tags=["hide-input"] summary="Pairs, and the headline figures they give"
pairs = {}
if GPU:
    n, d = 8192, 128
    b, h = TOKENS // (HEADS[d] * n), HEADS[d]
    at = {(r["provider"], r["causal"]): r for r in bench_rows if r["n"] == n and r["d"] == d}
    fastest = max((p for (p, c) in at if not c and p in BACKENDS), key=lambda p: at[p, False]["tflops"])
    for dtype in (torch.bfloat16, torch.float16):
        q, k, v = (torch.randn(b, h, n, d, device=DEVICE, dtype=dtype) for _ in range(3))
        for causal in (False, True) if dtype == torch.bfloat16 else (False,):
            for name in ("sdpa flash", fastest) if dtype == torch.bfloat16 and not causal else ("sdpa flash",):
                fn = sdpa(BACKENDS[name])
                pairs[DTYPE_NAME[dtype], causal, name] = paired_ratio(
                    lambda fn=fn: fn(q, k, v, causal), lambda: flash(q, k, v, causal), rounds=ROUNDS)
    save_data("headline_pairs.json", {f"{dt} {'causal' if c else 'full'} vs {name}": vars(p)
                                      for (dt, c, name), p in pairs.items()})
    flops_full, flops_causal = attention_flops(b, h, n, d, False), attention_flops(b, h, n, d, True)
    shape = f"B={b} H={h} N={n} d={d}"
    full, causal_pair = pairs["bf16", False, "sdpa flash"], pairs["bf16", True, "sdpa flash"]
    best_pair, fp16_pair = pairs["bf16", False, fastest], pairs["fp16", False, "sdpa flash"]
    peer = {r["mask"]: r["TFLOP/s"] for r in step_rows if r["version"].startswith("peer")}

    def ran(causal: bool) -> str:  # the peers' figures from this run's sweep and steps
        return (f"this run: {fastest} {at[fastest, causal]['tflops']:.0f}, "
                f"FlexAttention {peer['causal' if causal else 'none']:.0f} TFLOP/s")

    headline("fa_fwd_tflops", tflops(flops_full, full.candidate_ms), "TFLOP/s",
             f"4BHN^2d / median paired time, bf16, {shape}, not causal; config {label(BEST[d, False])}",
             label="Forward, bf16", goal=560, baseline=ran(False))
    headline("fa_fwd_causal_tflops", tflops(flops_causal, causal_pair.candidate_ms), "TFLOP/s",
             f"2BHN^2d / median paired time, bf16, {shape}, causal; config {label(BEST[d, True])}",
             label="Forward, bf16, causal", goal=500, baseline=ran(True))
    headline("fa_fwd_fp16_tflops", tflops(flops_full, fp16_pair.candidate_ms), "TFLOP/s",
             f"as fa_fwd_tflops in fp16, paired with SDPA flash in fp16; spread {fp16_pair.spread()}",
             label="Forward, fp16", goal=529,
             baseline=f"SDPA flash in fp16, this run: {tflops(flops_full, fp16_pair.baseline_ms):.0f} TFLOP/s")
    headline("fa_fwd_vs_sdpa_flash", full.ratio, "x",
             f"median of {ROUNDS} paired rounds, SDPA FLASH_ATTENTION time / Triton time, bf16, {shape}, not causal; "
             f"spread {full.spread()}", label="Forward against FlashAttention-2", goal=1.2,
             baseline=f"SDPA flash (FlashAttention-2), paired: {tflops(flops_full, full.baseline_ms):.0f} TFLOP/s")
    headline("fa_fwd_causal_vs_sdpa_flash", causal_pair.ratio, "x",
             f"as fa_fwd_vs_sdpa_flash, causal; spread {causal_pair.spread()}",
             label="Forward against FlashAttention-2, causal", goal=1.2,
             baseline=f"SDPA flash, causal, paired: {tflops(flops_causal, causal_pair.baseline_ms):.0f} TFLOP/s")
    headline("fa_fwd_vs_sdpa_best", best_pair.ratio, "x",
             f"against the fastest backend of the sweep at this shape ({fastest}), not causal; "
             f"spread {best_pair.spread()}", label="Forward against the fastest backend", goal=1.0,
             baseline=f"{fastest}, paired: {tflops(flops_full, best_pair.baseline_ms):.0f} TFLOP/s")
    display(table([{"pair": f"{dt} {'causal' if c else 'not causal'} against {name}", "ratio": p.ratio,
                    "spread": p.spread(), "backend ms": p.baseline_ms, "Triton ms": p.candidate_ms}
                   for (dt, c, name), p in pairs.items()],
                  formats={"ratio": ".3f", "backend ms": ".3f", "Triton ms": ".3f"},
                  caption="ratio: backend time / Triton time, median over paired rounds"))

# %% [markdown]
# ### Under the power cap: clock and work per clock
#
# Throughput is SMs × SM clock × FLOP per SM per clock, so a ratio between two kernels splits into
# a ratio of clocks and one of work per clock. The kernel and the fastest backend each run back
# to back for a few seconds, in the order backend, kernel, kernel, backend, while `nvidia-smi`
# samples the SM clock, the board power and the clock-event reasons every 50 ms (`kit.power`).
# The clock moves in 15 MHz steps, so the split is good to a percent or two.

# %% tags=["hide-input"] summary="Clock, power and work per clock, sampled while each runs"
power_rows, mean = [], {}
if GPU and not HOPPER:
    print("Skipped on this card: the split's work per clock is counted against Hopper's 4,096 dense bf16 FLOP "
          "per SM per clock (kit.power)")
elif GPU:
    q, k, v = (torch.randn(b, h, n, d, device=DEVICE, dtype=torch.bfloat16) for _ in range(3))
    runs = {fastest: lambda: sdpa(BACKENDS[fastest])(q, k, v, False), "triton flash": lambda: flash(q, k, v, False)}
    power_rows, mean = clock_split(runs, [fastest, "triton flash", "triton flash", fastest], flops_full,
                                   torch.cuda.get_device_properties(0).multi_processor_count)
    save_data("power.csv", power_rows)
    display(table([{"provider": name, **m} for name, m in mean.items()],
                  formats={"tflops": ".0f", "sm_mhz": ".0f", "power_w": ".0f", "flop_per_clk_sm": ".0f",
                           "pj_per_flop": ".2f", "% of dense peak": ".0f"},
                  caption="means of two runs each; % of dense peak: FLOP per SM per clock over the tensor cores' 4096"))

# %% [markdown]
# ## 9. Roofline
#
# Every backend and the kernel at N = 8192, d = 128 against the measured bf16 roof; intensity counts
# the fused kernel's compulsory bytes for all (Q, K, V read, O written).

# %% tags=["hide-input"] summary="Roofline points from the sweeps"
if GPU:
    points = [RooflinePoint(label=f"{r['provider']}{' causal' if r['causal'] else ''}", flops=r["flops"],
                            nbytes=r["bytes"], ms=r["ms"], roof="bf16", topic=TOPIC, ms_lo=r["ms_lo"], ms_hi=r["ms_hi"],
                            size=f"B={r['batch']} H={r['heads']} N={r['n']} d={r['d']}", dtype="bf16")
              for r in bench_rows if r["n"] == 8192 and r["d"] == 128]
    save_roofline(points, ceilings)
    display(roofline_chart(points, ceilings, roofs=("bf16",), title=f"Attention, N=8192, d=128, {ceilings.device}"))

# %% [markdown]
# ## 10. What we measured, against the prediction
# %% tags=["hide-input"] summary="The numbers of this run"
if GPU:
    ours, ref = (mean.get("triton flash"), mean.get(fastest)) if len(mean) == 2 else (None, None)
    fwd_tf, causal_tf = tflops(flops_full, full.candidate_ms), tflops(flops_causal, causal_pair.candidate_ms)
    def walk(mask: str) -> str:  # the TFLOP/s of section 6's rows, in order
        return " → ".join(f"{r['version'].split('. ', 1)[-1].lstrip('+ ')} {r['TFLOP/s']:.0f}"
                          for r in step_rows if r["mask"] == mask and not r["version"].startswith("peer"))
    peer = {r["mask"]: r for r in step_rows if r["version"].startswith("peer")}
    display(prose(
        f"- **Forward:** {fwd_tf:.0f} TFLOP/s in bf16 at N = 8192, d = 128, "
        f"{fwd_tf / ceilings.bf16_tflops:.2f} of the measured bf16 roof ({ceilings.bf16_tflops:.0f}); the "
        f"prediction was about half. {full.ratio:.2f}× SDPA's FlashAttention-2 and {best_pair.ratio:.2f}× "
        f"{fastest}, in pairs. In fp16, {tflops(flops_full, fp16_pair.candidate_ms):.0f} TFLOP/s.\n"
        f"- **Steps, not causal (TFLOP/s, section 6):** {walk('none')}.\n"
        f"- **Causal:** {causal_tf:.0f} TFLOP/s, {causal_pair.ratio:.2f}× FlashAttention-2; steps: {walk('causal')}. "
        + ("Warp specialization needs one loop, so every block carries the mask: one multiply per score.\n" if HOPPER
           else "\n")
        + "".join(f"- **FlexAttention** ({'causal' if m == 'causal' else 'not causal'}), the Triton kernel torch "
                  f"generates: {r['TFLOP/s']:.0f} TFLOP/s, {r[f'% of {BASE_LABEL}']:.0f} % of {BASE_LABEL}.\n"
                  for m, r in peer.items())
        + (f"- **The gap to {fastest}:** under the power cap the kernel ran at {ours['sm_mhz']:.0f} MHz and "
           f"{ours['power_w']:.0f} W, {fastest} at {ref['sm_mhz']:.0f} MHz and {ref['power_w']:.0f} W. Throughput "
           f"{ours['tflops'] / ref['tflops']:.3f} = clock {ours['sm_mhz'] / ref['sm_mhz']:.3f} × work per clock "
           f"{ours['flop_per_clk_sm'] / ref['flop_per_clk_sm']:.3f}: the kernel keeps the tensor cores "
           f"{ours['% of dense peak']:.0f} % busy per clock against {ref['% of dense peak']:.0f} %. What cuDNN does "
           "that Triton 3.6 does not on Hopper is overlap one warp group's softmax with the other's matmuls "
           "(FlashAttention-3's ping-pong); both already move registers from the loading warps to the computing ones.\n"
           if ours else "")
        + "- **Next:** the [backward pass](flash-attention-backward.md), from the log-sum-exp this kernel saves."))
else:
    display(prose("CPU mode: the kernels were checked against naive attention; nothing was timed."))
