"""Roofline points, their saved form, and the plots (synthetic data, no GPU)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from matplotlib.figure import Figure

from worklog_gen.measure import H200_SXM, Ceilings, Timing
from worklog_gen.notebook import OUTPUT_ENV
from worklog_gen.roofline import (
    RooflinePoint,
    load_roofline,
    plot_benchmark,
    plot_roofline,
    save_roofline,
)

N = 2**24  # elements of a vector add


@pytest.fixture
def ceilings() -> Ceilings:
    return Ceilings("NVIDIA H200", copy_gbps=4000, bf16_tflops=800, tf32_tflops=400, fp32_tflops=67,
                    datasheet=H200_SXM)


@pytest.fixture
def points() -> list[RooflinePoint]:
    m = 4096
    return [
        # fp32 vector add: 1 FLOP per element, read x and y, write out: 12 bytes per element
        RooflinePoint("torch add", N, 12 * N, 0.0537, "fp32", "vector add"),
        RooflinePoint("triton add BLOCK_SIZE=1024", N, 12 * N, 0.0550, "fp32", "vector add"),
        # bf16 matmul: 2 m^3 FLOP, A and B read, C written: 3 m^2 * 2 bytes
        RooflinePoint("naive", 2 * m**3, 6 * m * m, 2.3, "bf16", "tiled matmul"),
        RooflinePoint("grouped GROUP_SIZE_M=8", 2 * m**3, 6 * m * m, 0.25, "bf16", "tiled matmul"),
    ]


def test_intensity_and_tflops_of_a_vector_add():
    p = RooflinePoint("add", flops=N, nbytes=12 * N, ms=0.05)
    assert p.intensity == pytest.approx(1 / 12)
    assert p.tflops == pytest.approx(N / 0.05e-3 / 1e12)
    assert p.gbps == pytest.approx(12 * N / 0.05e-3 / 1e9)


def test_intensity_of_a_square_matmul():
    m = 4096  # 2 m^3 FLOP over 3 m^2 bf16 values: m / 3 FLOP/byte
    p = RooflinePoint("mm", flops=2 * m**3, nbytes=3 * m * m * 2, ms=1.0, roof="bf16")
    assert p.intensity == pytest.approx(m / 3)


def test_fraction_of_roof(ceilings):
    # 1/12 FLOP/byte at 4000 GB/s bounds at 0.3333 TFLOP/s; 0.1667 achieved is half of it
    p = RooflinePoint("add", flops=1e9, nbytes=12e9, ms=1e9 / 0.16667e12 * 1e3)
    assert p.fraction_of_roof(ceilings) == pytest.approx(0.5, rel=1e-3)


def test_from_timing_keeps_quantiles():
    p = RooflinePoint.from_timing("add", 1e6, 1.2e7, Timing(0.01, 0.009, 0.012), roof="fp32", topic="t")
    assert (p.ms, p.ms_lo, p.ms_hi, p.topic) == (0.01, 0.009, 0.012, "t")


@pytest.mark.parametrize("kwargs", [dict(flops=0), dict(nbytes=-1), dict(ms=float("nan")), dict(roof="fp8")])
def test_bad_points_are_rejected_by_label(kwargs):
    args = dict(label="my kernel", flops=1.0, nbytes=1.0, ms=1.0) | kwargs
    with pytest.raises(ValueError, match="my kernel"):
        RooflinePoint(**args)


def test_save_and_load_round_trip(tmp_path, monkeypatch, points, ceilings):
    monkeypatch.setenv(OUTPUT_ENV, str(tmp_path))
    path = save_roofline(points, ceilings)
    assert path == tmp_path / "roofline.json"
    loaded_points, loaded_ceilings = load_roofline(path)
    assert loaded_points == points
    assert loaded_ceilings == ceilings
    assert json.loads(path.read_text())["format"] == 1


def test_load_names_the_file_on_bad_data(tmp_path):
    bad = tmp_path / "roofline.json"
    bad.write_text(json.dumps({"points": []}))
    with pytest.raises(ValueError, match="roofline.json"):
        load_roofline(bad)
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="roofline.json"):
        load_roofline(bad)
    bad.write_text(json.dumps({"ceilings": {"device": "X", "copy_gbps": 1, "bf16_tflops": 1,
                                            "tf32_tflops": 1, "fp32_tflops": 1},
                               "points": [{"label": "k", "flops": 1, "nbytes": 1, "ms": 0}]}))
    with pytest.raises(ValueError, match=r"roofline\.json.*'k'"):
        load_roofline(bad)


def _by_gid(items, prefix):
    return [a for a in items if (a.get_gid() or "").startswith(prefix)]


def test_plot_roofline_structure(points, ceilings):
    fig = plot_roofline(points, ceilings)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "FLOP/byte" in ax.get_xlabel() and "TFLOP/s" in ax.get_ylabel()

    # one numbered annotation per point, at the point
    labels = _by_gid(ax.texts, "point-")
    assert [t.get_text() for t in labels] == ["1", "2", "3", "4"]
    for text, point in zip(labels, points):
        assert text.xy == pytest.approx((point.intensity, point.tflops))

    # measured roofs solid, with a ridge marker at (ridge point, roof) for each
    for roof in ("bf16", "tf32", "fp32"):
        (marker,) = _by_gid(ax.lines, f"ridge-{roof}")
        assert marker.get_xdata()[0] == pytest.approx(ceilings.ridge_point(roof))
        assert marker.get_ydata()[0] == pytest.approx(ceilings.roof_tflops(roof))
        (label,) = _by_gid(ax.texts, f"ridge-label-{roof}")
        assert f"{ceilings.ridge_point(roof):,.3g} FLOP/B" in label.get_text()
        assert _by_gid(ax.lines, f"roof-{roof}")[0].get_linestyle() == "-"
        assert _by_gid(ax.lines, f"datasheet-{roof}")[0].get_linestyle() == "--"
    (memory,) = _by_gid(ax.lines, "memory")
    x, y = memory.get_xdata(), memory.get_ydata()
    assert y[1] / y[0] == pytest.approx(x[1] / x[0])  # slope 1 on log-log: the bandwidth roof
    assert y[0] == pytest.approx(ceilings.copy_gbps * x[0] / 1e3)

    # every point and roof inside the limits
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    for p in points:
        assert x0 < p.intensity < x1 and y0 < p.tflops < y1
    assert y1 > H200_SXM.bf16_tflops and x1 > H200_SXM.ridge_point("bf16")

    # the legend describes every point
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sum(t.startswith(("1.", "2.", "3.", "4.")) for t in legend) == 4


def test_plot_roofline_subset_of_roofs_and_no_datasheet(points):
    c = Ceilings("Some GPU", copy_gbps=900, bf16_tflops=150, tf32_tflops=75, fp32_tflops=19)
    ax = plot_roofline(points[:2], c, roofs=("fp32",), title="vector add").axes[0]
    assert ax.get_title() == "vector add"
    assert _by_gid(ax.lines, "ridge-fp32") and not _by_gid(ax.lines, "ridge-bf16")
    assert not _by_gid(ax.lines, "datasheet")
    with pytest.raises(ValueError, match="unknown roof"):
        plot_roofline(points, c, roofs=("fp64",))


def test_plot_roofline_without_points(ceilings):
    ax = plot_roofline([], ceilings).axes[0]
    assert not _by_gid(ax.texts, "point-")
    assert len(_by_gid(ax.lines, "ridge-")) == 3


def test_crowded_points_get_distinct_label_offsets(ceilings):
    same = [RooflinePoint(f"v{i}", 1e9, 1.2e10, 0.004) for i in range(4)]
    ax = plot_roofline(same, ceilings).axes[0]
    offsets = {tuple(t.xyann) for t in _by_gid(ax.texts, "point-")}
    assert len(offsets) == 4


def test_plot_roofline_into_given_axes(points, ceilings):
    fig = Figure()
    ax = fig.add_subplot()
    assert plot_roofline(points, ceilings, ax=ax) is fig
    assert ax.get_xscale() == "log"


def _rows():
    rows = []
    for provider, scale in (("triton", 0.95), ("torch", 1.0)):
        for k in range(12, 20):
            size = 2**k
            rate = 4000 * scale * size / (size + 2**16)
            rows.append({"size": size, "provider": provider, "gbps": rate,
                         "gbps_lo": rate * 0.9, "gbps_hi": rate * 1.05})
    return rows[::-1]  # unsorted input


def test_plot_benchmark_lines_and_bands():
    rows = _rows()
    fig = plot_benchmark(rows, x="size", y="gbps", y_lo="gbps_lo", y_hi="gbps_hi",
                         xlabel="elements", ylabel="GB/s", title="vector add")
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.lines] == ["torch", "triton"]
    for line in ax.lines:
        xs = list(line.get_xdata())
        assert xs == sorted(xs) and len(xs) == 8
    bands = _by_gid(ax.collections, "band-")
    assert len(bands) == 2
    triton_rows = [r for r in rows if r["provider"] == "triton"]
    lo = min(r["gbps_lo"] for r in triton_rows)
    hi = max(r["gbps_hi"] for r in triton_rows)
    (x0, y0), (x1, y1) = _by_gid(ax.collections, "band-triton")[0].get_datalim(ax.transData).get_points()
    assert (y0, y1) == pytest.approx((lo, hi))
    assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("elements", "GB/s", "vector add")


def test_plot_benchmark_without_bands_and_log_y():
    rows = [{"n": n, "impl": "a", "tflops": n / 100} for n in (1000, 3000, 5000)]
    ax = plot_benchmark(rows, x="n", y="tflops", provider="impl", xlabel="n", ylabel="TFLOP/s",
                        logy=True).axes[0]
    assert not ax.collections
    assert ax.get_yscale() == "log" and ax.xaxis.get_transform().base == 10


def test_plot_benchmark_names_the_missing_key():
    with pytest.raises(KeyError, match="row 1 has no 'gbps'"):
        plot_benchmark([{"size": 1, "provider": "a", "gbps": 1}, {"size": 2, "provider": "a"}],
                       x="size", y="gbps", xlabel="n", ylabel="GB/s")


def test_figures_render_to_png(tmp_path, points, ceilings):
    path = tmp_path / "roofline.png"
    plot_roofline(points, ceilings).savefig(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_legend_says_where_each_roof_comes_from(points, ceilings):
    ax = plot_roofline(points, ceilings).axes[0]
    measured, datasheet = (t.get_text() for t in ax.get_legend().get_texts()[:2])
    assert "copy 4,000 GB/s" in measured and "torch.matmul bf16 800, tf32 400" in measured
    assert "fp32 67 TFLOP/s from the datasheet" in measured
    assert "4,800 GB/s" in datasheet and "bf16 989.5" in datasheet

    fma = dataclasses.replace(ceilings, fp32_tflops=61.5, fp32_source="measured: FMA chain peak")
    ax = plot_roofline(points[:2], fma, roofs=("fp32",)).axes[0]
    measured = ax.get_legend().get_texts()[0].get_text()
    assert "fp32 61.5 TFLOP/s (measured: FMA chain peak)" in measured and "torch.matmul" not in measured


def test_memory_label_lies_on_the_slope_when_clear(ceilings):
    ax = plot_roofline([RooflinePoint("add", 1e9, 1.2e10, 0.004)], ceilings).axes[0]
    (label,) = _by_gid(ax.texts, "memory-label")
    x, y = label.get_position()
    assert y == pytest.approx(ceilings.copy_gbps * x / 1e3 * 1.12)  # just above the memory roof
    assert x < ceilings.ridge_point("fp32")
