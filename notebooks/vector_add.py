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
#     compute_capability: '8.0'  # bf16 (HALF on a GPU) needs sm_80; the kernel is portable
#     memory_gib: 8  # 2^28-element fp32 x, y and outputs: 1 GiB each, about 4 GiB live; doubled
# ---

# %% [markdown]
# # Vector addition: the memory roof, and how to leave it
#
# `out = x + y` over `n` elements is the smallest kernel worth measuring. It does one
# FLOP per element and moves twelve bytes per element (fp32: two 4-byte reads, one
# 4-byte write), so its speed says nothing about arithmetic and everything about how
# well a kernel keeps HBM busy: it measures the memory roof every later kernel is judged
# against.
#
# You will learn:
#
# - how to predict a memory-bound kernel's time from the measured copy bandwidth, and how
#   close a masked Triton kernel and `torch.add` come to it;
# - why a CUDA kernel that loads one element per thread falls short, and what 16-byte loads
#   change (Little's law: bytes in flight);
# - where small sizes stop getting faster, and why;
# - where a kernel leaves the memory roof for the compute roof: the ridge point, measured.

# %% tags=["hide-input"] summary="Imports and settings"
import dataclasses
import math
import re

import torch
import triton
import triton.language as tl
from IPython.display import display

from worklog_gen.kit.cuda import compile_cuda, show_source
from worklog_gen.kit.markdown import prose, table
from worklog_gen.kit.measure import bench, gbps, gpu_info, measure_ceilings, tflops
from worklog_gen.kit.notebook import headline, interpret_mode, save_data
from worklog_gen.kit.charts import benchmark_chart, roofline_chart
from worklog_gen.kit.roofline import RooflinePoint, save_roofline

TOPIC = "vector-add"
GPU = not interpret_mode()
DEVICE = "cuda" if GPU else "cpu"
# The Triton interpreter runs on numpy, which has no bfloat16: CPU mode checks fp16 instead.
HALF = torch.bfloat16 if GPU else torch.float16
DTYPE_NAME = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}

# Benchmark sizes in elements. 2^28 fp32 is 1 GiB per tensor, far beyond an H100's 50 MB or H200's 60 MB L2,
# so the large sizes stream from HBM.
SIZES = [2**k for k in range(12, 29)]
LARGE = SIZES[-1]
LARGE_LABEL = f"2^{LARGE.bit_length() - 1}"
# Correctness sizes: none is a multiple of a BLOCK_SIZE or of a 16-byte vector.
CHECK_SIZES = [1, 127, 1025, 98_431]

torch.manual_seed(0)
print(f"mode: {'GPU' if GPU else 'CPU (TRITON_INTERPRET=1)'}; device {DEVICE}; half precision {DTYPE_NAME[HALF]}")


# %% [markdown]
# ## 1. Napkin math, and the prediction
#
# Per element: 1 FLOP (the add), 2 reads and 1 write. The fewest bytes any kernel can
# move are these compulsory ones, `3 · n · sizeof(dtype)`, so the arithmetic intensity is
# 1/12 FLOP/byte in fp32 (1/6 in bf16). A GPU's ridge point, where its memory roof meets
# its compute roof, lies near 10–20 FLOP/byte, two orders of magnitude to the right: the
# add units will idle, and the floor time is bytes ÷ bandwidth.
#
# Which bandwidth? We use the *measured* device-to-device copy (`measure_ceilings`), the
# best rate a plain streaming kernel reaches on this GPU, not the datasheet figure that no
# kernel reaches. A copy moves 2 streams (read + write) and an add 3 (2 reads + write);
# Section 9 asks whether that difference matters.

# %% tags=["hide-input"] summary="Bytes, FLOPs, the measured roofs and the floor time"
def add_traffic(n: int, dtype: torch.dtype) -> tuple[int, int]:
    """FLOPs and compulsory bytes of ``out = x + y`` over ``n`` elements of ``dtype``:
    n adds; 2 reads and 1 write of ``dtype.itemsize`` bytes each per element."""
    return n, 3 * n * dtype.itemsize


flops_large, bytes_large = add_traffic(LARGE, torch.float32)
print(
    f"n = {LARGE_LABEL} fp32: {flops_large:.3g} FLOP, {bytes_large / 1e9:.2f} GB moved, "
    f"arithmetic intensity {flops_large / bytes_large:.4f} FLOP/byte"
)

if GPU:
    print(gpu_info())
    ceilings = measure_ceilings()
    save_data("ceilings", ceilings.to_dict())
    print(ceilings)
    ridge_expected = ceilings.ridge_point("fp32")  # fp32 roof (datasheet) / measured copy bandwidth
    floor_ms = bytes_large / (ceilings.copy_gbps * 1e9) * 1e3  # bytes / (bytes/s) -> s -> ms
    compute_ms = flops_large / (ceilings.fp32_tflops * 1e12) * 1e3
    print(f"measured copy bandwidth: {ceilings.copy_gbps:.0f} GB/s (read + write)")
    print(f"fp32 ridge point ({ceilings.fp32_tflops:.0f} TFLOP/s / copy): {ridge_expected:.1f} FLOP/byte, "
          f"{ridge_expected / (flops_large / bytes_large):.0f}x the add's intensity")
    print(f"floor time at {LARGE_LABEL} fp32 from the copy bandwidth: {floor_ms:.3f} ms; the FLOPs alone would take {compute_ms:.4f} ms")
else:
    ceilings = None
    print("CPU mode: ceilings not measured, times not predicted (no GPU)")

# %% [markdown]
# **Prediction, written before measuring.**
#
# * At 2^28 elements `torch.add` and a well-configured Triton kernel both run within a few
#   percent of the copy bandwidth, i.e. close to the floor time printed above. Neither can
#   beat the other by much: there is nothing to optimise but the memory stream.
# * The one-element-per-thread CUDA kernel falls clearly short. Each thread has one 4-byte
#   load of `x` and one of `y` in flight, and by Little's law (bytes in flight = bandwidth ×
#   latency) the whole GPU then holds too few bytes in flight to cover the HBM latency.
#   16-byte loads quadruple the bytes in flight per thread and should close most of the gap.
# * At small sizes the time stops shrinking: a launch costs a few microseconds of fixed
#   work (scheduling the grid, the first round trip to memory, draining the writes) whatever
#   the size. We guess 3 µs below and compute where bandwidth should reach half its plateau.

# %%
ASSUMED_FIXED_US = 3.0  # guess before measuring: fixed cost of one small kernel, µs
if GPU:
    # Latency-bandwidth model: t(n) = t0 + bytes(n) / BW. Half the plateau bandwidth at bytes = t0 * BW.
    n_half_predicted = ASSUMED_FIXED_US * 1e-6 * ceilings.copy_gbps * 1e9 / 12
    print(f"predicted half-bandwidth size (fp32): about {n_half_predicted:,.0f} elements (2^{math.log2(n_half_predicted):.1f})")

# %% [markdown]
# ## 2. The Triton kernel
#
# One program handles `BLOCK_SIZE` consecutive elements. The last program runs past `n`,
# so loads and stores are masked. Offsets are 32-bit, which is fine below 2^31 elements.

# %%
@triton.jit
def add_kernel(
    x_ptr,  # pointer to x[0]; x is (n,) and contiguous
    y_ptr,  # pointer to y[0]; (n,)
    out_ptr,  # pointer to out[0]; (n,)
    n,  # number of elements
    BLOCK_SIZE: tl.constexpr,  # elements per program, a power of two
):
    pid = tl.program_id(axis=0)  # which block of BLOCK_SIZE elements
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = offsets < n  # (BLOCK_SIZE,) False past the end
    x = tl.load(x_ptr + offsets, mask=mask)  # (BLOCK_SIZE,)
    y = tl.load(y_ptr + offsets, mask=mask)  # (BLOCK_SIZE,)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def triton_add(x: torch.Tensor, y: torch.Tensor, *, BLOCK_SIZE: int = 1024, num_warps: int = 4) -> torch.Tensor:
    """``x + y`` with :func:`add_kernel`.

    Args:
        x, y: tensors of the same shape, dtype and device, contiguous.
        BLOCK_SIZE: elements per program (a power of two).
        num_warps: warps per program; each thread holds BLOCK_SIZE / (32 * num_warps) elements.

    Returns:
        A new tensor like ``x``.

    Raises:
        ValueError: shapes, dtypes or devices differ, or an input is not contiguous.
    """
    if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(f"x and y differ: {x.shape} {x.dtype} {x.device} vs {y.shape} {y.dtype} {y.device}")
    if not (x.is_contiguous() and y.is_contiguous()):
        raise ValueError("x and y must be contiguous")
    out = torch.empty_like(x)
    n = x.numel()
    if n:
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=num_warps)
    return out


# %% [markdown]
# ## 3. Correctness
#
# One rounding per element, so the result must equal `torch.add` bit for bit in every
# dtype (`torch.add` in bf16 adds in fp32 and rounds once; the exact sum of two bf16 values
# rounded to fp32 and then to bf16 gives the same bits as one rounding, because fp32 has
# more than twice bf16's precision). We also report ‖out − ref‖ / ‖ref‖ against a float64
# reference, which is 0 for fp32 only when the fp32 sums are exact.

# %% tags=["hide-input", "hide-output"] summary="Check every kernel bit for bit against torch.add"
def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖₂ / ‖ref‖₂, computed in float64."""
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def check_add(fn, name: str, sizes, dtypes) -> dict:
    """Assert ``fn(x, y)`` equals ``torch.add(x, y)`` bit for bit on random normal inputs; one
    row for the table: the sizes checked and the largest error against float64."""
    worst = 0.0
    for dtype in dtypes:
        for n in sizes:
            x = torch.randn(n, device=DEVICE, dtype=dtype)
            y = torch.randn(n, device=DEVICE, dtype=dtype)
            out = fn(x, y)
            assert torch.equal(out, torch.add(x, y)), f"{name} differs from torch.add at n={n} {DTYPE_NAME[dtype]}"
            worst = max(worst, rel_err(out, x.double() + y.double()))
    return {"kernel": name, "dtypes": ", ".join(DTYPE_NAME[d] for d in dtypes),
            "sizes": ", ".join(f"{n:,}" for n in sizes), "equal to torch.add": "yes", "worst error vs float64": worst}


checks = [check_add(triton_add, "triton", CHECK_SIZES, (torch.float32, HALF))]
for bs in (128, 4096):  # 769 small programs, or 25 large ones; the last one ragged either way
    checks.append(check_add(lambda x, y, bs=bs: triton_add(x, y, BLOCK_SIZE=bs), f"triton BLOCK_SIZE={bs}",
                            CHECK_SIZES[-1:], (torch.float32,)))
display(table(checks, formats={"worst error vs float64": ".1e"}))

# %% [markdown]
# ## 4. Tuning: `BLOCK_SIZE` × `num_warps`
#
# Two knobs. `BLOCK_SIZE` sets how many elements one program handles; `num_warps` how many
# threads share them. Their ratio is the elements per thread: Triton gives each thread
# runs of contiguous elements and issues 16-byte vector loads where it can prove them safe
# (4 fp32 or 8 bf16): the pointers 16-byte aligned and `n` a multiple of 16, which Triton
# learns by specialising each launch on the divisibility of its integer arguments, as it
# does for every power-of-two size here.
# More elements per thread means more independent loads in flight per thread; more warps
# per program means more threads. We sweep both at 2^28 elements and keep the best per
# dtype for the size sweep.

# %% tags=["hide-input"] summary="The sweep: every BLOCK_SIZE \u00d7 num_warps, checked, then timed"
BLOCK_SIZES = [512, 1024, 2048, 4096, 8192]
NUM_WARPS = [4, 8, 16]


def timing_row(t, *, flops: float, nbytes: float, **labels) -> dict:
    """One measurement as a flat row: labels, then time (ms), GB/s and TFLOP/s with the
    20/80 % quantile band (the slower quantile time gives the lower rate)."""
    return {
        **labels,
        "flops": flops,
        "bytes": nbytes,
        "ms": t.ms,
        "ms_lo": t.ms_lo,
        "ms_hi": t.ms_hi,
        "gbps": gbps(nbytes, t.ms),
        "gbps_lo": gbps(nbytes, t.ms_hi),
        "gbps_hi": gbps(nbytes, t.ms_lo),
        "tflops": tflops(flops, t.ms),
        "tflops_lo": tflops(flops, t.ms_hi),
        "tflops_hi": tflops(flops, t.ms_lo),
    }


def sweep_triton_configs(dtype: torch.dtype, n: int) -> list[dict]:
    """Time every (BLOCK_SIZE, num_warps) at ``n`` elements, after checking each against torch.add."""
    x = torch.randn(n, device=DEVICE, dtype=dtype)
    y = torch.randn(n, device=DEVICE, dtype=dtype)
    expected = torch.add(x, y)
    flops, nbytes = add_traffic(n, dtype)
    rows = []
    for bs in BLOCK_SIZES:
        for nw in NUM_WARPS:
            assert torch.equal(triton_add(x, y, BLOCK_SIZE=bs, num_warps=nw), expected), (bs, nw)
            t = bench(lambda bs=bs, nw=nw: triton_add(x, y, BLOCK_SIZE=bs, num_warps=nw))
            rows.append(timing_row(t, flops=flops, nbytes=nbytes, dtype=DTYPE_NAME[dtype], n=n,
                                   BLOCK_SIZE=bs, num_warps=nw, elems_per_thread=bs // (32 * nw)))
    return rows


def config_grid(rows: list[dict]):
    """GB/s as a BLOCK_SIZE × num_warps table."""
    gb = {(r["BLOCK_SIZE"], r["num_warps"]): r["gbps"] for r in rows}
    grid = [{"BLOCK_SIZE": bs, **{f"{nw} warps": gb[bs, nw] for nw in NUM_WARPS}} for bs in BLOCK_SIZES]
    return table(grid, formats={f"{nw} warps": ".0f" for nw in NUM_WARPS},
                 caption=f"{rows[0]['dtype']}, n = {rows[0]['n']:,}: GB/s (read + write)")


BEST = {torch.float32: dict(BLOCK_SIZE=1024, num_warps=4), HALF: dict(BLOCK_SIZE=2048, num_warps=4)}
if GPU:
    config_rows = []
    for dtype in (torch.float32, HALF):
        rows = sweep_triton_configs(dtype, LARGE)
        config_rows += rows
        display(config_grid(rows))
        best = max(rows, key=lambda r: r["gbps"])
        BEST[dtype] = dict(BLOCK_SIZE=best["BLOCK_SIZE"], num_warps=best["num_warps"])
        worst = min(rows, key=lambda r: r["gbps"])
        print(f"best {DTYPE_NAME[dtype]}: {BEST[dtype]} at {best['gbps']:.0f} GB/s "
              f"({best['elems_per_thread']} elements per thread); worst {worst['gbps']:.0f} GB/s "
              f"(BLOCK_SIZE={worst['BLOCK_SIZE']}, num_warps={worst['num_warps']})")
    save_data("triton_configs.csv", config_rows)
else:
    print(f"CPU mode: config sweep skipped; using {BEST}")

# %% [markdown]
# ## 5. The CUDA C kernels
#
# Three versions, one idea each, in `notebooks/cuda/vector_add.cu` (the PyTorch bindings in
# `vector_add.cpp`), compiled once at run time and timed with the same `bench`:
#
# * **one element per thread**: the textbook `vecAdd`. Each thread loads 4 bytes of `x`
#   and 4 of `y`. A full SM runs 2048 threads, so it has at most 16 KiB of loads in
#   flight, and 2^28 elements need a million blocks of 256 threads, each scheduled,
#   started and retired.
# * **one 16-byte vector per thread**: each thread loads a `float4` (8 bf16) of `x` and of
#   `y` with one 128-bit instruction, four times the bytes in flight per thread, and a
#   quarter of the blocks.
# * **16-byte vectors in a grid-stride loop**: launch only as many blocks as fit on the GPU
#   at once (the CUDA occupancy API says how many, given the kernel's registers); each
#   thread walks the array, loading `kUnroll = 2` vectors of `x` and of `y` before it adds
#   any, so even more bytes are in flight and no time goes to block turnover.
#
# Arithmetic happens in fp32 and rounds once on the store, as `torch.add` does for bf16.

# %%
display(show_source("cuda/vector_add.cu", kernels=("add_one_per_thread_kernel", "add_vec16_kernel",
                                                     "add_vec16_grid_stride_kernel")))

# %% tags=["hide-input", "hide-output"] summary="Compile the three kernels, and check them bit for bit"
CUDA_KERNELS = {}
if GPU:
    vecadd_cuda = compile_cuda("vecadd_cuda", cuda="cuda/vector_add.cu", cpp="cuda/vector_add.cpp",
                               functions=["add_one_per_thread", "add_vec16", "add_vec16_grid_stride"])
    CUDA_KERNELS = {
        "cuda 1 elem/thread": vecadd_cuda.add_one_per_thread,
        "cuda 16-byte vector": vecadd_cuda.add_vec16,
        "cuda 16-byte + grid-stride": vecadd_cuda.add_vec16_grid_stride,
    }
    # 5,000,003 elements need several passes of the grid-stride loop on any current GPU.
    display(table([check_add(fn, name, CHECK_SIZES + [5_000_003], (torch.float32, HALF))
                   for name, fn in CUDA_KERNELS.items()], formats={"worst error vs float64": ".1e"}))
else:
    print("CPU mode: CUDA C kernels not compiled (they need nvcc and a GPU)")


# %% [markdown]
# ## 6. Benchmark: 2^12 to 2^28 elements
#
# Every kernel against `torch.add` in the same run, fp32 and bf16. Bandwidth counts the
# compulsory bytes, read plus written; bands are the 20–80 % quantiles of `bench`. Each
# size is checked against `torch.add` before it is timed.

# %% tags=["hide-input", "hide-output"] summary="The sweep over n: every kernel, checked, then timed"
def add_providers(dtype: torch.dtype) -> dict:
    """name -> function(x, y) for every kernel benchmarked in ``dtype``."""
    return {"torch.add": torch.add, "triton": lambda x, y: triton_add(x, y, **BEST[dtype]), **CUDA_KERNELS}


def sweep_sizes(dtype: torch.dtype) -> list[dict]:
    """Time every provider at every size in SIZES; rows as :func:`timing_row`."""
    rows = []
    for n in SIZES:
        x = torch.randn(n, device=DEVICE, dtype=dtype)
        y = torch.randn(n, device=DEVICE, dtype=dtype)
        expected = torch.add(x, y)
        flops, nbytes = add_traffic(n, dtype)
        for name, fn in add_providers(dtype).items():
            assert torch.equal(fn(x, y), expected), f"{name} wrong at n={n}"
            t = bench(lambda fn=fn: fn(x, y))
            rows.append(timing_row(t, flops=flops, nbytes=nbytes, provider=name, dtype=DTYPE_NAME[dtype], n=n))
    return rows


def size_table(rows: list[dict]):
    """GB/s per provider (columns) and size (rows)."""
    providers = list(dict.fromkeys(r["provider"] for r in rows))
    gb = {(r["n"], r["provider"]): r["gbps"] for r in rows}
    return table([{"n": f"2^{n.bit_length() - 1}", **{p: gb[n, p] for p in providers}} for n in SIZES],
                 formats={p: ".0f" for p in providers}, caption=f"{rows[0]['dtype']}: GB/s (read + write)")


def plot_sizes(rows: list[dict]):
    """GB/s against n for every provider, with the measured copy bandwidth as a line."""
    return benchmark_chart(rows, x="n", y="gbps", provider="provider", y_lo="gbps_lo", y_hi="gbps_hi",
                           xlabel="elements n", ylabel="GB/s (read + write)", logy=True,
                           title=f"{rows[0]['dtype']} vector add on {ceilings.device}",
                           rules=[(ceilings.copy_gbps, f"measured copy {ceilings.copy_gbps:.0f} GB/s")])


if GPU:
    size_rows = {dtype: sweep_sizes(dtype) for dtype in (torch.float32, HALF)}
    save_data("add_sizes.csv", size_rows[torch.float32] + size_rows[HALF])
    for dtype in (torch.float32, HALF):
        display(size_table(size_rows[dtype]))
else:
    print("CPU mode: size sweep skipped")

# %%
if GPU:
    display(plot_sizes(size_rows[torch.float32]))
    display(plot_sizes(size_rows[HALF]))

# %% [markdown]
# ### Small sizes against the plateau
#
# Below some size the time is flat: the kernel pays a fixed cost — the launch reaching the
# GPU's front end, the grid being scheduled, one round trip to memory and the writes
# draining — and the bytes themselves take less than that. Bandwidth then grows in
# proportion to `n`. Above it the time grows with `n` and bandwidth settles on a plateau
# set by HBM. Fitting `t(n) = t0 + bytes(n) / BW` with `t0` from the smallest size and
# `BW` from the largest gives the size where the two costs are equal, which is where the
# measured bandwidth should reach half its plateau.

# %% tags=["hide-input"] summary="The fixed cost of a launch, from the smallest size"
def at(rows: list[dict], provider: str, n: int) -> dict:
    """The row of ``provider`` at size ``n``."""
    return next(r for r in rows if r["provider"] == provider and r["n"] == n)


if GPU:
    fp32 = size_rows[torch.float32]
    small, large = at(fp32, "triton", SIZES[0]), at(fp32, "triton", LARGE)
    t0_us = small["ms"] * 1e3
    plateau = large["gbps"]
    n_half_model = t0_us * 1e-6 * plateau * 1e9 / 12
    n_half_measured = next(n for n in SIZES if at(fp32, "triton", n)["gbps"] >= plateau / 2)
    small_label = f"2^{SIZES[0].bit_length() - 1}"
    print(f"triton fp32 at n = {small_label}: {t0_us:.2f} µs for {small['bytes'] / 1e3:.0f} kB "
          f"({small['gbps']:.0f} GB/s, {small['gbps'] / plateau:.1%} of its plateau {plateau:.0f} GB/s)")
    print(f"the bytes of n = {small_label} alone would take {small['bytes'] / (plateau * 1e9) * 1e6:.3f} µs at the plateau")
    print(f"fixed cost t0 = {t0_us:.2f} µs (guessed {ASSUMED_FIXED_US} µs); half-plateau size: model {n_half_model:,.0f} elements "
          f"(guessed {n_half_predicted:,.0f}), first measured size at or above half: {n_half_measured:,}")
    for p in add_providers(torch.float32):
        print(f"{p:>28}: {at(fp32, p, SIZES[0])['ms'] * 1e3:6.2f} µs at n = {small_label}")

# %% [markdown]
# ## 7. The arithmetic-intensity sweep
#
# Vector add sits far left of the ridge point, so it can never show the compute roof. To
# see the whole roofline with one kernel, keep the bytes fixed (read `x`, write `out`:
# 8 bytes per fp32 element) and raise the work per element: apply `x = x * a + b` `r` times,
# `r` = 1, 2, 4, …, 4096. Each step is one fused multiply-add (FFMA), counted as 2 FLOPs,
# as the datasheet's fp32 peak counts it: the H100's and H200's 67 TFLOP/s is 132 SMs × 128 fp32 lanes
# per SM (NVIDIA Hopper architecture whitepaper) × 2 FLOP × a 1.98 GHz boost clock. The arithmetic intensity is `2r / 8 = r / 4` FLOP/byte, so the sweep runs
# from 0.25 to 1024 FLOP/byte and crosses the ridge point near `r ≈ 4 × ridge`.
#
# Three things keep the measurement honest:
#
# * `a` and `b` are runtime arguments, so the compiler cannot fold the chain, and each step
#   depends on the last, so it cannot skip steps. We check the result against the closed
#   form `x_r = a^r x_0 + b (1 − a^r) / (1 − a)` and count the FMA instructions in the PTX.
# * One FFMA has a latency of several cycles; to keep the fp32 lanes busy every cycle, each
#   thread needs several independent chains. With `BLOCK_SIZE = 1024` and 4 warps each
#   thread owns 8 elements, 8 chains it can interleave.
# * `r` is a runtime loop bound (one compile serves every `r`); the body is unrolled
#   `UNROLL = 32` times with `tl.static_range`, so the loop's counter, compare and branch
#   share the issue slots with 32 × 8 FFMAs instead of 8. Unrolling all 4096 steps would
#   mean one compile per `r` and 4096 × 8 instructions of code for nothing.
#
# A second variant, `x = x * a`, does one FLOP per instruction (FMUL). The fp32 lanes issue
# FMULs at the same rate as FFMAs, so it should top out near half the FMA peak.

# %%
@triton.jit
def chain_step(x, a, b, FMA: tl.constexpr):
    """One step: x * a + b as one FFMA (2 FLOP), or x * a as one FMUL (1 FLOP)."""
    if FMA:
        x = tl.fma(x, a, b)
    else:
        x = x * a
    return x


@triton.jit(do_not_specialize=["r"])
def fma_chain_kernel(
    x_ptr,  # pointer to x[0]; (n,) fp32
    out_ptr,  # pointer to out[0]; (n,) fp32
    n,  # number of elements
    r,  # chain length, steps per element; runtime, so one compile serves every r
    a,  # fp32 scalar multiplier, a runtime value so the chain cannot be folded
    b,  # fp32 scalar addend
    BLOCK_SIZE: tl.constexpr,  # elements per program
    UNROLL: tl.constexpr,  # steps per trip of the runtime loop
    FMA: tl.constexpr,  # True: x * a + b; False: x * a
):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)  # (BLOCK_SIZE,)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)  # (BLOCK_SIZE,) one dependency chain per element
    for _ in range(r // UNROLL):
        for _ in tl.static_range(UNROLL):
            x = chain_step(x, a, b, FMA)
    for _ in range(r % UNROLL):
        x = chain_step(x, a, b, FMA)
    tl.store(out_ptr + offsets, x, mask=mask)



# %% tags=["hide-input", "hide-output"] summary="The launcher, its closed form, and the check against it"
CHAIN_CONFIG = dict(BLOCK_SIZE=1024, UNROLL=32, num_warps=4)
# a and b are exact in fp32, so the float64 closed form uses the same values the kernel does.
# With a = 1 - 2^-10 and b = 2^-10 the chain contracts towards its fixed point b / (1 - a) = 1.
FMA_A, FMA_B = 1 - 2**-10, 2**-10
MUL_A = 1 - 2**-12  # a^4096 ≈ e^-1: no overflow or underflow along the chain


def chain(x: torch.Tensor, r: int, *, fma: bool = True, **config):
    """Apply the chain ``r`` times to every element of ``x`` (fp32, contiguous).

    Returns ``(out, compiled)``: the new tensor and Triton's compiled kernel (its ``.asm``
    holds the PTX on a GPU).
    """
    assert x.dtype == torch.float32 and x.is_contiguous()
    config = {**CHAIN_CONFIG, **config}
    out = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, config["BLOCK_SIZE"]),)
    a, b = (FMA_A, FMA_B) if fma else (MUL_A, 0.0)
    compiled = fma_chain_kernel[grid](x, out, n, r, a, b, BLOCK_SIZE=config["BLOCK_SIZE"],
                                      UNROLL=config["UNROLL"], FMA=fma, num_warps=config["num_warps"])
    return out, compiled


def chain_reference(x: torch.Tensor, r: int, *, fma: bool = True) -> torch.Tensor:
    """The chain in closed form, float64: a^r x + b (1 - a^r) / (1 - a)."""
    x = x.double()
    if fma:
        ar = FMA_A**r
        return ar * x + FMA_B * (1 - ar) / (1 - FMA_A)
    return MUL_A**r * x


def check_chain(n: int, rs, fma: bool) -> list[dict]:
    """Assert the kernel matches the closed form within r fp32 roundings of relative error."""
    x = torch.randn(n, device=DEVICE, dtype=torch.float32)
    rows = []
    for r in rs:
        out, _ = chain(x, r, fma=fma)
        err = rel_err(out, chain_reference(x, r, fma=fma))
        bound = 2 * r * 2.0**-24  # each step rounds once; the contraction (a < 1) damps earlier errors
        assert err <= bound, f"{'FMA' if fma else 'multiply'} chain r={r}: rel. error {err:.2e} > {bound:.2e}"
        rows.append({"chain": "FMA" if fma else "multiply", "n": n, "r": r, "error vs float64": err, "bound": bound})
    return rows


CHAIN_CHECK_R = [1, 7, 32, 100, 4096] if GPU else [1, 7, 32, 100]  # 7 and 100 use the remainder loop
display(table([row for fma in (True, False) for row in check_chain(3001, CHAIN_CHECK_R, fma)],
              formats={"error vs float64": ".1e", "bound": ".1e"}))

# %% tags=["hide-input", "hide-output"] summary="The sweep: the PTX counted, then every r timed"
R_VALUES = [2**k for k in range(13)]  # 1 … 4096

if GPU:
    # The PTX of the loop: expect UNROLL × elements per thread FFMAs in the unrolled body,
    # plus one per element in the remainder loop; none folded away.
    probe = torch.randn(CHAIN_CONFIG["BLOCK_SIZE"], device=DEVICE)
    per_thread = CHAIN_CONFIG["BLOCK_SIZE"] // (32 * CHAIN_CONFIG["num_warps"])
    for fma, name, pattern in ((True, "fma", r"\bfma\.rn\.f32\b"), (False, "mul", r"\bmul(?:\.rn)?\.f32\b")):
        count = len(re.findall(pattern, chain(probe, 1, fma=fma)[1].asm["ptx"]))
        print(f"{name} chain: {count} fp32 {name} instructions in the PTX "
              f"(UNROLL × elements per thread + remainder = {CHAIN_CONFIG['UNROLL'] * per_thread + per_thread})")
        assert count >= CHAIN_CONFIG["UNROLL"], f"the {name} chain was folded: {count} instructions"

    # A whole number of waves: at 2048 threads per SM, 2048 / (32 * num_warps) programs fit on each SM,
    # and n fills every SM 32 times over (about 2^26 elements, 277 MB per tensor on a 132-SM H100 or H200),
    # so the last wave is not partly idle once the kernel is compute-bound.
    props = torch.cuda.get_device_properties(0)
    per_sm = props.max_threads_per_multi_processor // (32 * CHAIN_CONFIG["num_warps"])
    SWEEP_N = props.multi_processor_count * per_sm * CHAIN_CONFIG["BLOCK_SIZE"] * 32
    print(f"sweep size: {SWEEP_N:,} elements (2^{math.log2(SWEEP_N):.2f}), {SWEEP_N * 4 / 1e6:.0f} MB per tensor")

    x_sweep = torch.randn(SWEEP_N, device=DEVICE)
    sweep_rows = []
    for fma in (True, False):
        for r in R_VALUES:
            flops, nbytes = SWEEP_N * r * (2 if fma else 1), 2 * SWEEP_N * 4
            t = bench(lambda r=r, fma=fma: chain(x_sweep, r, fma=fma))
            sweep_rows.append(timing_row(t, flops=flops, nbytes=nbytes, variant="x*a+b (FFMA)" if fma else "x*a (FMUL)",
                                         r=r, intensity=flops / nbytes, n=SWEEP_N))
    save_data("intensity_sweep.csv", sweep_rows)

    for row in sweep_rows:  # the fraction of the roofline bound at the row's intensity
        row["of roof"] = row["tflops"] / min(row["intensity"] * ceilings.copy_gbps / 1e3, ceilings.fp32_tflops)
    display(table(sweep_rows, {"variant": "variant", "r": "r", "intensity": "FLOP/byte", "ms": "ms", "gbps": "GB/s",
                               "tflops": "TFLOP/s", "of roof": "of the roof"},
                  formats={"intensity": ".2f", "ms": ".4f", "gbps": ".0f", "tflops": ".2f", "of roof": ".0%"}))
else:
    print("CPU mode: intensity sweep skipped")

# %% [markdown]
# ### Where the kernel leaves one roof and meets the other
#
# The **ridge point** is the arithmetic intensity where the memory roof meets the compute
# roof. We measure it as the sweep's top fp32 rate (the compute roof this kernel reaches)
# divided by the measured copy bandwidth (the memory roof): FLOP/s ÷ (byte/s) = FLOP/byte.
# The sweep should agree: below it the time stays at the memory floor whatever `r` is;
# above it the time doubles with `r`.

# %% tags=["hide-input"] summary="The ridge point, from the sweep"
def sweep_variant(variant_prefix: str) -> list[dict]:
    """Rows of one variant of the sweep, in order of r."""
    return [r for r in sweep_rows if r["variant"].startswith(variant_prefix)]


if GPU:
    fma_rows, mul_rows = sweep_variant("x*a+b"), sweep_variant("x*a ")
    fma_peak = max(fma_rows, key=lambda r: r["tflops"])
    mul_peak = max(mul_rows, key=lambda r: r["tflops"])
    datasheet_fp32 = ceilings.datasheet.fp32_tflops if ceilings.datasheet else ceilings.fp32_tflops
    ridge_measured = fma_peak["tflops"] * 1e12 / (ceilings.copy_gbps * 1e9)
    floor_gbps = fma_rows[0]["gbps"]
    # the last r before the time first exceeds the r = 1 time by 10%: the kernel is still on the memory roof
    on_memory_roof = fma_rows[0]
    for row in fma_rows[1:]:
        if row["ms"] > 1.1 * fma_rows[0]["ms"]:
            break
        on_memory_roof = row
    at_compute = next(r for r in fma_rows if r["tflops"] >= 0.9 * fma_peak["tflops"])
    print(f"FMA chain peak: {fma_peak['tflops']:.1f} TFLOP/s at r = {fma_peak['r']}, "
          f"{fma_peak['tflops'] / datasheet_fp32:.1%} of the datasheet fp32 peak {datasheet_fp32:.1f} TFLOP/s")
    print(f"multiply chain peak: {mul_peak['tflops']:.1f} TFLOP/s at r = {mul_peak['r']}, {mul_peak['tflops'] / fma_peak['tflops']:.2f} x the FMA "
          f"peak, {mul_peak['tflops'] / datasheet_fp32:.1%} of the datasheet fp32 peak")
    print(f"measured ridge point: {fma_peak['tflops']:.1f} TFLOP/s / {ceilings.copy_gbps:.0f} GB/s = {ridge_measured:.1f} FLOP/byte "
          f"(r ≈ {4 * ridge_measured:.0f}); expected from the datasheet fp32 roof: {ridge_expected:.1f} FLOP/byte")
    print(f"the chain at r = 1 streams {floor_gbps:.0f} GB/s ({floor_gbps / ceilings.copy_gbps:.1%} of copy); "
          f"its own ridge (peak / its bandwidth) is {fma_peak['tflops'] * 1e3 / floor_gbps:.1f} FLOP/byte")
    print(f"time within 10% of the r = 1 time up to r = {on_memory_roof['r']} ({on_memory_roof['intensity']:.1f} FLOP/byte); "
          f"first r at 90% of the peak: {at_compute['r']} ({at_compute['intensity']:.0f} FLOP/byte)")

# %% tags=["hide-input", "hide-output"] summary="Plot the sweep"
if GPU:
    ridge_rule = [(4 * ridge_measured, f"ridge point, r = {4 * ridge_measured:.0f}")]
    for key, ylabel, rules in (
            ("gbps", "GB/s (read + write)", [(ceilings.copy_gbps, f"measured copy {ceilings.copy_gbps:.0f} GB/s")]),
            ("tflops", "TFLOP/s", [(datasheet_fp32, f"datasheet fp32 {datasheet_fp32:.0f} TFLOP/s"),
                                   (datasheet_fp32 / 2, "half of it: 1 FLOP per instruction")])):
        display(benchmark_chart(sweep_rows, x="r", y=key, provider="variant", y_lo=key + "_lo", y_hi=key + "_hi",
                                xlabel="chain length r (FLOP/byte = r/4 for FFMA, r/8 for FMUL)", ylabel=ylabel,
                                logy=True, rules=rules, x_rules=ridge_rule,
                                title=f"Arithmetic-intensity sweep, {SWEEP_N:,} fp32 elements: {ylabel}, {ceilings.device}"))

# %% [markdown]
# ## 8. Roofline
#
# Every variant as a point: the adds at 2^28 elements (at 1/12 or 1/6 FLOP/byte, stacked
# under the memory roof), and every `r` of both chains climbing the roof's slope and running
# along its flat top. All points are held against the fp32 roof: even the bf16 add computes
# on the fp32 lanes, not the tensor cores. The solid fp32 roof here is the one this notebook
# measured (the FMA chain's peak), so the ridge point marked on it is the measured one; the
# dashed lines are the datasheet's.

# %% tags=["hide-input"] summary="Roofline points"
if GPU:
    add_points = [
        RooflinePoint(f"add {row['provider']} {row['dtype']}", row["flops"], row["bytes"], row["ms"],
                      roof="fp32", topic=TOPIC, ms_lo=row["ms_lo"], ms_hi=row["ms_hi"], size=LARGE_LABEL,
                      dtype=row["dtype"])
        for dtype in (torch.float32, HALF)
        for row in size_rows[dtype]
        if row["n"] == LARGE
    ]
    chain_points = [
        RooflinePoint(f"{row['variant']} r={row['r']}", row["flops"], row["bytes"], row["ms"],
                      roof="fp32", topic=TOPIC, ms_lo=row["ms_lo"], ms_hi=row["ms_hi"], size=f"{SWEEP_N:,}", dtype="fp32")
        for row in sweep_rows
    ]
    # Saved against the shared ceilings (datasheet fp32), like every other notebook's points.
    save_roofline(add_points + chain_points, ceilings)
    measured = dataclasses.replace(ceilings, fp32_tflops=fma_peak["tflops"],
                                   fp32_source="measured: FMA chain peak, vector-add notebook")
    print(f"measured fp32 roof {measured.fp32_tflops:.1f} TFLOP/s; ridge point {measured.ridge_point('fp32'):.1f} FLOP/byte")
    display(roofline_chart(add_points, measured, roofs=("fp32",), title=f"Vector add at {LARGE_LABEL} elements, {ceilings.device}"))
    display(roofline_chart(chain_points, measured, roofs=("fp32",),
                           title=f"FMA and multiply chains, r = 1 … 4096, {ceilings.device}"))
else:
    print("CPU mode: roofline skipped")

# %% [markdown]
# ## 9. What we measured, against the prediction
#
# The numbers below are computed from this run.

# %% tags=["hide-input"] summary="Headline figures, and the numbers of this run"
if GPU:
    fp32, half = size_rows[torch.float32], size_rows[HALF]
    torch_l, triton_l = at(fp32, "torch.add", LARGE), at(fp32, "triton", LARGE)
    cuda_l = {p: at(fp32, p, LARGE) for p in CUDA_KERNELS}
    best_cuda = max(cuda_l, key=lambda p: cuda_l[p]["gbps"])
    half_torch, half_triton = at(half, "torch.add", LARGE), at(half, "triton", LARGE)

    headline("add_fp32_large_vs_torch", triton_l["gbps"] / torch_l["gbps"], "x",
             f"Triton GB/s / torch.add GB/s, fp32, n = {LARGE_LABEL}, same run (BLOCK_SIZE={BEST[torch.float32]['BLOCK_SIZE']}, "
             f"num_warps={BEST[torch.float32]['num_warps']})", label=f"Triton add, fp32, n = {LARGE_LABEL}",
             goal=0.95, baseline="torch.add, same run (predicted: within a few percent)")
    headline("add_fp32_large_frac_copy", triton_l["gbps"] / ceilings.copy_gbps, "x",
             f"Triton add GB/s (2 reads + 1 write) / measured copy GB/s (1 read + 1 write), fp32, n = {LARGE_LABEL}",
             label="Triton add, fraction of the copy roof", goal=0.95, baseline="a device copy, measured")
    headline("cuda_fp32_large_vs_torch", cuda_l[best_cuda]["gbps"] / torch_l["gbps"], "x",
             f"best CUDA C kernel ({best_cuda}) GB/s / torch.add GB/s, fp32, n = {LARGE_LABEL}, same run",
             label=f"Best CUDA C kernel ({best_cuda})", baseline="torch.add, same run")
    headline("intensity_sweep_peak_tflops", fma_peak["tflops"], "TFLOP/s",
             f"FMA chain x = x*a + b, r = {fma_peak['r']}, {SWEEP_N:,} fp32 elements, 2 FLOP per FFMA",
             label="FMA chain, peak", baseline=f"the datasheet's fp32 {datasheet_fp32:.0f} TFLOP/s")
    headline("ridge_point_flop_per_byte", ridge_measured, "FLOP/byte",
             "measured: FMA-chain peak TFLOP/s / measured copy GB/s", label="Ridge point, measured",
             baseline=f"{ridge_expected:.1f} from the datasheet's fp32 roof")

    naive = cuda_l["cuda 1 elem/thread"]
    # Little's law on the one-element kernel: if it is limited by loads in flight, the latency it implies is
    # (bytes of loads in flight) / (read bandwidth). A full GPU holds SMs x 2048 threads x 8 bytes of loads.
    props = torch.cuda.get_device_properties(0)
    inflight = props.multi_processor_count * props.max_threads_per_multi_processor * 8
    implied_ns = inflight / (naive["gbps"] * 1e9 * 2 / 3) * 1e9
    display(prose(
        f"- **fp32, n = {LARGE_LABEL}:** torch.add {torch_l['gbps']:.0f} GB/s ({torch_l['ms']:.3f} ms), Triton "
        f"{triton_l['gbps']:.0f} GB/s ({triton_l['ms']:.3f} ms): {triton_l['gbps'] / torch_l['gbps']:.3f}×. The floor "
        f"predicted from the copy bandwidth was {floor_ms:.3f} ms; Triton took {triton_l['ms'] / floor_ms:.3f}× that, "
        f"{triton_l['gbps'] / ceilings.copy_gbps:.1%} of the copy rate."
        + (f" Against the datasheet's {ceilings.datasheet.hbm_gbps:.0f} GB/s: Triton "
           f"{triton_l['gbps'] / ceilings.datasheet.hbm_gbps:.1%}, a copy {ceilings.copy_gbps / ceilings.datasheet.hbm_gbps:.1%}."
           if ceilings.datasheet else "") + "\n"
        "- **CUDA C:** " + "; ".join(f"{p} {row['gbps']:.0f} GB/s ({row['gbps'] / torch_l['gbps']:.3f}× torch.add)"
                                     for p, row in cuda_l.items())
        + f". One element per thread holds at most {inflight / 2**20:.1f} MiB of loads in flight on the whole GPU; "
        f"at its read rate ({naive['gbps'] * 2 / 3:.0f} GB/s) that covers {implied_ns:.0f} ns of memory latency.\n"
        f"- **{DTYPE_NAME[HALF]}:** torch.add {half_torch['gbps']:.0f} GB/s, Triton {half_triton['gbps']:.0f} GB/s "
        f"({half_triton['gbps'] / half_torch['gbps']:.3f}×); CUDA "
        + ", ".join(f"{p} {at(half, p, LARGE)['gbps']:.0f}" for p in CUDA_KERNELS) + " GB/s.\n"
        f"- **Small sizes:** a fixed cost of {t0_us:.2f} µs per launch; half the plateau from about "
        f"{n_half_measured:,} elements.\n"
        f"- **The sweep:** {fma_peak['tflops']:.1f} TFLOP/s with FMAs ({fma_peak['tflops'] / datasheet_fp32:.1%} of the "
        f"datasheet), {mul_peak['tflops']:.1f} with multiplies only ({mul_peak['tflops'] / fma_peak['tflops']:.2f}×); "
        f"the ridge point at {ridge_measured:.1f} FLOP/byte."))
else:
    display(prose("CPU mode: the kernels were checked; nothing was timed, so there are no headline figures."))

# %% [markdown]
# **Reading the numbers.**
#
# * *Triton against `torch.add`.* Both are a stream of 16-byte loads and stores with no
#   reuse, so at 2^28 elements they should land within a few percent of each other and of
#   the floor time; `torch.add`'s own kernel also vectorises its loads and gives each thread
#   several elements. The config sweep shows how flat the optimum is: what matters is enough
#   bytes in flight per SM, which many (`BLOCK_SIZE`, `num_warps`) pairs provide, and only the
#   corners (one element per thread, or very few threads) fall off.
# * *Is the copy the right roof?* A copy is half reads, half writes; an add is two-thirds
#   reads. HBM loses time turning the bus around between reads and writes, so a read-heavier
#   stream can reach a slightly higher rate than a copy, and the add's fraction of copy can
#   come out at or above 1. Neither is the datasheet rate, which no streaming kernel reaches.
#   The stricter roof for an add is `torch.add` itself, measured in the same run, which is why
#   the headline compares against it as well.
# * *The CUDA kernels.* One element per thread keeps too few bytes in flight: the line
#   above computes how much memory latency the loads the GPU can hold at once would
#   cover at the rate the kernel achieved. 16-byte loads quadruple the bytes in flight per
#   thread, and that alone brings the kernel level with `torch.add`. The grid-stride loop
#   with two vectors per pass was meant to double the bytes in flight again and to save the
#   turnover of a million short blocks, but on both cards it has run on (an H200 earlier, an
#   H100 in this run) it came out *slower* than the plain 16-byte kernel (the table above).
#   Our reading, not yet checked with a profiler: once the 16-byte kernel already covers the
#   memory latency, more bytes per thread buy nothing, while a grid sized to one wave of
#   resident blocks ends unevenly (the SMs whose blocks finish first idle while the last ones
#   drain) and the loop adds its own instructions.
#   In bf16 the one-element kernel moves only 2 bytes per load, so it falls further behind.
# * *Small sizes.* Below the half-bandwidth size the kernels are all alike: the fixed cost
#   of a launch dominates and no choice of block size helps. Only fusing work into fewer
#   launches (or CUDA graphs) does.
# * *The sweep.* Up to the ridge point the chain's time does not change with `r`: the FMAs
#   hide under the memory stream. Past it, each doubling of `r` doubles the time, and the
#   rate stays on the flat fp32 roof. The multiply-only chain issues one instruction per
#   FLOP instead of two FLOPs per instruction, so the same instruction rate gives half the
#   FLOP/s: the fp32 peak is a peak of FMAs.
