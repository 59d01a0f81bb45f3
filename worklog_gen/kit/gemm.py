"""What the two matmul notebooks share: GEMM arithmetic, operand checks, the grouped tile
order, Hopper configuration lists and their pruning, and reading a compiled kernel.

``tiled_matmul.py`` teaches versions 1–4 (naive → autotuned) and ``persistent_matmul.py``
version 5 (persistent, TMA, warp specialization); both import this module, so the freeze
stales both when its code changes.

Importing it imports torch and triton.
"""

from __future__ import annotations

import re

import torch
import triton
import triton.language as tl

SQUARES = [256, 512, 1024, 2048, 4096, 8192]
"""M = N = K of the square benchmark sizes."""

LLM_SHAPES = {
    "Llama-2-7B MLP up 4096x11008x4096": (4096, 11008, 4096),
    "Llama-2-7B MLP down 4096x4096x11008": (4096, 4096, 11008),
    "Llama-3-8B MLP up 4096x14336x4096": (4096, 14336, 4096),
}
"""(M, N, K) of the MLP layers of real models at M = 4096 tokens: hidden size 4096 and MLP
width 11008 (Llama-2-7B's published model config) and 14336 (Llama-3-8B's)."""

ELEM = {"bf16": 2, "fp16": 2, "tf32": 4, "fp32": 4}
"""Bytes per element of each dtype name (tf32 is fp32 in memory)."""

ROOF = {"bf16": "bf16", "fp16": "bf16", "tf32": "tf32", "fp32": "fp32"}
"""The measured compute roof each dtype is held against. fp16 uses the bf16 roof: Hopper's
dense fp16 and bf16 tensor-core rates are equal (H100/H200 datasheets), and only bf16 is
measured."""

TOL = {"bf16": 1e-2, "fp16": 2e-3, "tf32": 5e-3, "fp32": 1e-5}
"""Bounds on ‖out − ref‖ / ‖ref‖ against an fp64 reference: output rounding dominates for
bf16 (8 mantissa bits) and fp16 (11); tf32 cuts the inputs to 11 bits; fp32 is the
interpreter's fp32 dot."""

TOL_VS_TORCH = {k: 2 * v for k, v in TOL.items()}
"""Bounds against ``torch.matmul``'s output: two roundings (ours and cuBLAS's) instead of one."""

TORCH = "torch (cuBLAS)"
"""The provider name of ``torch.matmul`` in benchmark rows."""

MAX_ACC_REGS = 128
"""fp32 accumulator registers per thread a configuration may need without warp
specialization: half of sm_90's 255-register limit per thread (CUDA C Programming Guide,
compute capability 9.0), leaving the rest for addresses and operands."""


def matmul_dtypes(interpret: bool) -> dict[str, torch.dtype]:
    """Dtype name -> operand dtype a notebook checks and times: bf16, fp16 and fp32 (named tf32:
    every fp32 kernel here uses tf32 tensor cores) on a GPU; fp32 and fp16 under
    ``TRITON_INTERPRET=1``, whose numpy has no bfloat16."""
    if interpret:
        return {"fp32": torch.float32, "fp16": torch.float16}
    return {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}


def matmul_flops(M: int, N: int, K: int) -> int:
    """FLOPs of C = A·B: one multiply and one add per (m, n, k), so 2·M·N·K."""
    return 2 * M * N * K


def compulsory_bytes(M: int, N: int, K: int, elem: int) -> int:
    """Bytes any matmul must move: read A (M×K) and B (K×N) once, write C (M×N) once;
    ``elem`` is the element size in bytes."""
    return elem * (M * K + K * N + M * N)


def check_operands(a: torch.Tensor, b: torch.Tensor) -> tuple[int, int, int]:
    """(M, N, K) of C = A·B for a (M, K) and b (K, N).

    Raises ValueError on operands that are not 2-D, whose inner sizes differ, or whose
    dtypes differ.
    """
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"need A (M, K) and B (K, N), got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise ValueError(f"A and B must share a dtype, got {a.dtype} and {b.dtype}")
    return a.shape[0], b.shape[1], a.shape[1]


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ (Frobenius norms, computed in fp64)."""
    ref = ref.double()
    return ((out.double() - ref).norm() / ref.norm()).item()


@triton.jit
def grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M: tl.constexpr):
    """(pid_m, pid_n) of tile ``tile_id`` when tiles are numbered down columns inside bands
    of GROUP_SIZE_M tile rows (the last band may be shorter)."""
    num_pid_in_group = GROUP_SIZE_M * num_pid_n  # tiles in one band
    first_pid_m = (tile_id // num_pid_in_group) * GROUP_SIZE_M  # first tile row of this band
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_SIZE_M)  # rows in this band
    local = tile_id % num_pid_in_group  # position inside the band
    pid_m = first_pid_m + local % group_size_m
    pid_n = local // group_size_m
    return pid_m, pid_n


def tile_order(num_pid_m: int, num_pid_n: int, group_size_m: int) -> list[tuple[int, int]]:
    """(pid_m, pid_n) of each program id in launch order, by the arithmetic of
    :func:`grouped_tile`; group_size_m = 1 gives row-major order."""
    order = []
    for pid in range(num_pid_m * num_pid_n):
        in_group = group_size_m * num_pid_n
        first = (pid // in_group) * group_size_m
        size = min(num_pid_m - first, group_size_m)
        order.append((first + (pid % in_group) % size, (pid % in_group) // size))
    return order


def hopper_configs(shapes, stages_warps, group_size_m: int = 8, **extra) -> list[triton.Config]:
    """One ``triton.Config`` per (BLOCK_M, BLOCK_N, BLOCK_K) in ``shapes`` and (num_stages,
    num_warps) in ``stages_warps``, with GROUP_SIZE_M and any ``extra`` constexprs."""
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": group_size_m, **extra},
                          num_stages=s, num_warps=w)
            for bm, bn, bk in shapes for s, w in stages_warps]


def acc_regs(cfg: triton.Config) -> int:
    """fp32 accumulator registers each thread holds when ``cfg``'s num_warps warps share the
    BLOCK_M × BLOCK_N tile: BLOCK_M · BLOCK_N / (32 · num_warps)."""
    return cfg.kwargs["BLOCK_M"] * cfg.kwargs["BLOCK_N"] // (32 * cfg.num_warps)


def keep_configs(configs, named_args, **kwargs) -> list[triton.Config]:
    """Autotune ``early_config_prune``: keep configurations whose BLOCK_K is 128 bytes of the
    operand dtype (the width of the tensor cores' 128-byte shared-memory swizzle).

    Under warp specialization (``WARP_SPECIALIZE=True`` in ``kwargs``) keep only 4-warp ones
    without the epilogue subtile: what Hopper's warp specialization accepts, as checked by
    compiling for sm_90 and in Triton's persistent-matmul tutorial; the compiler then adds two
    consumer warp groups itself. Without it, drop configurations whose accumulator needs more
    than MAX_ACC_REGS registers per thread (:func:`acc_regs`): run without warp
    specialization, the 4-warp 128×256 entries measured 0.13× cuBLAS at 4096 on the H200.

    named_args: the kernel's arguments; the operand dtype is read from ``a_ptr`` or from the
    host descriptor ``a_desc``. Raises ValueError when nothing is kept.
    """
    a = named_args["a_desc"].base if "a_desc" in named_args else named_args["a_ptr"]
    elem = a.element_size()
    ws = bool(kwargs.get("WARP_SPECIALIZE", False))
    kept = [c for c in configs if c.kwargs["BLOCK_K"] * elem == 128
            and not (ws and (c.kwargs.get("EPILOGUE_SUBTILE", False) or c.num_warps != 4))
            and (ws or acc_regs(c) <= MAX_ACC_REGS)]
    if not kept:
        raise ValueError(f"no configuration suits element size {elem} (warp_specialize={ws})")
    return kept


def check_config(configs, a: torch.Tensor, warp_specialize: bool = False) -> triton.Config:
    """The last configuration :func:`keep_configs` keeps for ``a``'s dtype: the lists end
    with their smallest tiles, which fit in shared memory whatever the dtype (for
    fixed-configuration correctness checks)."""
    if len(configs) == 1:
        return configs[0]
    return keep_configs(configs, {"a_ptr": a}, WARP_SPECIALIZE=warp_specialize)[-1]


def config_label(cfg: triton.Config) -> str:
    """e.g. ``128x256x64 w8 s3 g8 subtile``: tile, warps, stages, GROUP_SIZE_M, epilogue subtile."""
    kw = cfg.kwargs
    label = f"{kw['BLOCK_M']}x{kw['BLOCK_N']}x{kw['BLOCK_K']} w{cfg.num_warps} s{cfg.num_stages} g{kw['GROUP_SIZE_M']}"
    return label + (" subtile" if kw.get("EPILOGUE_SUBTILE") else "")


def launch_options(cfg: triton.Config) -> dict:
    """``cfg`` as keyword arguments of a plain (not autotuned) kernel launch."""
    return {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}


def compiled_features(kernel) -> dict:
    """What the compiler made of one launch, read from its PTX and TTGIR.

    kernel: what ``kernel[grid](...)`` returned. Returns ``wgmma`` (tensor-core
    ``wgmma.mma_async``), ``tma`` (``cp.async.bulk.tensor``), ``cp_async`` (``cp.async.ca/cg``
    pipelining), ``warp_specialized`` (a ``ttg.warp_specialize`` region), ``shared_kib`` and
    ``num_warps``; empty under the interpreter, which compiles nothing.
    """
    asm = getattr(kernel, "asm", None)
    if not asm:
        return {}
    ptx, ttgir = asm["ptx"], asm["ttgir"]
    return {"wgmma": "wgmma.mma_async" in ptx, "tma": "cp.async.bulk.tensor" in ptx,
            "cp_async": bool(re.search(r"cp\.async\.c[ag]\.", ptx)), "warp_specialized": "ttg.warp_specialize" in ttgir,
            "shared_kib": kernel.metadata.shared / 1024, "num_warps": kernel.metadata.num_warps}


def features_label(feats: dict) -> str:
    """e.g. ``wgmma+tma+ws 209 KiB w12``: the features of :func:`compiled_features` that are on."""
    if not feats:
        return ""
    on = [name for key, name in (("wgmma", "wgmma"), ("tma", "tma"), ("cp_async", "cp.async"),
                                 ("warp_specialized", "ws")) if feats[key]]
    return f"{'+'.join(on) or 'cuda-cores'} {feats['shared_kib']:.0f} KiB w{feats['num_warps']}"


def benchmark_shape(dtype: torch.dtype, dtype_name: str, shape: str, M: int, N: int, K: int, variants: dict, *,
                    last_kernel: dict, last_config: dict) -> list[dict]:
    """Time each of ``variants`` (name -> ``fn(a, b) -> C``) and ``torch.matmul`` at (M, N, K).

    A is (M, K) and B = Wᵀ for a row-major W (N, K), random normal, on the GPU. Each variant is
    first checked against ``torch.matmul`` (:data:`TOL_VS_TORCH`; the first call also autotunes
    and compiles), then timed with :func:`worklog_gen.kit.measure.bench` (``do_bench`` median and
    20th/80th percentiles, L2 flushed). ``last_kernel`` and ``last_config`` are the notebook's
    records of each variant's latest launch, read after its check for the ``config`` and
    ``compiled`` columns.

    Returns one row per provider: dtype, shape, M, N, K, provider, ms, ms_lo, ms_hi, tflops
    (2·M·N·K / time), tflops_lo, tflops_hi, flops, nbytes (compulsory), config, compiled.
    Raises AssertionError when a variant is off by more than the bound.
    """
    from worklog_gen.kit.measure import bench, tflops

    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn(N, K, device="cuda", dtype=dtype).T
    expected = torch.matmul(a, b)
    flops, nbytes = matmul_flops(M, N, K), compulsory_bytes(M, N, K, ELEM[dtype_name])
    rows = []
    for name in [*variants, TORCH]:
        fn = (lambda: torch.matmul(a, b)) if name == TORCH else (lambda f=variants[name]: f(a, b))
        config = compiled = ""
        if name != TORCH:
            err = rel_err(fn(), expected)
            assert err < TOL_VS_TORCH[dtype_name], f"{name} {dtype_name} {shape}: {err:.2e} from torch"
            config = config_label(last_config[name]) if name in last_config else ""
            compiled = features_label(compiled_features(last_kernel[name]))
        t = bench(fn)
        rows.append({"dtype": dtype_name, "shape": shape, "M": M, "N": N, "K": K, "provider": name,
                     "ms": t.ms, "ms_lo": t.ms_lo, "ms_hi": t.ms_hi, "tflops": tflops(flops, t.ms),
                     "tflops_lo": tflops(flops, t.ms_hi), "tflops_hi": tflops(flops, t.ms_lo),
                     "flops": flops, "nbytes": nbytes, "config": config, "compiled": compiled})
    return rows
