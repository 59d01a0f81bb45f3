"""Roofline points and plots: kernel variants against the measured roofs of a GPU.

Imports matplotlib (never pyplot's backend choice) and :mod:`worklog_gen.measure`, not torch,
so the site build can redraw plots from saved data without a GPU. The roofline model is
Williams, Waterman and Patterson, "Roofline: an insightful visual performance model for
multicore architectures", CACM 52(4), 2009: attainable FLOP/s = min(compute roof,
bandwidth * arithmetic intensity).

Plot functions return a :class:`matplotlib.figure.Figure` that no pyplot window manager
holds: put it last in a notebook cell (or ``display(fig)``) to show it once, and
``fig.savefig(...)`` to write it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from worklog_gen.measure import ROOFS, Ceilings, Timing, gbps, tflops

FIGSIZE = (8.0, 5.0)
"""Inches; reads well in a page's content column."""
DPI = 120
ROOF_COLORS = {"bf16": "tab:blue", "tf32": "tab:purple", "fp32": "tab:green"}
MEMORY_COLOR = "0.25"
TOPIC_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
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
                    roof: str = "fp32", topic: str = "") -> "RooflinePoint":
        """A point from a :func:`worklog_gen.measure.bench` result (keeps its quantiles)."""
        return cls(label=label, flops=flops, nbytes=nbytes, ms=timing.ms, roof=roof, topic=topic,
                   ms_lo=timing.ms_lo, ms_hi=timing.ms_hi)

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
    (through :func:`worklog_gen.notebook.save_data`); returns the path written."""
    from worklog_gen.notebook import save_data

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


def _new_axes(ax: Axes | None, height: float = FIGSIZE[1]) -> tuple[Figure, Axes]:
    if ax is not None:
        return ax.figure, ax
    size = (FIGSIZE[0], height)
    if _in_ipython():
        # Through pyplot, so that the configured backend (inline, in a notebook) loads and
        # registers its Figure display formatter; closed at once so that only the returned
        # figure is shown (put it last in the cell), not a second copy at the end of the cell.
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=size, dpi=DPI, layout="constrained")
        plt.close(fig)
    else:
        fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    return fig, fig.add_subplot()


def _in_ipython() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def _plain_number(value: float, _pos=None) -> str:
    return f"{value:g}"


def _clearest_on_slope(points: Sequence[RooflinePoint], bandwidth: float, xmin: float, ridge: float,
                       ymin: float, ymax: float, xmax: float) -> float | None:
    """FLOP/byte on the memory roof, left of the ``ridge`` point, where a label along the
    slope lands clear of every point (distances in axes fractions of the log-log plot);
    among the clear places, the one nearest the middle of the slope. ``None`` if none is clear."""
    span_x, span_y = math.log10(xmax / xmin), math.log10(ymax / ymin)
    half = 0.1  # half the label's width, axes fraction
    lo = half + 0.02
    hi = (math.log10(ridge) - math.log10(xmin)) / span_x - 0.12 - half
    if hi <= lo:
        return None
    tilt = span_x / span_y  # axes-fraction rise per unit run of the slope

    def gap(u: float) -> float:
        v0 = (math.log10(bandwidth * 10 ** (math.log10(xmin) + u * span_x) / 1e3) - math.log10(ymin)) / span_y
        ends = ((u - half, v0 - half * tilt), (u + half, v0 + half * tilt))
        return min((_segment_distance(_axes_fraction(p, xmin, ymin, span_x, span_y), *ends) for p in points),
                   default=1.0)

    middle = (lo + hi) / 2
    candidates = [lo + (hi - lo) * k / 20 for k in range(21)]
    best = max(candidates, key=lambda u: (min(gap(u), 0.08), -abs(u - middle)))
    return 10 ** (math.log10(xmin) + best * span_x) if gap(best) >= 0.05 else None


def _axes_fraction(point: RooflinePoint, xmin: float, ymin: float, span_x: float, span_y: float):
    return (math.log10(point.intensity / xmin) / span_x, math.log10(point.tflops / ymin) / span_y)


def _segment_distance(p, a, b) -> float:
    """Distance from point ``p`` to the segment ``a``-``b`` (2-D tuples)."""
    (px, py), (ax, ay), (bx, by) = p, a, b
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - ax - t * dx, py - ay - t * dy)


def _spread_offsets(xy_norm: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """Offsets (points) of the number labels, so that labels of nearby points do not overlap.

    ``xy_norm``: point positions in axes fractions (log space); label ``i`` is ``str(i + 1)``.
    Tries offsets around each point and keeps the first whose label box is clear of those
    already placed, or else the one that overlaps least.
    """
    candidates = [(6, 6), (6, -12), (-14, 6), (-14, -12), (10, -3), (-18, -3), (0, 10), (0, -16),
                  (20, 6), (20, -12), (-28, 6), (-28, -12), (22, -3), (-32, -3)]
    width_pt, height_pt = 72 * FIGSIZE[0] * 0.8, 72 * FIGSIZE[1] * 0.8  # rough axes size
    char_pt, line_pt = 5.5, 9.0  # a digit of the 8.5 pt bold label
    boxes: list[tuple[float, float, float, float]] = []
    offsets = []
    for i, (u, v) in enumerate(xy_norm):
        width = char_pt * len(str(i + 1))

        def box(offset: tuple[float, float]) -> tuple[float, float, float, float]:
            x, y = u * width_pt + offset[0], v * height_pt + offset[1]
            return x, y, x + width, y + line_pt

        def separation(offset: tuple[float, float]) -> float:
            """Points of clearance to the nearest placed label (negative: overlap)."""
            x0, y0, x1, y1 = box(offset)
            return min((max(bx0 - x1, x0 - bx1, by0 - y1, y0 - by1) for bx0, by0, bx1, by1 in boxes),
                       default=math.inf)

        clear = [c for c in candidates if separation(c) >= 1]
        choice = clear[0] if clear else max(candidates, key=separation)
        boxes.append(box(choice))
        offsets.append(choice)
    return offsets


def plot_roofline(points: Sequence[RooflinePoint], ceilings: Ceilings, *,
                  roofs: Sequence[str] = ("bf16", "tf32", "fp32"), title: str | None = None,
                  ax: Axes | None = None) -> Figure:
    """Roofline plot: arithmetic intensity (FLOP/byte) against TFLOP/s, log-log.

    Measured roofs are solid: the memory roof (slope ``ceilings.copy_gbps``) up to each
    compute roof in ``roofs`` (flat), whose ridge point is marked and labelled in
    FLOP/byte. Datasheet roofs, when known, are dashed and lighter. Each point is a
    numbered marker, coloured by the roof it is held against, shaped by topic; the
    legend gives its label, TFLOP/s and the fraction of the roofline bound it reaches.

    Args:
        points: kernel variants; may be empty.
        ceilings: measured roofs (and datasheet) of the device the points ran on.
        roofs: compute roofs to draw, from ``"bf16"``, ``"tf32"``, ``"fp32"``.
        title: axes title; default names the device.
        ax: draw into these axes instead of a new figure.

    Returns:
        The figure (8 x 5 in at 120 dpi when new).

    Raises:
        ValueError: unknown roof name.
    """
    for roof in roofs:
        if roof not in ROOFS:
            raise ValueError(f"unknown roof {roof!r}; expected one of {', '.join(ROOFS)}")
    # one legend line per point goes under the axes: grow the figure to keep the axes 8 x 5-ish
    fig, ax = _new_axes(ax, height=FIGSIZE[1] + 0.17 * len(points) + (0.5 if ceilings.datasheet else 0.2))
    sheet = ceilings.datasheet

    # Limits: every point, ridge point and roof, with room for the roof labels on the right.
    ridges = [ceilings.ridge_point(r) for r in roofs]
    sheet_ridges = [sheet.ridge_point(r) for r in roofs] if sheet is not None else []
    xs = [p.intensity for p in points] + ridges + sheet_ridges or [1.0]
    xmin, xmax = min(xs) / 3, max(xs) * 8
    if ridges:  # the ridge labels sit left of their ridge points and take ~30% of the width
        xmin = min(xmin, 10 ** ((math.log10(min(ridges)) - 0.3 * math.log10(xmax)) / 0.7))
    peaks = [ceilings.roof_tflops(r) for r in roofs]
    if sheet is not None:
        peaks += [sheet.roof_tflops(r) for r in roofs]
    ys = [p.tflops for p in points] + peaks or [ceilings.copy_gbps * xmax / 1e3]
    ymax = max(ys) * 3
    # two decades under the lowest roof, lower still if a point is there
    ymin = max(min([p.tflops for p in points] + [min(peaks or ys) / 100]) / 3, ymax / 1e7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(ymin, ymax)

    # Memory roofs: TFLOP/s = GB/s * FLOP/byte / 1e3, drawn up to the last ridge point.
    def slope(gbps_: float, upto: float) -> tuple[list[float], list[float]]:
        return [xmin, upto], [gbps_ * xmin / 1e3, gbps_ * upto / 1e3]

    if sheet is not None:
        ax.plot(*slope(sheet.hbm_gbps, max(sheet_ridges, default=xmax)), color=MEMORY_COLOR, ls="--",
                lw=1.2, alpha=0.45, gid="datasheet-memory")
    ax.plot(*slope(ceilings.copy_gbps, max(ridges, default=xmax)), color=MEMORY_COLOR, lw=2, gid="memory")
    # along the slope where no point is near (the legend gives it too); transform_rotates_text
    # turns the data-space angle into the on-screen one
    at = _clearest_on_slope(points, ceilings.copy_gbps, xmin, min(ridges, default=xmax), ymin, ymax, xmax)
    if at is not None:
        ax.text(at, ceilings.copy_gbps * at / 1e3 * 1.12, f"copy {ceilings.copy_gbps:,.0f} GB/s", fontsize=8.5,
                color=MEMORY_COLOR, ha="center", va="bottom", rotation_mode="anchor", transform_rotates_text=True,
                rotation=math.degrees(math.atan(ceilings.copy_gbps / 1e3)), gid="memory-label")

    # Compute roofs: flat from the ridge point, labelled left of it (above the memory slope,
    # where no point can be).
    halo = dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85)
    for roof in roofs:
        peak, ridge, color = ceilings.roof_tflops(roof), ceilings.ridge_point(roof), ROOF_COLORS[roof]
        if sheet is not None:
            ax.plot([sheet.ridge_point(roof), xmax], [sheet.roof_tflops(roof)] * 2, color=color, ls="--",
                    lw=1.2, alpha=0.45, gid=f"datasheet-{roof}")
        ax.plot([ridge, xmax], [peak, peak], color=color, lw=2, gid=f"roof-{roof}")
        ax.plot([ridge], [peak], marker="o", ms=7, mfc="white", mec=color, mew=2, ls="none",
                gid=f"ridge-{roof}", zorder=4)
        ax.annotate(f"{roof} {peak:,.4g} TFLOP/s, ridge {ridge:,.3g} FLOP/B", (ridge, peak), xytext=(-8, 0),
                    textcoords="offset points", ha="right", va="center", fontsize=8, color=color,
                    bbox=halo, gid=f"ridge-label-{roof}", zorder=4)

    # Points: numbered markers, described in the legend.
    topics = list(dict.fromkeys(p.topic for p in points))
    log_x = (math.log10(xmin), math.log10(xmax))
    log_y = (math.log10(ymin), math.log10(ymax))
    norm = [((math.log10(p.intensity) - log_x[0]) / (log_x[1] - log_x[0]),
             (math.log10(p.tflops) - log_y[0]) / (log_y[1] - log_y[0])) for p in points]
    handles = []
    for i, (point, offset) in enumerate(zip(points, _spread_offsets(norm)), start=1):
        color = ROOF_COLORS[point.roof]
        marker = TOPIC_MARKERS[topics.index(point.topic) % len(TOPIC_MARKERS)]
        ax.plot([point.intensity], [point.tflops], marker=marker, ms=7, color=color, mec="black", mew=0.6,
                ls="none", zorder=5, gid=f"point-marker-{i}")
        ax.annotate(str(i), (point.intensity, point.tflops), xytext=offset, textcoords="offset points",
                    fontsize=8.5, fontweight="bold", color="black", gid=f"point-{i}", zorder=6)
        name = f"{point.topic}: {point.label}" if len(topics) > 1 and point.topic else point.label
        fraction = point.fraction_of_roof(ceilings)
        text = f"{i}. {name} — {point.tflops:,.3g} TFLOP/s, {fraction:.0%} of {point.roof} bound"
        handles.append(Line2D([], [], marker=marker, color=color, mec="black", mew=0.6, ls="none", label=text))

    style = [Line2D([], [], color="0.3", lw=2, label=_measured_label(ceilings, roofs))]
    if sheet is not None:
        listed = ", ".join(f"{r} {sheet.roof_tflops(r):,.4g}" for r in roofs)
        style.append(Line2D([], [], color="0.3", lw=1.2, ls="--", alpha=0.5,
                            label=f"datasheet, {sheet.name} (dense):\n{sheet.hbm_gbps:,.0f} GB/s; "
                                  f"{listed} TFLOP/s"))
    ax.legend(handles=style + handles, loc="upper left", bbox_to_anchor=(0.0, -0.13), fontsize=8,
              frameon=False, borderaxespad=0.0)

    ax.xaxis.set_major_formatter(FuncFormatter(_plain_number))
    ax.yaxis.set_major_formatter(FuncFormatter(_plain_number))
    ax.set_xlabel("arithmetic intensity (FLOP/byte, compulsory bytes)")
    ax.set_ylabel("performance (TFLOP/s)")
    ax.set_title(title if title is not None else f"Roofline: {ceilings.device}", fontsize=11)
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)
    return fig


def _measured_label(ceilings: Ceilings, roofs: Sequence[str]) -> str:
    """Legend text of the solid roofs, saying where each number comes from."""
    text = f"measured, {ceilings.device}:\ncopy {ceilings.copy_gbps:,.0f} GB/s"
    matmul = [r for r in roofs if r != "fp32"]
    if matmul:
        text += "; torch.matmul " + ", ".join(f"{r} {ceilings.roof_tflops(r):,.4g}" for r in matmul) + " TFLOP/s"
    if "fp32" in roofs:
        source = ceilings.fp32_source
        text += f"; fp32 {ceilings.fp32_tflops:,.4g} TFLOP/s " + (
            "from the datasheet" if source.startswith("datasheet") else f"({source})")
    return text


def plot_benchmark(rows: Sequence[Mapping], *, x: str, y: str, provider: str = "provider",
                   y_lo: str | None = None, y_hi: str | None = None, xlabel: str, ylabel: str,
                   title: str | None = None, logx: bool = True, logy: bool = False,
                   ax: Axes | None = None) -> Figure:
    """Benchmark sweep: ``y`` (e.g. GB/s or TFLOP/s) against size ``x``, one line per provider.

    Args:
        rows: dicts as saved with ``save_data("....csv", rows)``: one per (provider, size).
        x, y: keys of the size and the measured rate (the median).
        provider: key naming the implementation (``"triton"``, ``"torch"``, ...).
        y_lo, y_hi: keys of the quantile band (e.g. the rate at the 80th and 20th percentile
            times); drawn with ``fill_between`` when both are given.
        xlabel, ylabel: axis labels, with units.
        logx, logy: log axes; a log x axis uses base 2 when every size is a power of two.

    Returns:
        The figure (8 x 5 in at 120 dpi when new).

    Raises:
        KeyError: a row lacks ``x``, ``y``, ``provider`` or a band key (message names the row).
    """
    fig, ax = _new_axes(ax)
    series: dict[str, list[Mapping]] = {}
    for n, row in enumerate(rows):
        for key in (x, y, provider, y_lo, y_hi):
            if key is not None and key not in row:
                raise KeyError(f"row {n} has no {key!r} (keys: {', '.join(map(str, row))})")
        series.setdefault(str(row[provider]), []).append(row)

    sizes = []
    for name, group in series.items():
        group = sorted(group, key=lambda r: float(r[x]))
        xs = [float(r[x]) for r in group]
        sizes += xs
        (line,) = ax.plot(xs, [float(r[y]) for r in group], marker="o", ms=4, lw=1.8, label=name)
        if y_lo is not None and y_hi is not None:
            ax.fill_between(xs, [float(r[y_lo]) for r in group], [float(r[y_hi]) for r in group],
                            color=line.get_color(), alpha=0.2, lw=0, gid=f"band-{name}")

    if logx:
        powers_of_two = sizes and all(s > 0 and float(s).is_integer() and (int(s) & (int(s) - 1)) == 0
                                      for s in sizes)
        ax.set_xscale("log", base=2 if powers_of_two else 10)
    if logy:
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(_plain_number))
    elif ax.has_data():
        ax.set_ylim(bottom=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title, fontsize=11)
    ax.grid(True, which="major", alpha=0.35)
    if series:
        ax.legend(title=provider, fontsize=8.5, title_fontsize=8.5, frameon=False,
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return fig
