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
#     compute_capability: '8.0'  # bf16 rows need sm_80; the kernels are portable
#     memory_gib: 8  # the kit's measure_ceilings copies 2 GiB into 2 GiB; 4096 x 16384 fp32 rows ~1 GiB live
# ---

# %% [markdown]
# # Online softmax
#
# Softmax turns a row of scores into probabilities:
#
# $$y_i = \frac{e^{x_i}}{\sum_j e^{x_j}}.$$
#
# It does almost no arithmetic per element, so its speed is set by how many times the
# row travels between HBM and the SMs. This notebook builds three algorithms that differ
# only in that count and measures each against the copy bandwidth of the GPU:
#
# | algorithm | passes over HBM | what it keeps on chip |
# |---|---|---|
# | three-pass ("safe") softmax | 3 reads + 1 write | the row max, then the sum |
# | online softmax (Milakov & Gimelshein 2018, [arXiv:1805.02867](https://arxiv.org/abs/1805.02867)) | 2 reads + 1 write | a running (max, sum) pair |
# | fused, row held on chip | 1 read + 1 write | the whole row |
#
# and a dispatcher that picks one by row length. Everything runs in fp32 and bf16
# (bf16 in and out, fp32 inside).
#
# You will learn:
#
# - why softmax's speed is its pass count over HBM, and what each algorithm keeps on chip;
# - the online rule: one running (max, sum) pair replaces a pass, and how it merges segments;
# - when holding the whole row on chip wins, and when L2 hides a second pass anyway;
# - how to split 64 long rows over every SM, and what that buys.

# %% tags=["hide-input"] summary="Imports and settings"
import math
import time
import warnings

import torch
import triton
import triton.language as tl
from IPython.display import display

from worklog_gen.kit.markdown import prose, table
from worklog_gen.kit.measure import bench, gbps, gpu_info, measure_ceilings, occupancy
from worklog_gen.kit.notebook import headline, interpret_mode, save_data
from worklog_gen.kit.charts import benchmark_chart, roofline_chart
from worklog_gen.kit.roofline import RooflinePoint, save_roofline

TOPIC = "online-softmax"
DEVICE = "cpu" if interpret_mode() else "cuda"
print(f"device: {DEVICE}; interpret mode: {interpret_mode()}")
if not interpret_mode():
    print(gpu_info())

# %% [markdown]
# ## 1. Napkin math
#
# ### Why subtract the max
#
# For any constant $c$, $\frac{e^{x_i}}{\sum_j e^{x_j}} = \frac{e^{x_i - c}}{\sum_j e^{x_j - c}}$.
# Choosing $c = m = \max_j x_j$ makes every exponent $\le 0$, so every $e^{x_j - m}$ lies in
# $(0, 1]$ and cannot overflow (fp32 `exp` overflows above $x \approx 88.7$), and the largest
# element contributes exactly $e^0 = 1$, so the sum is at least 1 and cannot underflow to
# zero. That is the "safe" softmax. The price is one more pass: the max must be known
# before the first exponential.
#
# Below, a row of logits around +1000 makes $e^{x}$ overflow to `inf` (inf/inf = NaN), one around
# −1000 underflows to 0 (0/0 = NaN); the safe form is the same and finite: softmax is shift-invariant.

# %%
logits, shifts = torch.linspace(-2.0, 2.0, 7), []  # (7,) fp32
for row in (logits, logits + 1000, logits - 1000):
    naive, safe = torch.exp(row) / torch.exp(row).sum(), torch.exp(row - row.max()) / torch.exp(row - row.max()).sum()
    assert not safe.isnan().any()
    shifts.append({"row": f"{row.mean().item():+.0f} ± 2", "naive has NaN": bool(naive.isnan().any()),
                   "safe has NaN": bool(safe.isnan().any()), "safe max probability": safe.max().item()})
display(table(shifts, formats={"safe max probability": ".4f"}))

# %% [markdown]
# ### The online rule
#
# Milakov & Gimelshein keep a running pair $(m, d)$ while reading the row once: on
# element $x_j$,
#
# $$m_j = \max(m_{j-1}, x_j), \qquad d_j = d_{j-1}\, e^{m_{j-1} - m_j} + e^{x_j - m_j}.$$
#
# When the max grows, the sum so far is rescaled to the new max. Two partial pairs
# $(m_a, d_a)$ and $(m_b, d_b)$ over disjoint pieces of a row merge the same way,
#
# $$m = \max(m_a, m_b), \qquad d = d_a e^{m_a - m} + d_b e^{m_b - m},$$
#
# and the merge is associative and commutative. So each lane of a Triton block can keep
# its own pair, and several programs can each own a piece of one row and merge at the end.
# The max and the sum come out of one pass, the normalisation $y_i = e^{x_i - m}/d$ is the
# second: 2 reads + 1 write instead of 3 + 1.
#
# One detail makes it safe with `-inf` entries (masked attention scores, padding): when
# both $m_{j-1}$ and $x_j$ are $-\infty$, $m_{j-1} - m_j$ is $-\infty - (-\infty) = $ NaN.
# The kernels treat "no finite element seen yet" as "no mass yet" instead.
#
# ### Bytes and the floor time
#
# The compulsory traffic of an $M \times N$ softmax is one read and one write of the
# matrix: $2MN \cdot$ (bytes per element). Every benchmark below reports GB/s on those
# compulsory bytes, so a kernel that moves more than the minimum shows up as a lower
# number. FLOPs per element: a compare (max), a subtract, an `exp`, an add (sum) and a
# multiply by $1/d$, 5 in all; at 8 bytes per fp32 element that is an arithmetic intensity
# of 5/8 FLOP/byte, two orders of magnitude left of the ridge point: bandwidth is the only roof
# that matters.
#
# If every pass went to HBM, an algorithm with $r$ reads and $w$ writes could reach at
# most $2/(r+w)$ of the copy bandwidth on compulsory bytes: 1/2 for three-pass, 2/3 for
# online, 1 for fused. The next cell turns that into floor times from the measured copy
# bandwidth. One caveat goes into the prediction: when a program re-reads its own row soon
# after the first read, the re-read can hit the L2 cache (tens of MB; the next cell prints its size)
# instead of HBM. The passes are
# only all paid in HBM when the data between two passes is larger than L2, which is why
# the long-row benchmark (64 rows of up to $2^{20}$ fp32, 256 MiB) splits each pass into its
# own kernel launch over the whole matrix.

# %% tags=["hide-input"] summary="Passes, bytes, the measured roofs, and the predicted floor times"
PASSES = {"three-pass": (3, 1), "online": (2, 1), "fused": (1, 1)}
"""(reads, writes) of the input-sized matrix per algorithm (Milakov & Gimelshein 2018, sec. 2-3)."""
FLOPS_PER_ELEMENT = 5
"""max compare, subtract, exp, add, multiply by 1/sum; counting exp as one FLOP is a convention."""
ceilings, PREDICTION = None, {}
if not interpret_mode():
    ceilings = measure_ceilings()
    PROPS = torch.cuda.get_device_properties(torch.cuda.current_device())
    L2_BYTES = PROPS.L2_cache_size
    floors = []
    for label, (M, N, esize) in {"fp32 4096x16384": (4096, 16384, 4), "bf16 4096x16384": (4096, 16384, 2),
                                 "fp32 64x2^20": (64, 2**20, 4)}.items():
        matrix = M * N * esize
        for name, (reads, writes) in PASSES.items():
            PREDICTION[(label, name)] = (reads + writes) * matrix / (ceilings.copy_gbps * 1e9) * 1e3  # ms
            floors.append({"shape": label, "algorithm": name, "floor µs": PREDICTION[(label, name)] * 1e3,
                           "GB/s": gbps(2 * matrix, PREDICTION[(label, name)]), "matrix / L2": matrix / L2_BYTES})
    display(table(floors, formats={"floor µs": ".1f", "GB/s": ".0f", "matrix / L2": ".1f"},
                  caption=f"floor times if every pass went to HBM, from the measured copy {ceilings.copy_gbps:.0f} GB/s; "
                          f"L2 {L2_BYTES / 2**20:.0f} MiB; the fp32 ridge point is {ceilings.ridge_point('fp32'):.1f} "
                          f"FLOP/byte, softmax {FLOPS_PER_ELEMENT / 8:.3f}"))

# %% [markdown]
# **Prediction, written before measuring.** At 4096×16384 fp32 the fused kernel should run
# at the copy bandwidth (within ~10%), and torch.softmax below it if it re-reads rows.
# The one-program-per-row three-pass and online kernels will beat their HBM floors there,
# because the rows they re-read are still in L2. On the long rows, where each pass is its
# own launch over several times more data than L2 holds, online should be close to 4/3 = 1.33× faster
# than three-pass.
#
# ## 2. The kernels
#
# All looped kernels are built from four small `@triton.jit` helpers, each a sweep over
# one *segment* `[lo, hi)` of a row in chunks of `BLOCK_SIZE` elements. Every lane keeps
# its own running value (a `(BLOCK_SIZE,)` vector) and the lanes are reduced once after the
# loop, so there is no cross-warp reduction inside any loop and the three-pass and online
# kernels do the same work per element: two `exp` each.
#
# Loads go through fp32 (`.to(tl.float32)`) so a bf16 input is accumulated in fp32; masked
# lanes read `-inf`, which contributes nothing to a max or to a sum of exponentials.

# %%
@triton.jit
def _segment_max(x_row, lo, hi, BLOCK_SIZE: tl.constexpr):
    """Max of x_row[lo:hi] in fp32; -inf for an empty segment."""
    cols = tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    m = tl.full((BLOCK_SIZE,), float("-inf"), tl.float32)  # (BLOCK_SIZE,) running max per lane
    for start in tl.range(lo, hi, BLOCK_SIZE):
        offs = start + cols  # (BLOCK_SIZE,)
        x = tl.load(x_row + offs, mask=offs < hi, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, x)
    return tl.max(m, axis=0)


@triton.jit
def _segment_sumexp(x_row, lo, hi, m, BLOCK_SIZE: tl.constexpr):
    """Sum of exp(x - m) over x_row[lo:hi], with m a max already known (a pass of three-pass)."""
    cols = tl.arange(0, BLOCK_SIZE)
    s = tl.zeros((BLOCK_SIZE,), tl.float32)  # (BLOCK_SIZE,) running sum per lane
    for start in tl.range(lo, hi, BLOCK_SIZE):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < hi, other=float("-inf")).to(tl.float32)
        s += tl.exp(x - m)
    return tl.sum(s, axis=0)


@triton.jit
def _segment_online(x_row, lo, hi, BLOCK_SIZE: tl.constexpr):
    """(max, sum of exp(x - max)) of x_row[lo:hi] in one sweep: the online rule per lane.

    new max = max(m, x); one of exp(m - new) and exp(x - new) is exp(0) = 1, so one exp of
    (smaller - larger) per element is enough. A lane that has seen only -inf keeps (-inf, 0).
    An empty segment gives (-inf, 0).
    """
    cols = tl.arange(0, BLOCK_SIZE)
    m = tl.full((BLOCK_SIZE,), float("-inf"), tl.float32)  # (BLOCK_SIZE,) running max per lane
    s = tl.zeros((BLOCK_SIZE,), tl.float32)  # (BLOCK_SIZE,) running sum, relative to m
    for start in tl.range(lo, hi, BLOCK_SIZE):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < hi, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        e = tl.exp(tl.minimum(m, x) - m_new)  # in [0, 1]
        e = tl.where(m_new == float("-inf"), 0.0, e)  # both -inf: no mass (avoids -inf - -inf = NaN)
        s = tl.where(x > m, s * e + 1.0, s + e)  # x is the new max: rescale the old sum
        m = m_new
    # merge the lanes' pairs: m = max m_k, s = sum s_k * exp(m_k - m)
    m_row = tl.max(m, axis=0)
    m_ref = tl.where(m_row == float("-inf"), 0.0, m_row)  # all -inf: any finite reference gives s = 0
    s_row = tl.sum(s * tl.exp(m - m_ref), axis=0)
    return m_row, s_row


@triton.jit
def _segment_write(x_row, y_row, lo, hi, m, inv_s, BLOCK_SIZE: tl.constexpr):
    """y_row[lo:hi] = exp(x - m) * inv_s, stored in y's dtype: the normalisation pass."""
    cols = tl.arange(0, BLOCK_SIZE)
    for start in tl.range(lo, hi, BLOCK_SIZE):
        offs = start + cols
        mask = offs < hi
        x = tl.load(x_row + offs, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - m) * inv_s  # (BLOCK_SIZE,) fp32
        tl.store(y_row + offs, y.to(y_row.dtype.element_ty), mask=mask)


# %% [markdown]
# ### Version 1 and 2: one program per row
#
# The three-pass kernel sweeps its row three times (max, sum, write), the online kernel
# twice (max and sum together, then write). The grid is one program per row; with
# thousands of rows that fills all SMs.
#
# **All-`-inf` rows.** A row with no finite element has no defined softmax: $0/0$.
# `torch.softmax` returns NaN for it and so does every kernel here, deliberately: $m = -\infty$
# makes $e^{x - m}$ NaN in the write pass. Rows with *some* `-inf` entries are fine and get
# exact zeros there.

# %%
@triton.jit
def softmax_threepass_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols,
                             BLOCK_SIZE: tl.constexpr):  # elements per chunk of a sweep
    row = tl.program_id(0).to(tl.int64)  # int64: row * stride can pass 2^31 on big inputs
    x_row = x_ptr + row * x_row_stride
    m = _segment_max(x_row, 0, n_cols, BLOCK_SIZE)  # read 1
    s = _segment_sumexp(x_row, 0, n_cols, m, BLOCK_SIZE)  # read 2
    _segment_write(x_row, y_ptr + row * y_row_stride, 0, n_cols, m, 1.0 / s, BLOCK_SIZE)  # read 3, write


@triton.jit
def softmax_online_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_cols,
                          BLOCK_SIZE: tl.constexpr):  # elements per chunk of a sweep
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    m, s = _segment_online(x_row, 0, n_cols, BLOCK_SIZE)  # read 1
    _segment_write(x_row, y_ptr + row * y_row_stride, 0, n_cols, m, 1.0 / s, BLOCK_SIZE)  # read 2, write


# %% [markdown]
# ### The launchers
#
# `BLOCK_SIZE` = 4096 elements per chunk with 8 warps: 16 elements per thread, four
# 16-byte loads of fp32 per thread per chunk, enough bytes in flight per SM to cover HBM
# latency. Short rows get a block of `next_power_of_2(N)`.

# %% tags=["hide-input"] summary="The launchers, and the checks of their input"
LOOP_BLOCK = 4096
"""Elements per chunk in the looped kernels (16 per thread at 8 warps)."""
LOOP_WARPS = 8
SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _check_input(x: torch.Tensor) -> None:
    if x.ndim != 2:
        raise ValueError(f"softmax expects a 2-D tensor (rows, cols), got shape {tuple(x.shape)}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"softmax supports {', '.join(map(str, SUPPORTED_DTYPES))}; got {x.dtype}")
    if x.shape[1] == 0:
        raise ValueError(f"softmax over an empty row is undefined (shape {tuple(x.shape)})")
    if x.shape[1] > 1 and x.stride(1) != 1:
        raise ValueError(f"rows must be contiguous (x.stride(1) == 1), got strides {x.stride()}; "
                         "call x.contiguous()")


def _loop_block(n_cols: int, block_size: int | None) -> int:
    return block_size if block_size is not None else min(LOOP_BLOCK, triton.next_power_of_2(n_cols))


def softmax_rowwise(x: torch.Tensor, algorithm: str = "online", block_size: int | None = None) -> torch.Tensor:
    """Softmax over the last dim of ``x`` (M, N; fp32, bf16 or fp16; rows contiguous, any row stride),
    one program per row: ``"online"`` (2 reads + 1 write) or ``"three-pass"`` (3 reads + 1 write), in
    chunks of ``block_size`` (default min(4096, next_power_of_2(N))). Returns (M, N) in x's dtype,
    fp32 inside; an all -inf row gives NaN, as torch does. Raises ValueError or TypeError on bad input."""
    _check_input(x)
    kernels = {"online": softmax_online_kernel, "three-pass": softmax_threepass_kernel}
    if algorithm not in kernels:
        raise ValueError(f"algorithm must be one of {list(kernels)}, got {algorithm!r}")
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M == 0:
        return y
    grid = (M,)  # one program per row
    kernels[algorithm][grid](x, y, x.stride(0), y.stride(0), N,
                             BLOCK_SIZE=_loop_block(N, block_size), num_warps=LOOP_WARPS)
    return y


# %% [markdown]
# ### Version 3: split rows, for few long rows
#
# With 64 rows, one program per row keeps 64 of the 132 SMs busy. To measure *passes*
# and not parallelism, both long-row variants split each row into `splits` segments,
# one program per (row, segment), and each pass is its own launch over the whole matrix:
#
# - three-pass: partial maxima → (global max; partial sums of $e^{x - m}$) → normalise:
#   3 launches, 3 reads + 1 write;
# - online: partial $(m_j, d_j)$ pairs → merge the pairs with the online rule and
#   normalise: 2 launches, 2 reads + 1 write.
#
# The partial arrays are (M, splits) fp32, a few KB: negligible traffic. The normalise
# kernel is shared; `RESCALE` says whether the partial sums still need the merge rule
# (online) or are already relative to the row max (three-pass).

# %% tags=["hide-input"] summary="Version 3's kernels: partial maxima, partial (m, d) pairs, and the shared normalise"
@triton.jit
def partial_max_kernel(x_ptr, pmax_ptr, x_row_stride, n_cols, seg_len, n_splits,
                       BLOCK_SIZE: tl.constexpr):  # elements per chunk
    row = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1)  # segment index
    lo = j * seg_len
    hi = tl.minimum(lo + seg_len, n_cols)
    m = _segment_max(x_ptr + row * x_row_stride, lo, hi, BLOCK_SIZE)
    tl.store(pmax_ptr + row * n_splits + j, m)


@triton.jit
def partial_sumexp_kernel(x_ptr, pmax_ptr, psum_ptr, x_row_stride, n_cols, seg_len, n_splits,
                          BLOCK_SIZE: tl.constexpr,  # elements per chunk
                          SPLITS_P2: tl.constexpr):  # next power of two >= n_splits
    row = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1)
    js = tl.arange(0, SPLITS_P2)  # (SPLITS_P2,)
    pm = tl.load(pmax_ptr + row * n_splits + js, mask=js < n_splits, other=float("-inf"))
    m = tl.max(pm, axis=0)  # the row max, from pass 1's partial maxima
    lo = j * seg_len
    hi = tl.minimum(lo + seg_len, n_cols)
    s = _segment_sumexp(x_ptr + row * x_row_stride, lo, hi, m, BLOCK_SIZE)
    tl.store(psum_ptr + row * n_splits + j, s)


@triton.jit
def partial_online_kernel(x_ptr, pmax_ptr, psum_ptr, x_row_stride, n_cols, seg_len, n_splits,
                          BLOCK_SIZE: tl.constexpr):  # elements per chunk
    row = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1)
    lo = j * seg_len
    hi = tl.minimum(lo + seg_len, n_cols)
    m, s = _segment_online(x_ptr + row * x_row_stride, lo, hi, BLOCK_SIZE)
    tl.store(pmax_ptr + row * n_splits + j, m)
    tl.store(psum_ptr + row * n_splits + j, s)


@triton.jit
def normalize_kernel(x_ptr, y_ptr, pmax_ptr, psum_ptr, x_row_stride, y_row_stride, n_cols, seg_len,
                     n_splits,
                     BLOCK_SIZE: tl.constexpr,  # elements per chunk
                     SPLITS_P2: tl.constexpr,  # next power of two >= n_splits
                     RESCALE: tl.constexpr):  # True: online partials, each sum relative to its own max
    row = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1)
    js = tl.arange(0, SPLITS_P2)  # (SPLITS_P2,)
    pm = tl.load(pmax_ptr + row * n_splits + js, mask=js < n_splits, other=float("-inf"))
    ps = tl.load(psum_ptr + row * n_splits + js, mask=js < n_splits, other=0.0)
    m = tl.max(pm, axis=0)
    if RESCALE:
        m_ref = tl.where(m == float("-inf"), 0.0, m)
        s = tl.sum(ps * tl.exp(pm - m_ref), axis=0)  # the online merge rule
    else:
        s = tl.sum(ps, axis=0)  # three-pass partial sums are already relative to the row max
    lo = j * seg_len
    hi = tl.minimum(lo + seg_len, n_cols)
    _segment_write(x_ptr + row * x_row_stride, y_ptr + row * y_row_stride, lo, hi, m, 1.0 / s, BLOCK_SIZE)



# %% tags=["hide-input"] summary="The split-row launcher: partial (max, sum) per segment, then normalise"
def softmax_split(x: torch.Tensor, algorithm: str = "online", splits: int = 8,
                  block_size: int | None = None) -> torch.Tensor:
    """Softmax over the last dim of ``x`` (M, N; fp32, bf16 or fp16; rows contiguous) with each row split
    over ``splits`` programs: ``"online"`` (2 launches: 2 reads + 1 write) or ``"three-pass"`` (3 launches).
    A segment is a whole number of chunks of ``block_size``, so trailing segments may be empty, which the
    merge handles. Returns (M, N) in x's dtype, fp32 inside. Raises ValueError or TypeError on bad input."""
    _check_input(x)
    if algorithm not in ("online", "three-pass"):
        raise ValueError(f"algorithm must be 'online' or 'three-pass', got {algorithm!r}")
    if splits < 1:
        raise ValueError(f"splits must be >= 1, got {splits}")
    M, N = x.shape
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M == 0:
        return y
    block = _loop_block(N, block_size)
    seg_len = triton.cdiv(triton.cdiv(N, splits), block) * block  # whole chunks per segment
    pmax = torch.empty((M, splits), dtype=torch.float32, device=x.device)  # (M, splits)
    psum = torch.empty((M, splits), dtype=torch.float32, device=x.device)  # (M, splits)
    grid = (M, splits)
    meta = dict(BLOCK_SIZE=block, num_warps=LOOP_WARPS)
    p2 = triton.next_power_of_2(splits)
    if algorithm == "online":
        partial_online_kernel[grid](x, pmax, psum, x.stride(0), N, seg_len, splits, **meta)
    else:
        partial_max_kernel[grid](x, pmax, x.stride(0), N, seg_len, splits, **meta)
        partial_sumexp_kernel[grid](x, pmax, psum, x.stride(0), N, seg_len, splits, SPLITS_P2=p2, **meta)
    normalize_kernel[grid](x, y, pmax, psum, x.stride(0), y.stride(0), N, seg_len, splits,
                           SPLITS_P2=p2, RESCALE=algorithm == "online", **meta)
    return y


# %% [markdown]
# ### Version 4: fused, the row held on chip, on a persistent grid
#
# When a row fits in the registers of one program, load it once, take max and sum from
# registers, and write: 1 read + 1 write, one `exp` per element. `BLOCK_SIZE` is
# `next_power_of_2(N)`, so the kernel is compiled once per power of two.
#
# How big can a row be? An H100/H200 SM has 64 Ki 32-bit registers (256 KB; CUDA C++
# Programming Guide, compute capability 9.0). A 16384-element fp32 row is 64 KB of
# registers for the values alone, so at most 2-3 such programs fit on an SM; 32768 leaves
# room for one; 65536 (256 KB) cannot be held by one SM at all. The fused kernel is
# therefore only offered up to `FUSED_LIMIT` = 32768 elements, and the dispatcher's
# threshold below that is chosen from measurement (section 5).
#
# The grid is *persistent*: compile the kernel once (`warmup`), read its registers per
# thread and shared memory per program, compute how many programs fit on one SM, and
# launch `min(M, NUM_SMS * programs_per_sm)` programs that stride over the rows. Every
# program is resident from the start, so there is no tail of late-scheduled blocks and
# the loop over rows can prefetch the next row (`LOOP_STAGES` software-pipelining stages
# of `tl.range`) while the current one is reduced.

# %%
@triton.jit
def softmax_fused_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, n_rows, n_cols,
                         BLOCK_SIZE: tl.constexpr,  # next_power_of_2(n_cols): the whole row
                         LOOP_STAGES: tl.constexpr):  # pipelining stages of the loop over rows
    pid = tl.program_id(0)
    n_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = cols < n_cols
    for row in tl.range(pid, n_rows, n_programs, num_stages=LOOP_STAGES):  # persistent: stride over rows
        row64 = tl.cast(row, tl.int64)  # row * stride can pass 2^31 on big inputs
        x = tl.load(x_ptr + row64 * x_row_stride + cols, mask=mask, other=float("-inf")).to(tl.float32)
        m = tl.max(x, axis=0)  # scalar row max
        p = tl.exp(x - m)  # (BLOCK_SIZE,) in (0, 1]; masked lanes give 0; an all -inf row gives NaN
        inv_s = 1.0 / tl.sum(p, axis=0)
        y = p * inv_s  # (BLOCK_SIZE,)
        tl.store(y_ptr + row64 * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


# %% tags=["hide-input"] summary="Occupancy, and the fused kernel's launcher"
FUSED_LIMIT = 32768
"""Largest row (elements) the fused kernel accepts: 128 KB of fp32 registers, half an SM's file."""
ELEMENTS_PER_THREAD = 32
"""Fused kernel: row elements held per thread; sets num_warps = BLOCK_SIZE / (32 * this). Tuned in section 4."""
FUSED_LOOP_STAGES = 2
"""Fused kernel: pipelining stages of the loop over rows. Tuned in section 4."""

if interpret_mode():
    # numpy, which runs the interpreter, warns on the overflows the hard-case rows cause on purpose
    # (3e38 - (-3e38) = inf, -inf - -inf = NaN in an all -inf row); the GPU does the same arithmetic silently
    warnings.filterwarnings("ignore", category=RuntimeWarning, module="triton.runtime.interpreter")
    NUM_SMS = 4  # pretend, so that the persistent loop and the dispatcher run their branches on the CPU
    print(f"interpret mode: pretending NUM_SMS = {NUM_SMS}")
else:
    NUM_SMS = PROPS.multi_processor_count


def fused_num_warps(block_size: int, elements_per_thread: int | None = None) -> int:
    """num_warps for a fused row of ``block_size`` elements: block_size / (32 * elements per thread),
    clamped to [1, 32] (32 warps = 1024 threads, the most one block may have)."""
    ept = elements_per_thread or ELEMENTS_PER_THREAD
    return max(1, min(32, block_size // (32 * ept)))


_FUSED_CONFIGS: dict = {}


def fused_config(x: torch.Tensor, y: torch.Tensor, num_warps: int, loop_stages: int) -> dict:
    """Compile the fused kernel for x's dtype and row length and return its occupancy (see
    :func:`worklog_gen.kit.measure.occupancy`) with BLOCK_SIZE, num_warps and loop_stages; cached per configuration.
    ``loop_stages`` comes back lower where the rows it prefetches need more shared memory than one block
    may have on this card (``shared_memory_per_block_optin``: 227 KB on sm_90, 99 KB on sm_86 and sm_89,
    where a prefetched 2^15-element fp32 row, 128 KiB, does not fit)."""
    M, N = x.shape
    block = triton.next_power_of_2(N)
    key = (x.dtype, block, num_warps, loop_stages)
    if key not in _FUSED_CONFIGS:
        for stages in range(loop_stages, 0, -1):  # a 1-stage kernel that does not fit fails at its launch
            kernel = softmax_fused_kernel.warmup(x, y, x.stride(0), y.stride(0), M, N, BLOCK_SIZE=block,
                                                 LOOP_STAGES=stages, num_warps=num_warps, grid=(1,))
            if kernel.metadata.shared <= PROPS.shared_memory_per_block_optin:
                break
        _FUSED_CONFIGS[key] = dict(BLOCK_SIZE=block, num_warps=num_warps, loop_stages=stages,
                                   **occupancy(kernel, num_warps))
    return _FUSED_CONFIGS[key]


def softmax_fused(x: torch.Tensor, num_warps: int | None = None, loop_stages: int | None = None,
                  n_programs: int | None = None) -> torch.Tensor:
    """Softmax over the last dim of ``x`` (M, N <= FUSED_LIMIT; fp32, bf16 or fp16; rows contiguous) with
    each row held on chip: 1 read + 1 write. ``num_warps`` defaults to BLOCK_SIZE / (32 ×
    ELEMENTS_PER_THREAD), ``loop_stages`` to FUSED_LOOP_STAGES (fewer where the card's shared memory needs:
    :func:`fused_config`), the persistent grid ``n_programs`` to
    min(M, NUM_SMS × programs per SM) from the compiled kernel's occupancy. Returns (M, N) in x's
    dtype, fp32 inside. Raises ValueError or TypeError on bad input or N > FUSED_LIMIT."""
    _check_input(x)
    M, N = x.shape
    if N > FUSED_LIMIT:
        raise ValueError(f"fused softmax holds a row on chip: N = {N} > FUSED_LIMIT = {FUSED_LIMIT}")
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if M == 0:
        return y
    block = triton.next_power_of_2(N)
    num_warps = num_warps or fused_num_warps(block)
    loop_stages = loop_stages or FUSED_LOOP_STAGES
    if n_programs is None:
        if interpret_mode():
            n_programs = min(M, NUM_SMS)
        else:
            config = fused_config(x, y, num_warps, loop_stages)
            loop_stages, n_programs = config["loop_stages"], min(M, NUM_SMS * config["programs_per_sm"])
    softmax_fused_kernel[(n_programs,)](x, y, x.stride(0), y.stride(0), M, N, BLOCK_SIZE=block,
                                        LOOP_STAGES=loop_stages, num_warps=num_warps)
    return y


# %% [markdown]
# ### The dispatcher
#
# `softmax(x)` picks by row length: fused when the row fits (`N <= FUSED_MAX_N`), else
# online. Online runs one program per row when there are enough rows to fill the GPU
# (`M >= TARGET_PROGRAMS`, 4 programs per SM), and splits rows otherwise, with enough
# segments to reach `TARGET_PROGRAMS`. `FUSED_MAX_N` starts at 16384 (a 64 KB fp32 row,
# which leaves room for 2+ programs per SM) and is replaced by the measured crossover
# in section 5.

# %% tags=["hide-input"] summary="The dispatcher: choose_path and softmax"
FUSED_MAX_N = 16384
"""Largest N the dispatcher sends to the fused kernel; re-chosen from measurement in section 5."""
TARGET_PROGRAMS = 4 * NUM_SMS
"""Programs the online path aims for: rows alone when M reaches it, else rows x splits."""


def split_count(M: int, N: int, block_size: int | None = None) -> int:
    """Segments per row so that M * splits reaches TARGET_PROGRAMS (a power of two, at most one
    segment per chunk); 1 when M alone reaches it (or there are no rows)."""
    if M == 0 or M >= TARGET_PROGRAMS:
        return 1
    chunks = triton.cdiv(N, _loop_block(N, block_size))
    return min(triton.next_power_of_2(triton.cdiv(TARGET_PROGRAMS, M)), chunks)


def choose_path(M: int, N: int, fused_max_n: int | None = None, block_size: int | None = None) -> tuple[str, int]:
    """The dispatcher's choice for an (M, N) input: (``"fused"`` | ``"online"`` | ``"online split-row"``, splits)."""
    if N <= (fused_max_n or FUSED_MAX_N):
        return "fused", 1
    splits = split_count(M, N, block_size)
    return ("online split-row", splits) if splits > 1 else ("online", 1)


def softmax(x: torch.Tensor, fused_max_n: int | None = None, block_size: int | None = None) -> torch.Tensor:
    """Softmax over the last dim of ``x`` (M, N; fp32, bf16 or fp16; rows contiguous), the kernel chosen
    by row length (:func:`choose_path`; ``fused_max_n`` and ``block_size`` override it, for tests).
    Returns (M, N) in x's dtype, fp32 inside. Raises ValueError or TypeError on bad input."""
    _check_input(x)
    path, splits = choose_path(*x.shape, fused_max_n=fused_max_n, block_size=block_size)
    if path == "fused":
        return softmax_fused(x)
    if path == "online":
        return softmax_rowwise(x, "online", block_size=block_size)
    return softmax_split(x, "online", splits=splits, block_size=block_size)


for shape in [(4096, 1024), (4096, 16384), (4096, 65536), (64, 2**20), (7, 3000)]:
    print(f"dispatch {shape}: {choose_path(*shape)}")

# %% [markdown]
# ## 3. Correctness
#
# Reference: `torch.softmax` in fp64 of the same (dtype-rounded) input. Metric:
# ‖out − ref‖ / ‖ref‖ over the rows that have a softmax. Inputs are random normal logits
# times 4, on irregular shapes, with the first rows replaced by the hard cases:
#
# | row | content | expected |
# |---|---|---|
# | 0 | every third entry `-inf` | zeros there, no NaN |
# | 1 | ±1e30 | no NaN (one-hot at the max) |
# | 2 | ±3e38 (near fp32 max; differences overflow to ∓inf) | no NaN |
# | 3 | first two thirds `-inf` (whole segments of a split row) | no NaN |
# | 4 | logits + 1000 | no NaN (naive softmax overflows) |
# | 5 | logits − 1000 | no NaN (naive softmax underflows) |
# | 6 | all `-inf` | NaN everywhere, as torch |

# %% tags=["hide-input", "hide-output"] summary="The hard rows, the shapes, and every variant checked against float64"
def make_logits(M: int, N: int, dtype: torch.dtype, device: str, seed: int = 0, special: bool = True) -> torch.Tensor:
    """(M, N) random normal logits * 4 in ``dtype`` on ``device``; with ``special``, the first
    min(M, 7) rows are the hard cases of the table above."""
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(M, N, generator=g, device=device) * 4  # (M, N) fp32
    if special:
        sign = torch.where(torch.rand(N, generator=g, device=device) < 0.5, -1.0, 1.0)
        cases = [
            lambda r: r.index_fill(0, torch.arange(0, N, 3, device=device), float("-inf")),
            lambda r: sign * 1e30 * torch.rand(N, generator=g, device=device),
            lambda r: sign * 3e38 * torch.rand(N, generator=g, device=device),
            lambda r: r.index_fill(0, torch.arange(0, 2 * N // 3, device=device), float("-inf")),
            lambda r: r + 1000,
            lambda r: r - 1000,
            lambda r: torch.full_like(r, float("-inf")),
        ]
        for i, case in enumerate(cases[:M]):
            x[i] = case(x[i])
    return x.to(dtype)


def check(name: str, out: torch.Tensor, x: torch.Tensor, tol: float) -> dict:
    """Compare ``out`` with fp64 torch.softmax of ``x``; assert; return a result row."""
    ref = torch.softmax(x.double(), dim=-1)  # (M, N) fp64
    undefined = torch.isinf(x).all(dim=-1) & (x < 0).all(dim=-1)  # (M,) all -inf rows
    assert out.shape == x.shape and out.dtype == x.dtype, f"{name}: got {out.shape} {out.dtype}"
    assert torch.isnan(ref[undefined]).all(), "torch.softmax of an all -inf row should be NaN"
    assert torch.isnan(out[undefined]).all(), f"{name}: an all -inf row should give NaN, as torch does"
    ok = ~undefined
    out64, ref64 = out[ok].double(), ref[ok]
    assert not torch.isnan(out64).any(), f"{name}: NaN in rows that have a softmax"
    err = ((out64 - ref64).norm() / ref64.norm()).item()
    M, N = x.shape
    assert err < tol, f"{name}: relative error {err:.3e} >= {tol:.0e} on {M}x{N} {x.dtype}"
    return dict(variant=name, dtype=str(x.dtype).removeprefix("torch."), M=M, N=N, rel_err=err, tol=tol)


TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2}  # bf16 output rounding is 2^-9 per element


def variants(splits: int, block_size: int | None, fused: bool) -> dict:
    """Every softmax of this notebook as name -> callable(x), at a given chunk size and split."""
    return {"three-pass": lambda x: softmax_rowwise(x, "three-pass", block_size=block_size),
            "online": lambda x: softmax_rowwise(x, "online", block_size=block_size),
            f"three-pass split-row (splits={splits})": lambda x: softmax_split(x, "three-pass", splits, block_size),
            f"online split-row (splits={splits})": lambda x: softmax_split(x, "online", splits, block_size),
            "dispatcher (small threshold)": lambda x: softmax(x, fused_max_n=256, block_size=block_size),
            "dispatcher": softmax, **({"fused": softmax_fused} if fused else {})}


results = []
if interpret_mode():
    # small irregular shapes; small chunks so that every loop runs several iterations;
    # splits=8 on 3000 columns leaves the last segments empty
    cases = [((37, 781), torch.float32, 4, 128), ((7, 3000), torch.float32, 4, 256),
             ((7, 3000), torch.float32, 8, 256)]
else:
    cases = [((1823, 781), torch.float32, 4, None), ((1823, 781), torch.float32, 4, 128),
             ((1823, 781), torch.bfloat16, 4, None), ((7, 3000), torch.float32, 8, 256),
             ((129, 20000), torch.float32, 4, None), ((129, 20000), torch.bfloat16, 4, None),
             ((7, 100003), torch.float32, 16, None), ((7, 100003), torch.bfloat16, 16, None)]
for (M, N), dtype, splits, block in cases:
    x = make_logits(M, N, dtype, DEVICE, seed=M + N)
    for name, fn in variants(splits, block, fused=N <= FUSED_LIMIT).items():
        results.append(check(name, fn(x), x, TOL[dtype]))

x = make_logits(37, 1000, torch.float32, DEVICE, seed=1)[:, 100:881]  # a column slice: (37, 781), row stride 1000
results += [check("online, row stride 1000", softmax_rowwise(x, "online", block_size=128), x, TOL[torch.float32]),
            check("fused, row stride 1000", softmax_fused(x), x, TOL[torch.float32])]
x = make_logits(5, 1, torch.float32, DEVICE, special=False)  # a single column
assert torch.equal(softmax(x), torch.ones_like(x)), "softmax of one column is 1"
save_data("correctness.csv", results)
worst = {}  # the worst error of each variant and dtype, over every shape
for r in results:
    worst[r["variant"].split(" (")[0], r["dtype"]] = max(worst.get((r["variant"].split(" (")[0], r["dtype"]), 0), r["rel_err"])
dtypes = sorted({d for _, d in worst})
display(table([{"variant": v, **{d: worst.get((v, d)) for d in dtypes}} for v in dict.fromkeys(k[0] for k in worst)],
              ["variant", *dtypes], formats={d: ".1e" for d in dtypes}, caption=f"{len(results)} checks passed: worst "
              "relative error against float64 torch.softmax, over every shape (hard rows included)"))

# %% [markdown]
# ## 4. Tuning the fused kernel at the headline shape
#
# Two knobs matter for a row held in registers: elements per thread (which sets
# `num_warps`, and with it registers per program and programs per SM) and the pipelining
# stages of the loop over rows (a prefetched row costs shared memory, which also limits
# programs per SM). A small sweep at 4096×16384 fp32 shows the occupancy each choice gets
# and its bandwidth; the best one is used for every fused launch below. It is chosen at
# the headline shape, so the headline figure is the tuned one; the sweep in section 5 shows
# how the choice carries to other row lengths.

# %% tags=["hide-input"] summary="Tune the fused kernel: elements per thread and loop stages"
if interpret_mode():
    print("interpret mode: tuning skipped")
else:
    x = make_logits(4096, 16384, torch.float32, DEVICE, special=False)
    y = torch.empty_like(x)
    ref = torch.softmax(x, dim=-1)
    tuning = []
    for ept in (16, 32, 64):
        for stages in (1, 2):
            nw = fused_num_warps(16384, ept)
            cfg = fused_config(x, y, nw, stages)
            out = softmax_fused(x, num_warps=nw, loop_stages=stages)
            err = ((out - ref).norm() / ref.norm()).item()
            assert err < TOL[torch.float32], f"fused num_warps={nw} stages={stages}: rel err {err:.2e}"
            t = bench(lambda: softmax_fused(x, num_warps=nw, loop_stages=stages))
            row = dict(elements_per_thread=ept, **cfg, ms=t.ms, gbps=gbps(2 * x.numel() * 4, t.ms))
            tuning.append(row)
    save_data("tuning_fused.csv", tuning)
    display(table(tuning, {"elements_per_thread": "elements/thread", "num_warps": "warps", "loop_stages": "stages",
                           "n_regs": "registers", "n_spills": "spills", "programs_per_sm": "programs/SM",
                           "limited_by": "limited by", "gbps": "GB/s"}, formats={"gbps": ".0f"}))
    best = max(tuning, key=lambda r: r["gbps"])
    ELEMENTS_PER_THREAD, FUSED_LOOP_STAGES = best["elements_per_thread"], best["loop_stages"]
    print(f"chosen: {ELEMENTS_PER_THREAD} elements per thread (num_warps {best['num_warps']} at 16384), "
          f"{FUSED_LOOP_STAGES} loop stages: {best['gbps']:.0f} GB/s = {best['gbps'] / ceilings.copy_gbps:.0%} of copy")
    del x, y, ref, out

# %% [markdown]
# ## 5. Benchmarks
#
# Every provider runs in the same process on the same input: the four Triton variants,
# `torch.softmax`, and `torch.compile(torch.softmax)` (compiled once per shape, outside the
# timing, with `dynamic=False` so each shape gets its own specialised kernel). Each output
# is checked against `torch.softmax` before it is timed. Times are `do_bench` medians with
# 20th/80th percentiles (the bands); GB/s count the compulsory bytes, one read and one
# write of the matrix.

# %% tags=["hide-input"] summary="The sweeps: every provider at every N, checked, then timed"
def torch_softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def compiled_softmax(x: torch.Tensor):
    """torch.compile(torch_softmax) specialised to x's shape and dtype, compiled by one call."""
    torch._dynamo.reset()  # a fresh cache per shape: no recompile limit, no dynamic-shape kernel
    fn = torch.compile(torch_softmax, dynamic=False)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(x)
    # For long rows Inductor splits the reduction across programs and then drops its own
    # online-softmax lowering, and says so in a UserWarning. Report it as a fact of this shape.
    for w in caught:
        if "Online softmax is disabled" in str(w.message):
            print(f"  torch.compile at {tuple(x.shape)}: Inductor split the reduction and fell back from online softmax")
        else:
            warnings.warn(w.message, w.category)  # anything else is shown as usual
    torch.cuda.synchronize()
    return fn, time.perf_counter() - t0


def run_sweep(sweep: str, M: int, Ns: list[int], dtype: torch.dtype, providers) -> list[dict]:
    """Time every provider at (M, N) for N in Ns; ``providers(x)`` gives name -> callable or None."""
    rows = []
    for N in Ns:
        x = make_logits(M, N, dtype, DEVICE, seed=N, special=False)
        ref = torch_softmax(x).float()
        fns = {k: f for k, f in providers(x).items() if f is not None}
        compiled, compile_s = compiled_softmax(x)
        fns["torch.compile"] = lambda: compiled(x)
        nbytes = 2 * x.numel() * x.element_size()  # compulsory: one read + one write
        for name, fn in fns.items():
            out = fn().float()
            err = ((out - ref).norm() / ref.norm()).item()
            assert err < TOL[dtype], f"{sweep} {name} N={N}: rel err {err:.2e} against torch.softmax"
            del out
            t = bench(fn)
            rows.append(dict(sweep=sweep, provider=name, dtype=str(dtype).removeprefix("torch."), M=M, N=N,
                             ms=t.ms, ms_lo=t.ms_lo, ms_hi=t.ms_hi, gbps=gbps(nbytes, t.ms),
                             gbps_lo=gbps(nbytes, t.ms_hi), gbps_hi=gbps(nbytes, t.ms_lo)))
        del x, ref, fns, compiled
        torch.cuda.empty_cache()
    return rows


def row_providers(x: torch.Tensor, three_pass: bool = True) -> dict:
    N = x.shape[1]
    return {
        "fused": (lambda: softmax_fused(x)) if N <= FUSED_LIMIT else None,
        "online": lambda: softmax_rowwise(x, "online"),
        "three-pass": (lambda: softmax_rowwise(x, "three-pass")) if three_pass else None,
        "torch.softmax": lambda: torch_softmax(x),
    }


bench_rows = []
if interpret_mode():
    print("interpret mode: benchmarks skipped")
else:
    Ns = [2**k for k in range(8, 17)]  # 256 ... 65536
    bench_rows += run_sweep("fp32 M=4096", 4096, Ns, torch.float32, row_providers)
    bench_rows += run_sweep("bf16 M=4096", 4096, Ns[::2], torch.bfloat16,
                            lambda x: row_providers(x, three_pass=False))

# %% [markdown]
# Long rows: M = 64, N = $2^{16}$ … $2^{20}$, past the fused limit; the matrix grows from a
# quarter of the L2 to four times it. Both split-row variants use the dispatcher's split count; "online, 1 program/row" shows what splitting
# buys.

# %% tags=["hide-input"] summary="The long-row sweep"
def long_row_providers(x: torch.Tensor) -> dict:
    splits = split_count(*x.shape)
    return {
        "online split-row": lambda: softmax_split(x, "online", splits),
        "three-pass split-row": lambda: softmax_split(x, "three-pass", splits),
        "online, 1 program/row": lambda: softmax_rowwise(x, "online"),
        "torch.softmax": lambda: torch_softmax(x),
    }


if not interpret_mode():
    bench_rows += run_sweep("fp32 M=64", 64, [2**k for k in range(16, 21)], torch.float32, long_row_providers)
    print(f"split count at 64 x 2^20: {split_count(64, 2**20)} segments per row, "
          f"{64 * split_count(64, 2**20)} programs per launch")
    save_data("benchmark.csv", bench_rows)

# %% [markdown]
# ### The dispatch threshold, from measurement
#
# `FUSED_MAX_N` becomes the largest N (fp32, M = 4096) at which the fused kernel is at
# least as fast as the one-program-per-row online kernel. Small sizes are launch-bound and
# noisy, so the decision rests on the crossover at large N, not on the first loss.

# %% tags=["hide-input"] summary="The threshold, from the sweep"
def rate(sweep: str, provider: str, N: int, key: str = "gbps") -> float:
    (row,) = [r for r in bench_rows if r["sweep"] == sweep and r["provider"] == provider and r["N"] == N]
    return row[key]


if not interpret_mode():
    fused_Ns = sorted(r["N"] for r in bench_rows if r["sweep"] == "fp32 M=4096" and r["provider"] == "fused")
    ratios = {N: rate("fp32 M=4096", "fused", N) / rate("fp32 M=4096", "online", N) for N in fused_Ns}
    FUSED_MAX_N = max((N for N, r in ratios.items() if r >= 1), default=FUSED_MAX_N)
    display(table([{"N": N, "fused / online": r} for N, r in ratios.items()], formats={"fused / online": ".2f"}))
    print(f"FUSED_MAX_N = {FUSED_MAX_N}: the largest measured N where fused is at least as fast as online; "
          f"the dispatcher sends rows up to {FUSED_MAX_N} elements to the fused kernel")

# %% [markdown]
# ### Headline figures
#
# The dispatcher (`softmax`) against `torch.softmax` at 4096×16384, timed back to back,
# and the long-row online/three-pass speedup at 64×$2^{20}$ from the sweep above.

# %% tags=["hide-input"] summary="The headlines at 4096 \u00d7 16384, and on long rows"
if interpret_mode():
    print("interpret mode: headline figures skipped")
else:
    head = {}
    for dtype in (torch.float32, torch.bfloat16):
        x = make_logits(4096, 16384, dtype, DEVICE, seed=7, special=False)
        ref = torch_softmax(x).float()
        out = softmax(x).float()
        assert ((out - ref).norm() / ref.norm()).item() < TOL[dtype]
        ours, theirs = bench(lambda: softmax(x)), bench(lambda: torch_softmax(x))
        nbytes = 2 * x.numel() * x.element_size()
        head[dtype] = dict(ours=ours, torch=theirs, nbytes=nbytes, path=choose_path(4096, 16384)[0])
        del x, ref, out
    f32, b16 = head[torch.float32], head[torch.bfloat16]
    headline("fp32_4096x16384_vs_torch", f32["torch"].ms / f32["ours"].ms, "x",
             "torch.softmax time / this notebook's softmax time, fp32 4096x16384, do_bench medians",
             label="Softmax, fp32, 4096 × 16384", goal=1.0, baseline="torch.softmax, same run")
    headline("fp32_4096x16384_frac_copy", gbps(f32["nbytes"], f32["ours"].ms) / ceilings.copy_gbps, "fraction",
             "softmax GB/s (one read + one write) / measured copy GB/s, fp32 4096x16384",
             label="Softmax, fraction of the copy roof", goal=0.85, baseline="a device copy, measured")
    headline("bf16_4096x16384_vs_torch", b16["torch"].ms / b16["ours"].ms, "x",
             "torch.softmax time / this notebook's softmax time, bf16 4096x16384, do_bench medians",
             label="Softmax, bf16, 4096 × 16384", goal=1.0, baseline="torch.softmax, same run")
    headline("online_vs_threepass_long_rows",
             rate("fp32 M=64", "three-pass split-row", 2**20, "ms") / rate("fp32 M=64", "online split-row", 2**20, "ms"),
             "x", "three-pass split-row time / online split-row time, fp32 64x2^20 (256 MiB, > L2)",
             label="Online over three-pass, 64 rows of 2^20", goal=4 / 3,
             baseline="three-pass split-row (predicted 4/3 from the pass count)")
    display(table([{"dtype": str(d).removeprefix("torch."), "path": h["path"], "softmax µs": h["ours"].ms * 1e3,
                    "torch.softmax µs": h["torch"].ms * 1e3, "softmax GB/s": gbps(h["nbytes"], h["ours"].ms)}
                   for d, h in head.items()], formats={"softmax µs": ".1f", "torch.softmax µs": ".1f",
                                                       "softmax GB/s": ".0f"}))
    save_data("headline_timings.csv", [
        dict(dtype=str(d).removeprefix("torch."), provider=p, ms=h[p].ms, ms_lo=h[p].ms_lo, ms_hi=h[p].ms_hi,
             gbps=gbps(h["nbytes"], h[p].ms)) for d, h in head.items() for p in ("ours", "torch")])

# %% [markdown]
# ### The sweeps: fp32 and bf16 with 4096 rows, and 64 long rows

# %% tags=["hide-input", "hide-output"] summary="Plot the three sweeps"
def sweep_plot(sweep: str, title: str):
    return benchmark_chart([r for r in bench_rows if r["sweep"] == sweep], x="N", y="gbps", y_lo="gbps_lo",
                           y_hi="gbps_hi", xlabel="N (row length, elements)",
                           ylabel="GB/s (one read + one write)", title=title,
                           rules=[(ceilings.copy_gbps, f"copy {ceilings.copy_gbps:,.0f} GB/s")])


if not interpret_mode():
    display(sweep_plot("fp32 M=4096", f"Softmax fp32, M = 4096, {ceilings.device}"))
    display(sweep_plot("bf16 M=4096", f"Softmax bf16 (fp32 inside), M = 4096, {ceilings.device}"))
    display(sweep_plot("fp32 M=64", f"Softmax fp32, M = 64 long rows, {ceilings.device}"))

# %% [markdown]
# ## 6. Roofline
#
# Every variant at the headline shapes, on compulsory bytes: all sit at 5/8 FLOP/byte
# (fp32) or 5/4 (bf16), far left of the ridge point, so the only roof they can touch is
# the memory slope; the vertical gap below it is the extra traffic (or latency) of each
# algorithm.

# %% tags=["hide-input"] summary="Roofline points"
if not interpret_mode():
    points = []
    for sweep, N, esize, providers in [
        ("fp32 M=4096", 16384, 4, ("fused", "online", "three-pass", "torch.softmax", "torch.compile")),
        ("bf16 M=4096", 16384, 2, ("fused", "online", "torch.softmax", "torch.compile")),
        ("fp32 M=64", 2**20, 4, ("online split-row", "three-pass split-row", "online, 1 program/row",
                                 "torch.softmax", "torch.compile")),
    ]:
        (M,) = {r["M"] for r in bench_rows if r["sweep"] == sweep}
        for p in providers:
            (r,) = [r for r in bench_rows if r["sweep"] == sweep and r["provider"] == p and r["N"] == N]
            points.append(RooflinePoint(label=f"{p} {sweep.split()[0]} {M}x{N}", flops=FLOPS_PER_ELEMENT * M * N,
                                        nbytes=2 * M * N * esize, ms=r["ms"], roof="fp32", topic=TOPIC,
                                        ms_lo=r["ms_lo"], ms_hi=r["ms_hi"], size=f"{M}x{N}", dtype=sweep.split()[0]))
    save_roofline(points, ceilings)
    display(roofline_chart(points, ceilings, roofs=("fp32",), title=f"Softmax roofline, {ceilings.device}"))

# %% [markdown]
# ## 7. Interpretation
#
# The numbers below are computed from this run. For the one-program-per-row kernels the
# question is where their re-reads come from, so the cell first works out how many bytes of
# rows are in flight at once: programs per SM (from the compiled online kernel's
# registers and shared memory) × SMs × row bytes, against the L2 size.

# %% tags=["hide-input"] summary="The numbers of this run"
def verdict(measured: float, bound: float) -> str:
    return "above the HBM-only bound: part of the re-reads hit L2" if measured > bound else "at or below the HBM-only bound"


if interpret_mode():
    display(prose("Interpret mode: the kernels were checked; nothing was timed."))
else:
    copy, s, b, L = ceilings.copy_gbps, "fp32 M=4096", "bf16 M=4096", "fp32 M=64"
    display(table([{"provider": p, "GB/s": rate(s, p, 16384), "of copy": rate(s, p, 16384) / copy,
                    "µs": rate(s, p, 16384, "ms") * 1e3} for p in ("fused", "online", "three-pass", "torch.softmax",
                                                                   "torch.compile")],
                  formats={"GB/s": ".0f", "of copy": ".0%", "µs": ".1f"}, caption="4096 × 16384, fp32"))
    cfg = fused_config(torch.empty((1, 16384), device=DEVICE), torch.empty((1, 16384), device=DEVICE),
                       fused_num_warps(16384), FUSED_LOOP_STAGES)
    probe = torch.empty((1, 16384), device=DEVICE)
    online_occ = occupancy(softmax_online_kernel.warmup(probe, probe, 16384, 16384, 16384, BLOCK_SIZE=LOOP_BLOCK,
                                                        num_warps=LOOP_WARPS, grid=(1,)), LOOP_WARPS)
    in_flight = NUM_SMS * online_occ["programs_per_sm"] * 16384 * 4
    predicted = PREDICTION[("fp32 64x2^20", "three-pass")] / PREDICTION[("fp32 64x2^20", "online")]
    long_rows = [f"2^{int(math.log2(N))} ({64 * N * 4 / L2_BYTES:.1f}× L2): "
                 f"{rate(L, 'three-pass split-row', N, 'ms') / rate(L, 'online split-row', N, 'ms'):.2f}×"
                 for N in sorted({r["N"] for r in bench_rows if r["sweep"] == L})]
    frac = rate(L, "online split-row", 2**20) / copy
    display(prose(
        f"- **fp32, 4096 × 16384** (predicted: fused at about the copy rate, "
        f"{PREDICTION[('fp32 4096x16384', 'fused')] * 1e3:.0f} µs): the fused kernel runs {cfg['num_warps']} warps, "
        f"{cfg['n_regs']} registers a thread, {cfg['n_spills']} spills, {cfg['programs_per_sm']} rows per SM "
        f"(limited by {cfg['limited_by']}); {rate(s, 'fused', 16384) / rate(s, 'torch.softmax', 16384):.2f}× "
        f"torch.softmax, {rate(s, 'fused', 16384) / rate(s, 'torch.compile', 16384):.2f}× torch.compile.\n"
        f"- **Online, one program per row:** {online_occ['programs_per_sm']} programs per SM (limited by "
        f"{online_occ['limited_by']}), {in_flight / 2**20:.0f} MiB of rows in flight against {L2_BYTES / 2**20:.0f} MiB "
        f"of L2. Online {rate(s, 'online', 16384) / copy:.0%} of copy, {verdict(rate(s, 'online', 16384) / copy, 2 / 3)} "
        f"(67 %); three-pass {rate(s, 'three-pass', 16384) / copy:.0%}, "
        f"{verdict(rate(s, 'three-pass', 16384) / copy, 1 / 2)} (50 %).\n"
        f"- **Small rows:** at N = 256 (4 MiB) fused {rate(s, 'fused', 256, 'ms') * 1e3:.1f} µs, torch.softmax "
        f"{rate(s, 'torch.softmax', 256, 'ms') * 1e3:.1f} µs, against a copy floor of "
        f"{2 * 4096 * 256 * 4 / (copy * 1e9) * 1e6:.1f} µs. The dispatcher sends rows up to {FUSED_MAX_N} to the fused kernel.\n"
        f"- **bf16, 4096 × 16384:** fused {rate(b, 'fused', 16384):.0f} GB/s, {rate(b, 'fused', 16384) / copy:.0%} of copy; "
        f"{rate(b, 'fused', 16384) / rate(b, 'torch.softmax', 16384):.2f}× torch.softmax, "
        f"{rate(b, 'fused', 16384) / rate(b, 'torch.compile', 16384):.2f}× torch.compile.\n"
        f"- **Long rows,** online split-row over three-pass split-row (predicted {predicted:.2f}× once the matrix is "
        f"well past L2): {'; '.join(long_rows)}. At 2^20 online split-row reaches {frac:.0%} of copy, "
        f"{verdict(frac, 2 / 3)}; torch.softmax {rate(L, 'torch.softmax', 2**20) / copy:.0%}, torch.compile "
        f"{rate(L, 'torch.compile', 2**20) / copy:.0%}."))

# %% [markdown]
# **What the numbers mean.**
#
# - *Fused vs copy.* The fused kernel reads each element once and writes it once, as a copy
#   does, so its ceiling is the copy bandwidth. What it can lose is latency: between loading a
#   row and storing it a program does two block-wide reductions with no loads in flight.
#   Several programs per SM, and the loop over rows that fetches the next row during the
#   reductions, cover that gap.
# - *Online and three-pass at M = 4096.* Each program re-reads a row it touched microseconds
#   earlier; when the rows in flight fit in L2, the re-reads are L2 hits and the pass count hides.
# - *Long rows.* Each pass is a launch over the whole matrix. Once the matrix is several times
#   the L2, the second and third reads come from HBM and online approaches 4/3 of three-pass.
#   Splitting rows is what lets either algorithm use every SM with only 64 rows.
# - *Where fused stops.* The longer the row held in registers, the fewer programs fit per SM
#   and the less latency is hidden; past the measured threshold online, whose second read can
#   come from L2, is the better choice.
#
# **Next:** [FlashAttention](flash-attention.md) carries the same running max and sum through
# attention, whose rows of scores are never written at all, rescaling the output with the sum.
