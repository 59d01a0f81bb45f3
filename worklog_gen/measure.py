"""Measure the current GPU: its ceilings, and kernel timings. (API fixed; body by the measure work.)

torch and triton are imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Datasheet:
    """Vendor peak rates of one GPU (dense, no sparsity)."""

    name: str
    hbm_gbps: float
    fp32_tflops: float
    tf32_tflops: float
    bf16_tflops: float
    fp16_tflops: float
    source: str


@dataclass
class Ceilings:
    """Measured ceilings of the current device (plus its datasheet, if known).

    copy_gbps: device-to-device copy, GB/s counting bytes read plus bytes written.
    bf16_tflops, tf32_tflops: ``torch.matmul`` at a large square size, TFLOP/s.
    fp32_tflops: non-tensor fp32 roof, from the datasheet unless measured.
    """

    device: str
    copy_gbps: float
    bf16_tflops: float
    tf32_tflops: float
    fp32_tflops: float
    datasheet: Datasheet | None = None

    def ridge_point(self, roof: str = "bf16") -> float:
        """FLOP/byte where the memory roof meets the ``roof`` compute roof."""
        raise NotImplementedError

    def to_dict(self) -> dict:
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: dict) -> "Ceilings":
        raise NotImplementedError


@dataclass(frozen=True)
class Timing:
    """Kernel time in ms: median and the 20th/80th percentiles from ``do_bench``."""

    ms: float
    ms_lo: float
    ms_hi: float


def bench(fn, *, warmup: int = 25, rep: int = 100) -> Timing:
    raise NotImplementedError


def gbps(nbytes: float, ms: float) -> float:
    raise NotImplementedError


def tflops(flops: float, ms: float) -> float:
    raise NotImplementedError


def measure_ceilings(*, copy_bytes: int = 2**31, matmul_n: int = 8192) -> Ceilings:
    raise NotImplementedError


def gpu_info() -> dict:
    raise NotImplementedError
