"""Roofline points: kernel variants against the measured roofs of a GPU, and their JSON store.

Imports :mod:`worklog_gen.kit.measure`, not torch, so the site build can read saved points without
a GPU; :func:`worklog_gen.kit.charts.roofline_chart` draws them. The roofline model is Williams,
Waterman and Patterson, "Roofline: an insightful visual performance model for multicore
architectures", CACM 52(4), 2009: attainable FLOP/s = min(compute roof, bandwidth *
arithmetic intensity).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping


from worklog_gen.kit.measure import ROOFS, Ceilings, Timing, gbps, tflops

FORMAT_VERSION = 1


@dataclass(frozen=True)
class RooflinePoint:
    """One kernel variant on the roofline.

    Args:
        label: what ran, e.g. ``"triton BLOCK_SIZE=1024"``.
        flops: floating-point operations of one call (a multiply-add counts 2).
        nbytes: *compulsory* bytes of one call: each input read once, each output
            written once (not what the kernel happens to move), so the intensity is
            a property of the algorithm.
        ms: median time of one call, ms.
        roof: the compute roof it is held against (``"bf16"``, ``"tf32"``, ``"fp32"``).
        topic: the notebook it comes from (groups points on the combined plot).
        ms_lo, ms_hi: optional 20th/80th percentile times, ms.
        size: the problem size, as the notebook names it (``"8192x8192"``, ``"2^28"``).
        dtype: the element type of the operands (``"bf16"``); default: the roof's.

    Raises:
        ValueError: non-positive flops, bytes or time, or an unknown roof.
    """

    label: str
    flops: float
    nbytes: float
    ms: float
    roof: str = "fp32"
    topic: str = ""
    ms_lo: float | None = None
    ms_hi: float | None = None
    size: str = ""
    dtype: str = ""

    def __post_init__(self) -> None:
        for field in ("flops", "nbytes", "ms"):
            value = getattr(self, field)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"roofline point {self.label!r}: {field} must be a positive number, got {value!r}")
        if self.roof not in ROOFS:
            raise ValueError(f"roofline point {self.label!r}: unknown roof {self.roof!r}; "
                             f"expected one of {', '.join(ROOFS)}")

    @classmethod
    def from_timing(cls, label: str, flops: float, nbytes: float, timing: Timing, *,
                    roof: str = "fp32", topic: str = "", size: str = "", dtype: str = "") -> "RooflinePoint":
        """A point from a :func:`worklog_gen.kit.measure.bench` result (keeps its quantiles)."""
        return cls(label=label, flops=flops, nbytes=nbytes, ms=timing.ms, roof=roof, topic=topic,
                   ms_lo=timing.ms_lo, ms_hi=timing.ms_hi, size=size, dtype=dtype)

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP/byte of compulsory traffic."""
        return self.flops / self.nbytes

    @property
    def tflops(self) -> float:
        """Achieved TFLOP/s (1e12 FLOP/s) at the median time."""
        return tflops(self.flops, self.ms)

    @property
    def gbps(self) -> float:
        """Achieved bandwidth on compulsory bytes, GB/s (1e9 bytes/s)."""
        return gbps(self.nbytes, self.ms)

    def fraction_of_roof(self, ceilings: Ceilings) -> float:
        """Achieved TFLOP/s over the roofline bound at this intensity (1.0 = on the roof)."""
        return self.tflops / ceilings.attainable_tflops(self.intensity, self.roof)


def save_roofline(points: Iterable[RooflinePoint], ceilings: Ceilings, name: str = "roofline.json") -> Path:
    """Write points and ceilings as JSON into the running notebook's output folder
    (through :func:`worklog_gen.kit.notebook.save_data`); returns the path written."""
    from worklog_gen.kit.notebook import save_data

    data = {
        "format": FORMAT_VERSION,
        "ceilings": ceilings.to_dict(),
        "points": [dataclasses.asdict(p) for p in points],
    }
    return save_data(name, data)


def load_roofline(path: str | Path) -> tuple[list[RooflinePoint], Ceilings]:
    """Read what :func:`save_roofline` wrote.

    Raises:
        ValueError: the file is not a saved roofline (message names the file).
        OSError: the file cannot be read.
    """
    import json

    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from exc
    if not isinstance(data, Mapping) or "ceilings" not in data or "points" not in data:
        raise ValueError(f"{path}: not a saved roofline (needs 'ceilings' and 'points')")
    if data.get("format", FORMAT_VERSION) != FORMAT_VERSION:
        raise ValueError(f"{path}: roofline format {data.get('format')!r}, expected {FORMAT_VERSION}")
    try:
        ceilings = Ceilings.from_dict(data["ceilings"])
        names = {f.name for f in dataclasses.fields(RooflinePoint)}
        points = [RooflinePoint(**{k: v for k, v in p.items() if k in names}) for p in data["points"]]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from exc
    return points, ceilings
