# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   worklog_gen:
#     compute_capability: '8.0'  # bf16 and tf32 tl.dot need sm_80; mma v2 below Hopper, no TMA
#     memory_gib: 8  # the kit's measure_ceilings copies 2 GiB into 2 GiB; squares up to 8192 fp32: 1 GiB
# ---

# %% [markdown]
# # Tiled matrix multiplication (GEMM) in Triton
#
# C = A · B, with A of shape (M, K), B of shape (K, N) and C of shape (M, N), is the kernel
# that most of a transformer's time goes to: every linear layer is one. This page builds it
# in four versions, one idea each, and measures every version against `torch.matmul`
# (cuBLAS) in the same run, on the same inputs:
#
# 1. **naive**: each program computes a strip of one output row on the CUDA cores;
#    nothing is shared through on-chip tiles;
# 2. **tiled**: each program computes a BLOCK_M × BLOCK_N tile of C with `tl.dot`,
#    stepping through K in BLOCK_K slices, with an fp32 accumulator;
# 3. **grouped**: the same tiles, launched in an order that keeps operand panels in L2
#    (GROUP_SIZE_M);
# 4. **autotuned**: the grouped kernel, with block shapes, `num_warps` and `num_stages`
#    chosen per problem size from a short list of configurations that suit Hopper.
#
# The fifth version, persistent, with TMA loads and warp specialization, is the one that
# catches cuBLAS; it has its own page, [Persistent matmul](persistent-matmul.md).
#
# You will learn:
#
# - how to tell from napkin math whether a matmul is compute- or memory-bound, and the
#   floor time to expect;
# - why tiling with `tl.dot` is the step that matters: tensor cores, and every loaded
#   element used BLOCK_N or BLOCK_M times;
# - when the launch order of tiles pays, with a model of L2 traffic that predicts it;
# - what `input_precision` trades for fp32 operands: tf32 speed against fp32 accuracy;
# - how far a pointer-based, autotuned kernel gets from cuBLAS, timed in pairs.

# %% tags=["hide-input"] summary="Imports and settings"
import torch
import triton
import triton.language as tl
from IPython.display import display

from worklog_gen.kit.charts import benchmark_chart, roofline_chart
from worklog_gen.kit.gemm import (ELEM, ROOF, SQUARES, TOL, TORCH, benchmark_shape, check_config, check_operands,
                                  compulsory_bytes, config_label, grouped_tile, hopper_configs, keep_configs,
                                  launch_options, matmul_dtypes, matmul_flops, rel_err, tile_order)
from worklog_gen.kit.markdown import prose, python_source, table
from worklog_gen.kit.measure import bench, gpu_info, measure_ceilings, tflops
from worklog_gen.kit.notebook import headline, interpret_mode, save_data
from worklog_gen.kit.paired import paired_ratio
from worklog_gen.kit.roofline import RooflinePoint, save_roofline

TOPIC = "tiled-matmul"
CPU = interpret_mode()  # TRITON_INTERPRET=1: small irregular sizes on the CPU, no timing
DEVICE = "cpu" if CPU else "cuda"
torch.manual_seed(0)
DTYPES = matmul_dtypes(CPU)

if CPU:
    NUM_SMS, L2_BYTES = 3, None
    print("CPU mode (TRITON_INTERPRET=1): kernels run in Triton's interpreter at small irregular sizes;"
          " benchmarks, ceilings, roofline and headline figures are skipped.")
else:
    # fp32 torch.matmul may use tf32 tensor cores, as our fp32 kernels do (tl.dot input_precision="tf32").
    torch.backends.cuda.matmul.allow_tf32 = True
    props = torch.cuda.get_device_properties(0)
    NUM_SMS = props.multi_processor_count
    L2_BYTES = getattr(props, "L2_cache_size", None)  # as the driver reports it

info = gpu_info()
save_data("gpu_info", info)
print(info)
print(f"NUM_SMS = {NUM_SMS}, L2 = {L2_BYTES / 2**20:.0f} MiB" if L2_BYTES else f"NUM_SMS = {NUM_SMS}")

# %% [markdown]
# ## 1. Napkin math
#
# One multiply-add per (m, n, k) triple: **FLOPs = 2·M·N·K**. The fewest bytes a matmul can
# move (the *compulsory* bytes) read A and B once and write C once:
# **bytes = e·(M·K + K·N + M·N)** for e bytes per element (2 for bf16/fp16, 4 for fp32).
# Their ratio is the arithmetic intensity. For a square n × n × n problem it is
# 2n³ / (3n²·e) = 2n / (3e): n/3 FLOP/byte in bf16 and n/6 in fp32, so intensity grows
# linearly with size. A kernel is compute-bound when its intensity is above the ridge
# point, compute roof ÷ memory roof, and memory-bound below it. The floor time is
# max(FLOPs / compute roof, bytes / bandwidth).
#
# The roofs are *measured* on this GPU (`measure_ceilings`): the bandwidth of a large
# device-to-device copy, and `torch.matmul` at 8192³ in bf16 and in fp32 with tf32 allowed.
# The compute roof is therefore cuBLAS's own rate, not the datasheet's.

# %% tags=["hide-input"] summary="Measure the roofs; FLOPs, bytes and floor time of every size"
if CPU:
    ceilings = None
    print("ceilings: skipped in CPU mode")
else:
    ceilings = measure_ceilings()
    save_data("ceilings", ceilings.to_dict())
    print(f"measured on {ceilings.device}: copy {ceilings.copy_gbps:,.0f} GB/s, "
          f"bf16 {ceilings.bf16_tflops:,.0f} TFLOP/s, tf32 {ceilings.tf32_tflops:,.0f} TFLOP/s, "
          f"fp32 {ceilings.fp32_tflops:,.0f} TFLOP/s ({ceilings.fp32_source}); ridge points "
          + ", ".join(f"{roof} {ceilings.ridge_point(roof):,.0f} FLOP/byte" for roof in ("bf16", "tf32")))

napkin = []
for dtype_name in ("bf16", "tf32"):
    for n in SQUARES:
        flops, nbytes = matmul_flops(n, n, n), compulsory_bytes(n, n, n, ELEM[dtype_name])
        entry = {"dtype": dtype_name, "n": n, "gflop": flops / 1e9, "mbytes": nbytes / 1e6,
                 "intensity": flops / nbytes}
        if ceilings is not None:
            roof = ROOF[dtype_name]
            t_compute = flops / (ceilings.roof_tflops(roof) * 1e12) * 1e3
            t_memory = nbytes / (ceilings.copy_gbps * 1e9) * 1e3
            entry.update(t_compute_ms=t_compute, t_memory_ms=t_memory, floor_ms=max(t_compute, t_memory),
                         bound="compute" if entry["intensity"] > ceilings.ridge_point(roof) else "memory")
        napkin.append(entry)
save_data("napkin.csv", napkin)
display(table(napkin, {"dtype": "dtype", "n": "M = N = K", "gflop": "GFLOP", "mbytes": "MB",
                       "intensity": "FLOP/byte", "t_compute_ms": "compute ms", "t_memory_ms": "memory ms",
                       "floor_ms": "floor ms", "bound": "bound"},
              {"gflop": ".2f", "mbytes": ".1f", "intensity": ".0f", "t_compute_ms": ".4f", "t_memory_ms": ".4f",
               "floor_ms": ".4f"}))

# %% [markdown]
# **Prediction, written before measuring.** At the smallest sizes the floor is a fraction
# of a microsecond, far below the few microseconds it takes to launch a kernel and ramp up
# every SM, so those sizes are latency-bound whatever the roofline says. The naive kernel
# reads B once per output row, M·N·K·e bytes in all, and cannot use the tensor cores: it
# stays below the fp32 CUDA-core roof. Tiling should gain more than 10× on it. A
# pointer-based kernel, however well tuned, should land within 25 % of cuBLAS at 4096 and
# 8192; the last quarter is what the persistent TMA kernel of the next page is for.

# %% tags=["hide-input"] summary="The prediction, with this GPU's roofs"
if ceilings is not None:
    bf16_rows = {r["n"]: r for r in napkin if r["dtype"] == "bf16"}
    compute_bound = [n for n in SQUARES if bf16_rows[n]["bound"] == "compute"]
    repeats = 2048**3 * 2  # bytes of B the naive kernel reads at 2048: all of B once per output row
    display(prose(
        f"- bf16 ridge point {ceilings.ridge_point('bf16'):.0f} FLOP/byte, a square n of about "
        f"{3 * ceilings.ridge_point('bf16'):.0f}: compute-bound squares {compute_bound}.\n"
        + "".join(f"- bf16 {n}³: floor {bf16_rows[n]['floor_ms']:.3f} ms ({bf16_rows[n]['bound']}-bound).\n"
                  for n in (4096, 8192))
        + f"- bf16 256³: floor {bf16_rows[256]['floor_ms'] * 1e3:.2f} µs, latency-bound in practice.\n"
        f"- naive at 2048: {repeats / 1e9:.0f} GB of B reads, {repeats / (ceilings.copy_gbps * 1e6):.1f} ms at "
        f"the HBM copy rate; B ({2048**2 * 2 / 2**20:.0f} MiB) fits in L2, which serves repeats faster."))

# %% [markdown]
# ## 2. The kernels
#
# All kernels take A as (M, K) and B as (K, N) through strides. In the benchmarks B is
# stored the way a linear layer stores its weight: W of shape (N, K), row-major, and
# B = Wᵀ is a strided view. Both operands are then contiguous along K, which is what
# Hopper's tensor cores want for tf32; `torch.matmul(a, w.T)` gets the very same tensors
# (cuBLAS calls this the "TN" layout).
#
# ### Version 1: naive
#
# One program per output row strip: program (m, j) computes C[m, j·BLOCK_N : (j+1)·BLOCK_N]
# by walking K in BLOCK_K slices, multiplying a slice of row m of A with a
# (BLOCK_K, BLOCK_N) slice of B on the CUDA cores, and summing over K. M programs read the
# same strip of B: B is read M times over, and no tile is shared between programs through
# shared memory. Without `tl.dot` there is no tensor-core work either.

# %%
@triton.jit
def matmul_naive_kernel(
    a_ptr, b_ptr, c_ptr,  # A (M, K), B (K, N), C (M, N)
    M, N, K,
    stride_am, stride_ak,  # element strides of A
    stride_bk, stride_bn,  # element strides of B
    stride_cm, stride_cn,  # element strides of C
    BLOCK_N: tl.constexpr,  # output columns per program
    BLOCK_K: tl.constexpr,  # K elements reduced per step
):
    m = tl.program_id(0)  # output row
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)  # (BLOCK_N,)
    offs_k = tl.arange(0, BLOCK_K)  # (BLOCK_K,)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)  # (BLOCK_N,)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k  # (BLOCK_K,)
        a = tl.load(a_ptr + m * stride_am + k * stride_ak, mask=k < K, other=0.0)  # (BLOCK_K,)
        b = tl.load(b_ptr + k[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=(k[:, None] < K) & (offs_n[None, :] < N), other=0.0)  # (BLOCK_K, BLOCK_N)
        acc += tl.sum(a.to(tl.float32)[:, None] * b.to(tl.float32), axis=0)  # (BLOCK_N,) fp32 FMAs
    tl.store(c_ptr + m * stride_cm + offs_n * stride_cn, acc.to(c_ptr.dtype.element_ty), mask=offs_n < N)


LAST_KERNEL: dict = {}
"""Variant -> the compiled kernel of its latest launch (read by ``compiled_features``)."""
LAST_CONFIG: dict = {}
"""Variant -> the configuration its latest autotuned launch ran with."""

NAIVE = dict(BLOCK_N=32, BLOCK_K=16, num_warps=4) if CPU else dict(BLOCK_N=128, BLOCK_K=32, num_warps=4)


def matmul_naive(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """C = A·B with :func:`matmul_naive_kernel`.

    a: (M, K), b: (K, N), any strides, same dtype (fp32, fp16 or bf16). Returns C (M, N) in
    that dtype, accumulated in fp32 on the CUDA cores. Raises ValueError on bad shapes.
    """
    M, N, K = check_operands(a, b)
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (M, triton.cdiv(N, NAIVE["BLOCK_N"]))
    LAST_KERNEL["naive"] = matmul_naive_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),
                                                     b.stride(1), c.stride(0), c.stride(1), **NAIVE)
    return c


# %% [markdown]
# ### Version 2: tiled, with `tl.dot`
#
# Each program owns a BLOCK_M × BLOCK_N tile of C. It walks K in BLOCK_K slices, loading a
# (BLOCK_M, BLOCK_K) tile of A and a (BLOCK_K, BLOCK_N) tile of B into shared memory and
# multiplying them with `tl.dot`, which Triton lowers to tensor-core instructions (`wgmma`
# on Hopper) and pipelines over `num_stages` buffers so that the next loads overlap this
# step's math. Each element of A that is loaded is used BLOCK_N times and each element of B
# BLOCK_M times; version 1 used each load of B once, so B traffic drops by BLOCK_M. The
# accumulator stays fp32 in registers whatever the input dtype, and is rounded to the
# output dtype once, at the end.
#
# Programs are numbered in row-major order over the tiles of C. Rows past M and columns
# past N are wrapped round with `% M` and `% N`, so the loads need only a K mask; the
# wrapped results are never stored.
#
# `input_precision` only matters for fp32 operands: `"tf32"` reduces each input to tf32
# (10 mantissa bits instead of 23; Triton's documentation warns that it may truncate rather
# than round) and does one tensor-core product, which is what cuBLAS does for fp32 under
# `torch.backends.cuda.matmul.allow_tf32 = True`; `"tf32x3"` splits each input into a tf32
# high part and a tf32 remainder and does three products, close to fp32 accuracy for about
# three times the work; `"ieee"` keeps true fp32 and runs on the CUDA cores. All fp32
# kernels here use `"tf32"`; section 4 measures what the other two cost.

# %%
@triton.jit
def matmul_tile(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    pid_m, pid_n,  # which tile of C: rows pid_m*BLOCK_M.., columns pid_n*BLOCK_N..
    BLOCK_M: tl.constexpr,  # rows of C per program
    BLOCK_N: tl.constexpr,  # columns of C per program
    BLOCK_K: tl.constexpr,  # K slice per tl.dot; BLOCK_K * element size = 128 bytes here
    INPUT_PRECISION: tl.constexpr,  # "tf32", "tf32x3" or "ieee" for fp32 inputs; ignored otherwise
):
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # (BLOCK_M,)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)  # (BLOCK_N,)
    offs_k = tl.arange(0, BLOCK_K)  # (BLOCK_K,)
    rows = offs_m % M  # wrapped: in bounds, so A loads need no M mask
    cols = offs_n % N  # wrapped: in bounds, so B loads need no N mask
    a_ptrs = a_ptr + rows[:, None] * stride_am + offs_k[None, :] * stride_ak  # (BLOCK_M, BLOCK_K)
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + cols[None, :] * stride_bn  # (BLOCK_K, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # (BLOCK_M, BLOCK_N) fp32 accumulator
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K  # K elements not yet reduced
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)  # (BLOCK_M, BLOCK_K)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)  # (BLOCK_K, BLOCK_N)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)  # (BLOCK_M, BLOCK_N)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn  # (BLOCK_M, BLOCK_N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def matmul_tiled_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    INPUT_PRECISION: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)  # tiles along a row of C
    pid_m = pid // num_pid_n  # row-major launch order
    pid_n = pid % num_pid_n
    matmul_tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K, INPUT_PRECISION)


FP32_PRECISION = "tf32"  # tl.dot input_precision of every fp32 kernel below (fp16/bf16 ignore it)


def fixed_tile(dtype: torch.dtype) -> dict:
    """The one configuration versions 2 and 3 run with: 128×128 tiles, BLOCK_K of 128 bytes
    (64 for 16-bit types, 32 for fp32), 8 warps, 3 stages; tiny tiles in CPU mode."""
    if CPU:
        return dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, num_warps=4, num_stages=1)
    return dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=128 // dtype.itemsize, num_warps=8, num_stages=3)


def launch_tiles(kernel, name: str, a: torch.Tensor, b: torch.Tensor, precision: str | None, **extra) -> torch.Tensor:
    """C = A·B with ``kernel`` (one program per tile of :func:`fixed_tile`), recorded as ``name``.
    a: (M, K), b: (K, N), any strides, same dtype. Raises ValueError on bad shapes."""
    M, N, K = check_operands(a, b)
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    cfg = fixed_tile(a.dtype)
    grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
    LAST_KERNEL[name] = kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                     c.stride(0), c.stride(1), INPUT_PRECISION=precision or FP32_PRECISION,
                                     **cfg, **extra)
    return c


def matmul_tiled(a: torch.Tensor, b: torch.Tensor, precision: str | None = None) -> torch.Tensor:
    """C = A·B with :func:`matmul_tiled_kernel` (row-major tile order), in a's dtype,
    accumulated in fp32. ``precision`` overrides the ``tl.dot`` input_precision."""
    return launch_tiles(matmul_tiled_kernel, "tiled", a, b, precision)


# %% [markdown]
# ### Version 3: grouped ordering for L2 reuse
#
# The tiles run in waves: as many programs as fit on the SMs at once. In row-major order
# one wave covers one or two rows of tiles, so it needs a few row panels of A but *every*
# column panel of B. When B is larger than L2, each wave streams all of B from HBM again.
# Grouped ordering numbers the tiles down columns inside bands of GROUP_SIZE_M tile rows:
# a wave then covers a squarer patch of C, which needs GROUP_SIZE_M row panels of A and
# only wave ÷ GROUP_SIZE_M column panels of B. The kernel is version 2 with only the
# program-to-tile mapping changed. The mapping, `grouped_tile`, lives in
# `worklog_gen.kit.gemm` because the persistent kernel uses it too:

# %%
display(python_source(grouped_tile))


@triton.jit
def matmul_grouped_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,  # tile rows per band of the launch order
    INPUT_PRECISION: tl.constexpr,
):
    pid_m, pid_n = grouped_tile(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_SIZE_M)
    matmul_tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K, INPUT_PRECISION)


GROUP_SIZE_M = 3 if CPU else 8  # 3 in CPU mode so the last band of the test shapes is a short one


def matmul_grouped(a: torch.Tensor, b: torch.Tensor, precision: str | None = None) -> torch.Tensor:
    """C = A·B with :func:`matmul_grouped_kernel`: :func:`fixed_tile` and GROUP_SIZE_M bands.
    Same contract as :func:`matmul_tiled`."""
    return launch_tiles(matmul_grouped_kernel, "grouped", a, b, precision, GROUP_SIZE_M=GROUP_SIZE_M)


# %% [markdown]
# How much can the order save? The cell below counts, in Python, the operand panels each
# wave touches under both orders (`tile_order`, the arithmetic of `grouped_tile`). It is an
# upper bound on HBM traffic, since it assumes nothing survives in L2 from one wave to the
# next; that matters only when the operands are larger than L2.

# %% tags=["hide-input"] summary="The traffic model: operand panels read per wave, both orders"
SMEM_PER_SM = 227 * 1024  # bytes of shared memory one block may use on sm_90 (CUDA C Programming Guide, CC 9.0)


def wave_traffic_bytes(M: int, N: int, K: int, elem: int, group_size_m: int, cfg: dict) -> tuple[float, int]:
    """Upper bound on operand bytes read from HBM: per wave of resident programs, one read of
    every row panel of A (BLOCK_M × K) and column panel of B (K × BLOCK_N) the wave touches.

    Resident programs = NUM_SMS × (shared memory per SM // shared memory of one program's
    num_stages buffers). Returns (bytes, programs per wave).
    """
    smem = cfg["num_stages"] * (cfg["BLOCK_M"] + cfg["BLOCK_N"]) * cfg["BLOCK_K"] * elem
    wave = NUM_SMS * max(1, SMEM_PER_SM // smem)
    order = tile_order(triton.cdiv(M, cfg["BLOCK_M"]), triton.cdiv(N, cfg["BLOCK_N"]), group_size_m)
    total = 0
    for start in range(0, len(order), wave):
        chunk = order[start:start + wave]
        rows, cols = {m for m, _ in chunk}, {n for _, n in chunk}
        total += (len(rows) * cfg["BLOCK_M"] + len(cols) * cfg["BLOCK_N"]) * K * elem
    return total, wave


traffic_model = []
if not CPU:
    cfg = fixed_tile(torch.bfloat16)
    for n in SQUARES:
        row_major, wave = wave_traffic_bytes(n, n, n, 2, 1, cfg)
        grouped, _ = wave_traffic_bytes(n, n, n, 2, GROUP_SIZE_M, cfg)
        traffic_model.append({"n": n, "wave": wave, "row_major_gb": row_major / 1e9, "grouped_gb": grouped / 1e9,
                              "saving": row_major / grouped, "b_mib": n * n * 2 / 2**20,
                              "b_fits_l2": bool(L2_BYTES and n * n * 2 <= L2_BYTES),
                              "row_major_hbm_ms": row_major / (ceilings.copy_gbps * 1e6)})
    save_data("traffic_model.csv", traffic_model)
    display(table(traffic_model, {"n": "M = N = K", "wave": "programs per wave", "row_major_gb": "row-major GB",
                                  "grouped_gb": "grouped GB", "saving": "saving", "b_mib": "B, MiB",
                                  "b_fits_l2": "B fits in L2", "row_major_hbm_ms": "row-major reads at HBM rate, ms"},
                  {"row_major_gb": ".2f", "grouped_gb": ".2f", "saving": ".1f", "b_mib": ".0f",
                   "row_major_hbm_ms": ".3f"},
                  caption="bf16, 128×128 tiles. Prediction: grouping pays only where B exceeds L2 and the "
                          "row-major reads take a sizeable share of the compute time; below that L2 absorbs "
                          "the repeats and both orders tie."))

# %% [markdown]
# ### Version 4: autotuned for Hopper
#
# The best tile shape depends on the problem size and dtype: big tiles reuse more but leave
# SMs idle when there are few tiles, and `num_stages` trades shared memory for latency
# hiding. `triton.autotune` times each configuration on the first call for every
# (M, N, K, dtype) and caches the winner. The list is short on purpose, because every entry
# is compiled: 128×256 and 256×128 tiles with 8 warps (two warp groups, each issuing
# 64-row `wgmma`s), 128×128 tiles with 4 or 8 warps, and one 64×128 tile for small
# problems. BLOCK_K is 128 bytes wide (64 elements of bf16/fp16, 32 of fp32), which matches
# the 128-byte shared-memory swizzle the tensor cores read from. The pruning function,
# `keep_configs` from `worklog_gen.kit.gemm`, keeps the entries that suit the dtype.

# %%
if CPU:
    AUTOTUNE_CONFIGS = hopper_configs([(32, 32, 16)], [(1, 4)], GROUP_SIZE_M)
else:
    AUTOTUNE_CONFIGS = []
    for bk in (64, 32):  # 128 bytes of bf16/fp16, 128 bytes of fp32
        AUTOTUNE_CONFIGS += hopper_configs([(128, 256, bk), (256, 128, bk)], [(3, 8)])
        AUTOTUNE_CONFIGS += hopper_configs([(128, 128, bk)], [(4, 8), (4, 4)])
        AUTOTUNE_CONFIGS += hopper_configs([(64, 128, bk)], [(4, 4)])

# Same kernel as version 3; the autotuner supplies BLOCK_*, GROUP_SIZE_M, num_warps and num_stages.
matmul_autotuned_kernel = triton.autotune(configs=AUTOTUNE_CONFIGS, key=["M", "N", "K"],
                                          prune_configs_by={"early_config_prune": keep_configs})(matmul_grouped_kernel)


def matmul_autotuned(a: torch.Tensor, b: torch.Tensor, config: triton.Config | None = None) -> torch.Tensor:
    """C = A·B with the grouped kernel, autotuned per (M, N, K, dtype) over AUTOTUNE_CONFIGS,
    or run with ``config`` when one is given. Same contract as :func:`matmul_tiled`."""
    M, N, K = check_operands(a, b)
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    if config is None:
        grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)  # noqa: E731
        LAST_KERNEL["autotuned"] = matmul_autotuned_kernel[grid](*args, INPUT_PRECISION=FP32_PRECISION)
        LAST_CONFIG["autotuned"] = matmul_autotuned_kernel.best_config
    else:
        grid = (triton.cdiv(M, config.kwargs["BLOCK_M"]) * triton.cdiv(N, config.kwargs["BLOCK_N"]),)
        LAST_KERNEL["autotuned"] = matmul_grouped_kernel[grid](*args, INPUT_PRECISION=FP32_PRECISION,
                                                               **launch_options(config))
    return c


# %% [markdown]
# ## 3. Correctness on irregular shapes
#
# Every version against an fp64 reference on shapes that no block size divides
# (1000 × 1023 × 517 on the GPU; tiny ones such as 67 × 45 × 33 in CPU mode), on random
# normal inputs, reporting ‖out − ref‖ / ‖ref‖; `torch.matmul`'s own error at the same
# dtype is shown for scale. The autotuned version runs with one fixed configuration here
# (the smallest tile its pruning keeps); the benchmark also checks the configuration the
# autotuner picks, against `torch.matmul`, at every size before timing it.

# %% tags=["hide-input"] summary="Check every version against an fp64 reference"
VARIANTS = {"naive": matmul_naive, "tiled": matmul_tiled, "grouped": matmul_grouped, "autotuned": matmul_autotuned}
CHECK_SHAPES = [(67, 45, 33), (129, 67, 70)] if CPU else [(1000, 1023, 517)]


def fixed_config_variant(name: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Run variant ``name`` on (a, b); the autotuned one with its smallest kept tile."""
    if name == "autotuned":
        return matmul_autotuned(a, b, config=check_config(AUTOTUNE_CONFIGS, a))
    return VARIANTS[name](a, b)


correctness = []
for M, N, K in CHECK_SHAPES:
    for dtype_name, dtype in DTYPES.items():
        a = torch.randn(M, K, device=DEVICE, dtype=dtype)
        b = torch.randn(N, K, device=DEVICE, dtype=dtype).T  # (K, N) view of a row-major (N, K) weight
        ref = a.double() @ b.double()  # (M, N) fp64 reference
        errors = {name: rel_err(fixed_config_variant(name, a, b), ref) for name in VARIANTS}
        if not CPU:
            errors[TORCH] = rel_err(torch.matmul(a, b), ref)
        correctness += [{"shape": f"{M}x{N}x{K}", "dtype": dtype_name, "variant": name, "rel_err": err,
                         "tol": TOL[dtype_name]} for name, err in errors.items()]
save_data("correctness.csv", correctness)
display(table(correctness, {"shape": "M x N x K", "dtype": "dtype", "variant": "version", "rel_err": "‖out−ref‖/‖ref‖",
                            "tol": "bound"}, {"rel_err": ".1e", "tol": ".0e"}))
bad = [r for r in correctness if r["variant"] != TORCH and not r["rel_err"] < r["tol"]]
assert not bad, f"relative error above bound: {bad}"

# %% [markdown]
# ## 4. Benchmark
#
# Each measurement is `do_bench`'s median with the 20th and 80th percentiles (the L2 cache
# is flushed before every call), converted to TFLOP/s with 2·M·N·K. `torch.matmul` runs in
# the same loop on the same tensors. Before a Triton version is timed at a size, its output
# there is compared with `torch.matmul`'s (the first call also runs the autotuner).
#
# - bf16, squares 256 … 8192: every version. The naive kernel only up to 2048: it rereads
#   B once per output row, so 4096 and 8192 would cost seconds of GPU time for a point
#   that says nothing new.
# - fp16 and fp32-through-tf32, squares 1024 … 8192: the autotuned version.
# - fp32 at 4096: the grouped kernel with each `input_precision`, against `torch.matmul`
#   with tf32 allowed and not allowed, with the error of each against fp64.

# %% tags=["hide-input"] summary="The sweep: every version, checked against torch, then timed"
NAIVE_MAX = 2048


def measure(dtype_name: str, n: int, names: list[str]) -> list[dict]:
    """Benchmark rows of ``names`` and torch.matmul at M = N = K = n, each with ``n``."""
    rows = benchmark_shape(DTYPES[dtype_name], dtype_name, str(n), n, n, n, {name: VARIANTS[name] for name in names},
                           last_kernel=LAST_KERNEL, last_config=LAST_CONFIG)
    return [dict(r, n=n) for r in rows]


results = []
if CPU:
    print("benchmarks: skipped in CPU mode")
else:
    for n in SQUARES:
        results += measure("bf16", n, [v for v in VARIANTS if v != "naive" or n <= NAIVE_MAX])
    for dtype_name in ("fp16", "tf32"):
        for n in SQUARES[2:]:
            results += measure(dtype_name, n, ["autotuned"])
    save_data("benchmark.csv", results)
    display(table([r for r in results if r["dtype"] == "bf16" and r["n"] == 4096],
                  {"provider": "version", "tflops": "TFLOP/s", "config": "configuration", "compiled": "compiled to"},
                  {"tflops": ".0f"}, caption="bf16, 4096: what each version compiled to. Every point of the sweep is "
                                             "in the charts below and in data/benchmark.csv."))

# %% tags=["hide-input"] summary="fp32 at 4096: what each input_precision costs"
precision_rows = []
if CPU:
    print("input_precision comparison: skipped in CPU mode (the interpreter computes every dot in fp32)")
else:
    n = 4096
    a = torch.randn(n, n, device=DEVICE, dtype=torch.float32)
    b = torch.randn(n, n, device=DEVICE, dtype=torch.float32).T
    ref = a.double() @ b.double()
    runs = {f"grouped {p}": (lambda p=p: matmul_grouped(a, b, precision=p)) for p in ("tf32", "tf32x3", "ieee")}
    runs["torch allow_tf32=True"] = lambda: torch.matmul(a, b)
    runs["torch allow_tf32=False"] = lambda: torch.matmul(a, b)
    for label, fn in runs.items():
        torch.backends.cuda.matmul.allow_tf32 = not label.endswith("False")
        err, t = rel_err(fn(), ref), bench(fn)
        precision_rows.append({"provider": label, "n": n, "ms": t.ms, "tflops": tflops(matmul_flops(n, n, n), t.ms),
                               "rel_err": err})
    torch.backends.cuda.matmul.allow_tf32 = True  # restored for the rest of the notebook
    del a, b, ref
    save_data("precision.csv", precision_rows)
    display(table(precision_rows, {"provider": "fp32, 4096", "tflops": "TFLOP/s", "rel_err": "‖out−ref‖/‖ref‖"},
                  {"tflops": ".1f", "rel_err": ".1e"}))

# %% [markdown]
# ### The progression, bf16
#
# One line per version, TFLOP/s against the square size, with the 20–80 % quantile band.

# %% tags=["hide-input"] summary="Plot the bf16 sweep"
chart = None
if results:
    chart = benchmark_chart([r for r in results if r["dtype"] == "bf16"], x="n", y="tflops", provider="provider",
                            y_lo="tflops_lo", y_hi="tflops_hi", xlabel="M = N = K",
                            ylabel="TFLOP/s (bf16 in, fp32 accumulate)",
                            title=f"bf16 matmul, four versions against torch.matmul, {ceilings.device}")
chart

# %% [markdown]
# ### fp16 and fp32 through tf32
#
# The autotuned version and `torch.matmul` (with `allow_tf32 = True` for fp32).

# %% tags=["hide-input"] summary="Plot fp16 and tf32"
chart = None
if results:
    rows = [dict(r, series=f"{r['dtype']}: {r['provider']}") for r in results if r["dtype"] in ("fp16", "tf32")]
    chart = benchmark_chart(rows, x="n", y="tflops", provider="series", y_lo="tflops_lo", y_hi="tflops_hi",
                            xlabel="M = N = K", ylabel="TFLOP/s",
                            title=f"fp16 and tf32 matmul against torch.matmul, {ceilings.device}")
chart

# %% [markdown]
# ## 5. Roofline
#
# Each version as a point at its arithmetic intensity (compulsory bytes) against the
# measured roofs: the bf16 progression at 4096 (the naive kernel at 2048), fp16 and tf32
# at 4096, and the fp32 `ieee` kernel, which runs on the CUDA cores and is held against
# the fp32 roof.

# %% tags=["hide-input"] summary="Roofline points"
def row(dtype_name: str, n: int, provider: str) -> dict:
    return next(r for r in results if r["dtype"] == dtype_name and r["n"] == n and r["provider"] == provider)


def point(r: dict, label: str, roof: str) -> RooflinePoint:
    return RooflinePoint(label=label, flops=r["flops"], nbytes=r["nbytes"], ms=r["ms"], roof=roof, topic=TOPIC,
                         ms_lo=r["ms_lo"], ms_hi=r["ms_hi"], size=f"{r['n']}x{r['n']}x{r['n']}", dtype=r["dtype"])


chart = None
if results:
    points = [point(row("bf16", 2048, "naive"), "bf16 2048 naive", "bf16")]
    points += [point(row("bf16", 4096, p), f"bf16 4096 {p}", "bf16") for p in [*list(VARIANTS)[1:], TORCH]]
    points += [point(row(d, 4096, p), f"{d} 4096 {p}", ROOF[d]) for d in ("fp16", "tf32") for p in ("autotuned", TORCH)]
    ieee = next(r for r in precision_rows if r["provider"] == "grouped ieee")
    n = ieee["n"]
    points.append(RooflinePoint(label=f"fp32 {n} grouped, input_precision=ieee", flops=matmul_flops(n, n, n),
                                nbytes=compulsory_bytes(n, n, n, 4), ms=ieee["ms"], roof="fp32", topic=TOPIC,
                                size=f"{n}x{n}x{n}", dtype="fp32"))
    save_roofline(points, ceilings)
    chart = roofline_chart(points, ceilings, roofs=("bf16", "tf32", "fp32"),
                           title=f"Tiled matmul on {ceilings.device}: every version against the measured roofs")
else:
    print("roofline: skipped in CPU mode")
chart

# %% [markdown]
# ## 6. Headline figures, timed in pairs
#
# The sweep times each provider once, one after the other: good enough for the plots, not
# for a ratio. Under these loads the card runs at its power limit and its SM clock wanders
# by several percent within a minute, so two medians taken seconds apart carry that drift
# into their ratio. Each headline is therefore `torch.matmul`'s time over version 4's,
# timed in **pairs** (`worklog_gen.kit.paired`): each round times the two back to back
# on the same inputs, alternating which goes first, and the headline is the median ratio
# over the rounds, with their minimum and maximum as its spread. Version 4 runs with the
# configuration its autotuner picked, as a user would get it.

# %% tags=["hide-input"] summary="Headline figures: version 4 against cuBLAS, paired"
HEADLINE_ROUNDS = 11
HEADLINES = {"autotuned_bf16_4096_vs_torch": ("bf16", 4096), "autotuned_bf16_8192_vs_torch": ("bf16", 8192),
             "autotuned_tf32_4096_vs_torch": ("tf32", 4096)}
GOAL = 0.75  # the prediction of section 1: within 25 % of cuBLAS
paired = {}
if CPU:
    print("headline figures: skipped in CPU mode")
else:
    naive, tiled = row("bf16", 2048, "naive"), row("bf16", 2048, "tiled")
    headline("tiled_vs_naive_bf16_2048", naive["ms"] / tiled["ms"], "x",
             "naive kernel time / tiled kernel time, bf16 M=N=K=2048, do_bench medians from the sweep",
             label="Version 2 (tiled) over version 1 (naive), bf16 2048", goal=10, baseline="version 1, same run")
    for name, (dtype_name, n) in HEADLINES.items():
        a = torch.randn(n, n, device=DEVICE, dtype=DTYPES[dtype_name])
        b = torch.randn(n, n, device=DEVICE, dtype=DTYPES[dtype_name]).T
        matmul_autotuned(a, b)  # the autotuner's pick for this size, cached from the sweep
        config = LAST_CONFIG["autotuned"]
        p = paired[name] = paired_ratio(lambda: torch.matmul(a, b), lambda: matmul_autotuned(a, b, config=config),
                                        rounds=HEADLINE_ROUNDS)
        headline(name, p.ratio, "x",
                 f"median over {HEADLINE_ROUNDS} paired rounds of torch.matmul time / version 4 time, {dtype_name} "
                 f"M=N=K={n}, {config_label(config)}, spread {p.spread()}",
                 label=f"Version 4 (autotuned), {dtype_name} {n}", goal=GOAL,
                 baseline=f"torch.matmul (cuBLAS), paired, {tflops(matmul_flops(n, n, n), p.baseline_ms):.0f} TFLOP/s")
        del a, b
    display(table([{"headline": k, "ratio": p.ratio, "spread": p.spread(),
                    "torch_tflops": tflops(matmul_flops(*(HEADLINES[k][1],) * 3), p.baseline_ms),
                    "ours_tflops": tflops(matmul_flops(*(HEADLINES[k][1],) * 3), p.candidate_ms)}
                   for k, p in paired.items()],
                  {"headline": "headline", "ratio": "torch / ours", "spread": "spread", "torch_tflops": "torch TFLOP/s",
                   "ours_tflops": "version 4 TFLOP/s"}, {"ratio": ".3f", "torch_tflops": ".0f", "ours_tflops": ".0f"}))

# %% [markdown]
# ## 7. What the numbers say
#
# - **Naive → tiled.** The naive kernel rereads B once per output row and does its
#   multiply-adds on the CUDA cores; tiling cuts B traffic by BLOCK_M and moves the math to
#   the tensor cores, so this is the largest step of the progression.
# - **Tiled → grouped.** The same tiles in another order: any difference is L2 hit rate,
#   and the traffic model says where it can matter (operands larger than L2).
# - **Grouped → autotuned.** Operand loads per FLOP scale as (BLOCK_M + BLOCK_N) ÷
#   (BLOCK_M · BLOCK_N), so a 128×256 tile loads a quarter less per FLOP than a 128×128 one,
#   and deeper pipelines hide more latency; small sizes prefer smaller tiles that keep all
#   SMs busy.
# - **What is left.** Every version here computes addresses in the same warps that issue
#   the tensor-core math, and launches one program per tile, so each tile pays its own
#   prologue and epilogue. The [persistent matmul](persistent-matmul.md) page removes both,
#   with TMA copies and one long-lived program per SM.
#
# The figures of this run:

# %% tags=["hide-input"] summary="The numbers of this run"
if CPU:
    display(prose("CPU mode: the kernels were checked; nothing was timed, so there are no figures."))
else:
    def ratio(dtype_name: str, n: int, num: str, den: str) -> float:
        return row(dtype_name, n, num)["tflops"] / row(dtype_name, n, den)["tflops"]

    naive = row("bf16", 2048, "naive")
    lines = [f"- **Naive**, bf16 2048: {naive['tflops']:.1f} TFLOP/s, {naive['tflops'] / ceilings.fp32_tflops:.0%} of "
             f"the fp32 CUDA-core roof; tiled is {ratio('bf16', 2048, 'tiled', 'naive'):.0f}× faster."]
    lines += [f"- **Grouped / tiled** at {m['n']}: {ratio('bf16', m['n'], 'grouped', 'tiled'):.3f}× measured; the "
              f"model's row-major order reads {m['saving']:.1f}× the bytes (B {m['b_mib']:.0f} MiB, "
              f"{'fits in' if m['b_fits_l2'] else 'exceeds'} L2)." for m in traffic_model if m["n"] >= 2048]
    lines += [f"- **Autotuned / grouped** at {n}: {ratio('bf16', n, 'autotuned', 'grouped'):.2f}× with "
              f"{row('bf16', n, 'autotuned')['config']}." for n in (4096, 8192)]
    for n in SQUARES:
        best = max((r for r in results if r["dtype"] == "bf16" and r["n"] == n and r["provider"] != TORCH),
                   key=lambda r: r["tflops"])
        floor = next(r for r in napkin if r["dtype"] == "bf16" and r["n"] == n)["floor_ms"]
        lines.append(f"- bf16 {n}: best version {best['provider']}, {best['tflops']:.0f} TFLOP/s = "
                     f"{best['tflops'] / row('bf16', n, TORCH)['tflops']:.2f}× torch (unpaired), "
                     f"{best['ms'] / floor:.1f}× the roofline floor.")
    base = next(r for r in precision_rows if r["provider"] == "grouped tf32")
    lines += [f"- fp32 4096, {r['provider']}: {r['tflops'] / base['tflops']:.2f}× the speed of grouped tf32, "
              f"error {r['rel_err']:.1e}." for r in precision_rows[1:]]
    lines.append("- **Paired headlines** against the prediction (within 25 % of cuBLAS): " + "; ".join(
        f"{k} {p.ratio:.3f}× [{p.spread()}] ({'met' if p.ratio >= GOAL else 'missed'})" for k, p in paired.items()))
    display(prose("\n".join(lines)))
