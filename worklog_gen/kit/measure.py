"""Measure the current GPU: its ceilings, and kernel timings.

torch and triton are imported inside the functions, so importing this module is cheap
(the site build reads saved :class:`Ceilings` without either installed).

Units throughout: time in ms, bandwidth in GB/s (1e9 bytes/s), compute in TFLOP/s
(1e12 FLOP/s), arithmetic intensity in FLOP/byte.
"""

from __future__ import annotations

import dataclasses
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable

ROOFS = ("bf16", "tf32", "fp32")
"""Compute roofs a :class:`Ceilings` carries, by the dtype of the operands."""


@dataclass(frozen=True)
class Datasheet:
    """Vendor peak rates of one GPU (dense, no sparsity).

    hbm_gbps: memory bandwidth, GB/s. *_tflops: peak compute, TFLOP/s; fp32 is the
    non-tensor (CUDA core) rate, tf32/bf16/fp16 are tensor-core rates.
    """

    name: str
    hbm_gbps: float
    fp32_tflops: float
    tf32_tflops: float
    bf16_tflops: float
    fp16_tflops: float
    source: str

    def roof_tflops(self, roof: str) -> float:
        """Peak TFLOP/s of the ``roof`` compute roof (one of :data:`ROOFS`).

        Raises:
            ValueError: unknown roof.
        """
        return getattr(self, f"{_check_roof(roof)}_tflops")

    def ridge_point(self, roof: str = "bf16") -> float:
        """FLOP/byte where the datasheet memory roof meets the ``roof`` compute roof."""
        return self.roof_tflops(roof) * 1e3 / self.hbm_gbps


# The NVIDIA datasheets print tensor-core rates *with* 2:4 structured sparsity
# ("* With sparsity"); the dense rate is half of the printed figure, which is what
# we use: tf32 989.4 / 2, bf16 and fp16 1978.9 / 2. fp32 (67 TFLOP/s) is the
# non-tensor rate and is printed dense.
H200_SXM = Datasheet(
    name="NVIDIA H200 SXM",
    hbm_gbps=4800,  # vendor datasheet "GPU memory bandwidth 4.8TB/s"; measured copy is lower
    fp32_tflops=67,  # vendor datasheet, non-tensor FP32
    tf32_tflops=494.7,  # vendor datasheet 989 TFLOP/s with sparsity, halved for dense
    bf16_tflops=989.5,  # vendor datasheet 1,979 TFLOP/s with sparsity, halved for dense
    fp16_tflops=989.5,  # vendor datasheet 1,979 TFLOP/s with sparsity, halved for dense
    source="NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column); tensor rates halved to dense",
)
H100_SXM = Datasheet(
    name="NVIDIA H100 SXM",
    hbm_gbps=3350,  # vendor datasheet "GPU memory bandwidth 3.35TB/s"; measured copy is lower
    fp32_tflops=67,  # vendor datasheet, non-tensor FP32
    tf32_tflops=494.7,  # vendor datasheet 989 TFLOP/s with sparsity, halved for dense
    bf16_tflops=989.5,  # vendor datasheet 1,979 TFLOP/s with sparsity, halved for dense
    fp16_tflops=989.5,  # vendor datasheet 1,979 TFLOP/s with sparsity, halved for dense
    source="NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column); tensor rates halved to dense",
)
H100_PCIE = Datasheet(
    name="NVIDIA H100 PCIe",
    hbm_gbps=2000,  # "2TB/s"
    fp32_tflops=51,
    tf32_tflops=378,  # 756 with sparsity
    bf16_tflops=756.5,  # 1,513 with sparsity
    fp16_tflops=756.5,
    source="NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe column); tensor rates halved to dense",
)
A100_SXM_80GB = Datasheet(
    name="NVIDIA A100 80GB SXM",
    hbm_gbps=2039,
    fp32_tflops=19.5,
    tf32_tflops=156,  # 312 with sparsity
    bf16_tflops=312,  # 624 with sparsity
    fp16_tflops=312,
    source="NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM column); tensor rates halved to dense",
)
A100_PCIE_80GB = Datasheet(
    name="NVIDIA A100 80GB PCIe",
    hbm_gbps=1935,
    fp32_tflops=19.5,
    tf32_tflops=156,
    bf16_tflops=312,
    fp16_tflops=312,
    source="NVIDIA A100 Tensor Core GPU datasheet (A100 80GB PCIe column); tensor rates halved to dense",
)
A100_40GB = Datasheet(
    name="NVIDIA A100 40GB",
    hbm_gbps=1555,
    fp32_tflops=19.5,
    tf32_tflops=156,
    bf16_tflops=312,
    fp16_tflops=312,
    source="NVIDIA A100 Tensor Core GPU Architecture whitepaper (A100 40GB: 1,555 GB/s; the same peak rates "
           "as the 80GB boards)",
)
L4 = Datasheet(
    name="NVIDIA L4",
    hbm_gbps=300,  # GDDR6, not HBM: the memory roof all the same
    fp32_tflops=30.3,
    tf32_tflops=60,  # 120 with sparsity
    bf16_tflops=121,  # 242 with sparsity
    fp16_tflops=121,
    source="NVIDIA L4 Tensor Core GPU datasheet; tensor rates halved to dense",
)
L40S = Datasheet(
    name="NVIDIA L40S",
    hbm_gbps=864,  # GDDR6
    fp32_tflops=91.6,
    tf32_tflops=183,  # printed dense (366 with sparsity)
    bf16_tflops=362.05,  # printed dense (733 with sparsity)
    fp16_tflops=362.05,
    source="NVIDIA L40S datasheet (the dense figures it prints beside the sparse ones)",
)
RTX_4090 = Datasheet(
    name="NVIDIA GeForce RTX 4090",
    hbm_gbps=1008,  # GDDR6X
    fp32_tflops=82.6,
    tf32_tflops=82.6,
    bf16_tflops=165.2,  # with FP32 accumulate, as torch and Triton accumulate; 330.3 with FP16 accumulate
    fp16_tflops=165.2,
    source="NVIDIA Ada Lovelace GPU architecture whitepaper, appendix A (GeForce RTX 4090; tensor rates dense, "
           "FP32 accumulate)",
)
B200 = Datasheet(
    name="NVIDIA B200",
    hbm_gbps=8000,  # 64 TB/s for the 8 GPUs
    fp32_tflops=75,  # 600 TFLOP/s for 8
    tf32_tflops=1125,  # 18 PFLOP/s for 8, with sparsity
    bf16_tflops=2250,  # 36 PFLOP/s for 8, with sparsity
    fp16_tflops=2250,
    source="NVIDIA HGX B200 specifications (8-GPU totals, divided by 8; tensor rates halved to dense)",
)

DATASHEETS: tuple[tuple[frozenset[str], frozenset[str], Datasheet], ...] = (
    (frozenset({"H200"}), frozenset({"NVL"}), H200_SXM),
    (frozenset({"H100", "PCIE"}), frozenset(), H100_PCIE),
    (frozenset({"H100"}), frozenset({"NVL", "PCIE"}), H100_SXM),
    (frozenset({"A100", "40GB"}), frozenset(), A100_40GB),
    (frozenset({"A100", "PCIE"}), frozenset(), A100_PCIE_80GB),
    (frozenset({"A100"}), frozenset(), A100_SXM_80GB),
    (frozenset({"L40S"}), frozenset(), L40S),
    (frozenset({"L4"}), frozenset(), L4),
    (frozenset({"RTX", "4090"}), frozenset(), RTX_4090),
    (frozenset({"B200"}), frozenset(), B200),
)
"""Known datasheets: ``(words the device name has, words it must not have, sheet)``, the first
match wins. The words are those of ``torch.cuda.get_device_name()`` in upper case, split at
anything not a letter or digit (``"NVIDIA A100-SXM4-80GB"``: NVIDIA, A100, SXM4, 80GB). The NVL
boards (H100 NVL, H200 NVL) run at other clocks and power and have no sheet here."""


def datasheet_for(device_name: str) -> Datasheet | None:
    """The datasheet of a device, from its name as torch reports it (:data:`DATASHEETS`).

    ``"NVIDIA H200"`` and ``"NVIDIA H100 80GB HBM3"`` (the SXM boards), ``"NVIDIA H100 PCIe"``,
    the A100s (``"NVIDIA A100-SXM4-80GB"``, ``"NVIDIA A100 80GB PCIe"``, the 40GB boards),
    ``"NVIDIA L4"``, ``"NVIDIA L40S"``, ``"NVIDIA GeForce RTX 4090"`` and ``"NVIDIA B200"`` are
    known; anything else (the NVL boards among them) gives ``None``.
    """
    words = set(re.split(r"[^A-Z0-9]+", device_name.upper()))
    for required, excluded, sheet in DATASHEETS:
        if required <= words and not excluded & words:
            return sheet
    return None


@dataclass
class Ceilings:
    """Measured ceilings of the current device (plus its datasheet, if known).

    copy_gbps: device-to-device copy, GB/s counting bytes read plus bytes written.
    bf16_tflops, tf32_tflops: ``torch.matmul`` at a large square size, TFLOP/s.
    fp32_tflops: non-tensor fp32 roof, from the datasheet unless measured;
    ``fp32_source`` says which.
    """

    device: str
    copy_gbps: float
    bf16_tflops: float
    tf32_tflops: float
    fp32_tflops: float
    datasheet: Datasheet | None = None
    fp32_source: str = "datasheet"

    def roof_tflops(self, roof: str) -> float:
        """TFLOP/s of the ``roof`` compute roof (one of :data:`ROOFS`).

        Raises:
            ValueError: unknown roof.
        """
        return getattr(self, f"{_check_roof(roof)}_tflops")

    def ridge_point(self, roof: str = "bf16") -> float:
        """FLOP/byte where the memory roof meets the ``roof`` compute roof.

        ridge = compute roof / memory roof = (TFLOP/s * 1e12) / (GB/s * 1e9), from the
        measured roofs (Williams, Waterman, Patterson, "Roofline", CACM 2009).

        Raises:
            ValueError: unknown roof, or a memory roof that is not positive.
        """
        if self.copy_gbps <= 0:
            raise ValueError(f"memory roof must be positive, got {self.copy_gbps} GB/s")
        return self.roof_tflops(roof) * 1e3 / self.copy_gbps

    def attainable_tflops(self, intensity: float, roof: str = "bf16") -> float:
        """Roofline bound at ``intensity`` FLOP/byte: min(compute roof, bandwidth * intensity), TFLOP/s."""
        return min(self.roof_tflops(roof), self.copy_gbps * intensity / 1e3)

    def to_dict(self) -> dict:
        """JSON-able dict (datasheet nested); inverse of :meth:`from_dict`."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Ceilings":
        """Rebuild from :meth:`to_dict` output.

        Raises:
            ValueError: a required field is missing.
        """
        names = {f.name for f in dataclasses.fields(cls)}
        missing = [f.name for f in dataclasses.fields(cls)
                   if f.default is dataclasses.MISSING and f.name not in data]
        if missing:
            raise ValueError(f"ceilings missing field(s): {', '.join(missing)}")
        kwargs = {k: v for k, v in data.items() if k in names}
        sheet = kwargs.get("datasheet")
        if isinstance(sheet, dict):
            kwargs["datasheet"] = Datasheet(**sheet)
        return cls(**kwargs)


@dataclass(frozen=True)
class Timing:
    """Kernel time in ms: median and the 20th/80th percentiles from ``do_bench``."""

    ms: float
    ms_lo: float
    ms_hi: float


def _check_roof(roof: str) -> str:
    if roof not in ROOFS:
        raise ValueError(f"unknown roof {roof!r}; expected one of {', '.join(ROOFS)}")
    return roof


def _require_cuda() -> None:
    try:
        import torch
    except ImportError as exc:
        raise RuntimeError("benchmarks need torch with a CUDA device; torch is not installed") from exc
    if not torch.cuda.is_available():
        raise RuntimeError(
            "benchmarks need a CUDA device and none is present "
            "(under TRITON_INTERPRET=1 notebooks check correctness and skip benchmarks)"
        )


def bench(fn: Callable[[], object], *, warmup: int = 25, rep: int = 100) -> Timing:
    """Time ``fn()`` on the current CUDA device.

    Through ``triton.testing.do_bench(fn, warmup=warmup, rep=rep, quantiles=[0.5, 0.2, 0.8])``:
    ``warmup`` and ``rep`` are in ms of running time, not counts; the L2 cache is
    flushed before each call.

    Returns:
        Timing with the median and the 20th/80th percentiles, in ms.

    Raises:
        RuntimeError: no CUDA device (e.g. the CPU build of torch, or TRITON_INTERPRET=1 on a CPU box).
    """
    _require_cuda()
    import triton.testing

    median, lo, hi = triton.testing.do_bench(fn, warmup=warmup, rep=rep, quantiles=[0.5, 0.2, 0.8])
    return Timing(ms=float(median), ms_lo=float(lo), ms_hi=float(hi))


def gbps(nbytes: float, ms: float) -> float:
    """Bandwidth in GB/s (1e9 bytes/s) of moving ``nbytes`` bytes in ``ms`` milliseconds.

    Raises:
        ValueError: ``ms`` is not positive.
    """
    if ms <= 0:
        raise ValueError(f"time must be positive, got {ms} ms")
    return nbytes / (ms * 1e-3) / 1e9


def tflops(flops: float, ms: float) -> float:
    """Compute rate in TFLOP/s (1e12 FLOP/s) of ``flops`` operations in ``ms`` milliseconds.

    Raises:
        ValueError: ``ms`` is not positive.
    """
    if ms <= 0:
        raise ValueError(f"time must be positive, got {ms} ms")
    return flops / (ms * 1e-3) / 1e12


def _matmul_tflops(n: int, dtype, *, allow_tf32: bool) -> float:
    import torch

    previous = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        # random normal operands: all-zero inputs run faster on tensor cores
        a = torch.randn(n, n, device="cuda", dtype=dtype)  # (n, n)
        b = torch.randn(n, n, device="cuda", dtype=dtype)  # (n, n)
        t = bench(lambda: torch.matmul(a, b))
        return tflops(2 * n**3, t.ms)  # n*n outputs, n multiply-adds each
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


def measure_ceilings(*, copy_bytes: int = 2**31, matmul_n: int = 8192) -> Ceilings:
    """Measure the roofs of the current CUDA device.

    - memory: ``dst.copy_(src)`` of ``copy_bytes`` bytes (fp32, random normal),
      GB/s counting bytes read plus bytes written (2 * copy_bytes), median of ``bench``.
    - bf16: ``torch.matmul`` of two (matmul_n, matmul_n) bf16 matrices, 2 n^3 FLOP.
    - tf32: the same in fp32 with ``torch.backends.cuda.matmul.allow_tf32 = True``
      (the previous setting is restored).
    - fp32: the datasheet's non-tensor rate when the device is known; otherwise
      measured as fp32 ``torch.matmul`` with tf32 off (``fp32_source`` says which).

    Needs about 2 * copy_bytes of free device memory.

    Raises:
        RuntimeError: no CUDA device.
        ValueError: ``copy_bytes`` or ``matmul_n`` not positive.
    """
    _require_cuda()
    if copy_bytes <= 0 or matmul_n <= 0:
        raise ValueError(f"copy_bytes and matmul_n must be positive, got {copy_bytes}, {matmul_n}")
    import torch

    device = torch.cuda.get_device_name()
    src = torch.randn(copy_bytes // 4, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    copy_ms = bench(lambda: dst.copy_(src)).ms
    copy = gbps(2 * src.numel() * src.element_size(), copy_ms)
    del src, dst
    torch.cuda.empty_cache()

    bf16 = _matmul_tflops(matmul_n, torch.bfloat16, allow_tf32=False)
    tf32 = _matmul_tflops(matmul_n, torch.float32, allow_tf32=True)
    sheet = datasheet_for(device)
    if sheet is not None:
        fp32, fp32_source = float(sheet.fp32_tflops), f"datasheet: {sheet.source}"
    else:
        fp32 = _matmul_tflops(matmul_n, torch.float32, allow_tf32=False)
        fp32_source = f"measured: fp32 torch.matmul n={matmul_n}, allow_tf32=False"
    torch.cuda.empty_cache()
    return Ceilings(device=device, copy_gbps=copy, bf16_tflops=bf16, tf32_tflops=tf32,
                    fp32_tflops=fp32, datasheet=sheet, fp32_source=fp32_source)


def _nvidia_smi(field: str) -> str | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, f"--query-gpu={field}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.strip().splitlines()
    return lines[0].strip() if lines else None


def gpu_info() -> dict:
    """What this run measured on: a flat dict of strings and numbers.

    Keys: ``device`` (name, or ``None`` without CUDA), ``sm_count``, ``memory_gib``,
    ``compute_capability``, ``driver`` (from ``nvidia-smi``), ``cuda`` (``torch.version.cuda``),
    ``torch``, ``triton``, ``python``. A piece that cannot be found is ``None``;
    this never raises for a missing GPU or package.
    """
    info: dict = {"device": None, "sm_count": None, "memory_gib": None, "compute_capability": None,
                  "driver": _nvidia_smi("driver_version"), "cuda": None, "torch": None,
                  "triton": None, "python": platform.python_version()}
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        info["torch"] = torch.__version__
        info["cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            info["device"] = props.name
            info["sm_count"] = props.multi_processor_count
            info["memory_gib"] = round(props.total_memory / 2**30, 1)
            info["compute_capability"] = f"{props.major}.{props.minor}"
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:
        pass
    return info


REG_ALLOC_UNIT = 256
"""Registers are allocated per warp in units of 256 (CUDA Occupancy Calculator, compute capability 9.0)."""
MAX_BLOCKS_PER_SM = 32
"""Resident blocks per SM, compute capability 9.0 (CUDA C++ Programming Guide, technical specifications)."""
SMEM_RESERVED_PER_BLOCK = 1024
"""Bytes of shared memory the system reserves per block, compute capability 8.0 and later (same guide)."""


def occupancy(kernel, num_warps: int) -> dict:
    """Resources and programs per SM of a Triton kernel compiled with ``.warmup(...)`` (no launch),
    on the current CUDA device.

    programs_per_sm = min over registers, shared memory, threads and the block limit, each from
    this device's per-SM resources (``torch.cuda.get_device_properties`` and Triton's driver,
    which reports the SM's register file); registers per warp are rounded up to
    :data:`REG_ALLOC_UNIT`, and each block's shared memory includes :data:`SMEM_RESERVED_PER_BLOCK`.

    Returns:
        ``n_regs`` (per thread), ``n_spills``, ``shared_bytes`` (per program), ``programs_per_sm``
        and ``limited_by`` (the resource that sets it: registers, shared memory, threads, blocks).

    Raises:
        RuntimeError: no CUDA device. AssertionError: one program does not fit on an SM.
    """
    _require_cuda()
    import math

    import torch
    import triton

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    regs_per_sm = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())["max_num_regs"]
    kernel._init_handles()
    regs_per_warp = math.ceil(kernel.n_regs * props.warp_size / REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    smem = kernel.metadata.shared
    limits = {
        "registers": regs_per_sm // (regs_per_warp * num_warps),
        "shared memory": props.shared_memory_per_multiprocessor // (smem + SMEM_RESERVED_PER_BLOCK),
        "threads": props.max_threads_per_multi_processor // (props.warp_size * num_warps),
        "blocks": MAX_BLOCKS_PER_SM,
    }
    per_sm = min(limits.values())
    assert per_sm >= 1, f"one program does not fit on an SM: {limits}"
    return dict(n_regs=kernel.n_regs, n_spills=kernel.n_spills, shared_bytes=smem, programs_per_sm=per_sm,
                limited_by=min(limits, key=limits.get))
