"""Charts as Vega-Lite specs (Altair) and their SVG fallbacks, on synthetic data (no GPU).

What a reader sees drawn is checked in the browser (test_browser.py); here, what the specs say:
the data each mark carries, the tooltip fields, the legend that toggles, the roofs, and that
vl-convert renders each spec to an SVG naming what it shows.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from worklog_gen.kit.charts import (
    VEGALITE_MIME,
    benchmark_chart,
    chart_files,
    chart_spec,
    chart_svg,
    roofline_chart,
)
from worklog_gen.site.heatmap import heatmap_cells, heatmap_chart
from worklog_gen.kit.measure import Ceilings

def _layers(spec: dict) -> list[dict]:
    return spec["layer"]


def _values(layer: dict, spec: dict | None = None) -> list[dict]:
    """The inline rows of a layer, or of the chart when Altair hoisted data the layers share."""
    return (layer.get("data") or spec["data"])["values"]


def _point_layer(spec: dict) -> dict:
    (layer,) = [layer for layer in _layers(spec) if layer["mark"]["type"] == "point"]
    return layer


def test_roofline_points_carry_every_tooltip_field(points, ceilings):
    spec = chart_spec(roofline_chart(points, ceilings))
    layer = _point_layer(spec)
    rows = {r["variant"]: r for r in _values(layer)}
    assert set(rows) == {p.label for p in points}
    naive = rows["naive"]
    assert naive["topic"] == "tiled matmul" and naive["size"] == "4096^3" and naive["dtype"] == "bf16"
    assert naive["intensity"] == pytest.approx(2 * 4096**3 / (6 * 4096**2))
    assert naive["tflops"] == pytest.approx(2 * 4096**3 / 2.3e-3 / 1e12)
    assert naive["fraction"] == pytest.approx(points[2].fraction_of_roof(ceilings))
    # a point without a dtype shows its roof's
    assert rows["grouped GROUP_SIZE_M=8"]["dtype"] == "bf16"
    fields = [t["field"] for t in layer["encoding"]["tooltip"]]
    assert fields[:6] == ["variant", "topic", "size", "dtype", "intensity", "tflops"]
    assert "fraction" in fields
    titles = {t["field"]: t.get("title") for t in layer["encoding"]["tooltip"]}
    assert titles["intensity"] == "FLOP/byte" and titles["tflops"] == "TFLOP/s"


def test_roofline_legend_toggles_each_series(points, ceilings):
    spec = chart_spec(roofline_chart(points, ceilings))
    layer = _point_layer(spec)
    (param,) = [p for p in spec.get("params", []) + layer.get("params", []) if "select" in p]
    assert param["bind"] == "legend" and param["select"]["toggle"] == "true"
    assert param["select"]["fields"] == ["topic"]  # two topics: the legend lists topics
    assert [v["topic"] for v in param["value"]] == ["vector add", "tiled matmul"]  # all shown at first
    opacity = layer["encoding"]["opacity"]
    assert opacity["condition"]["param"] == param["name"] and opacity["value"] == 0


def test_one_topic_lists_its_variants(points, ceilings):
    spec = chart_spec(roofline_chart(points[:2], ceilings))
    assert _point_layer(spec)["encoding"]["color"]["field"] == "variant"
    with pytest.raises(ValueError, match="series"):
        roofline_chart(points, ceilings, series="dtype")


def test_measured_roofs_are_solid_and_datasheet_roofs_dashed(points, ceilings):
    spec = chart_spec(roofline_chart(points, ceilings))
    lines = _values(_layers(spec)[0])
    measured = {r["roof"] for r in lines if r["source"] == "measured"}
    sheet = {r["roof"] for r in lines if r["source"] == "datasheet"}
    assert measured == {"copy 4,000 GB/s", "bf16 800 TFLOP/s", "tf32 400 TFLOP/s", "fp32 67 TFLOP/s"}
    assert sheet == {"datasheet 4,800 GB/s", "datasheet bf16 989.5 TFLOP/s", "datasheet tf32 494.7 TFLOP/s",
                     "datasheet fp32 67 TFLOP/s"}
    dash = _layers(spec)[0]["encoding"]["strokeDash"]["scale"]
    assert dict(zip(dash["domain"], dash["range"])) == {"measured": [1, 0], "datasheet": [6, 4]}
    # the memory roof meets each compute roof at its ridge point
    bf16 = [r for r in lines if r["roof"] == "bf16 800 TFLOP/s"]
    assert min(r["intensity"] for r in bf16) == pytest.approx(ceilings.ridge_point("bf16"))
    labels = [r["text"] for r in _values(_layers(spec)[1])]
    assert any(t.startswith("copy 4,000 GB/s") for t in labels)
    assert any(t.startswith("bf16 800 TFLOP/s, ridge 200 FLOP/B") for t in labels)


def test_roofline_subset_of_roofs_without_datasheet(points):
    c = Ceilings("CPU", copy_gbps=50, bf16_tflops=1, tf32_tflops=1, fp32_tflops=2)
    spec = chart_spec(roofline_chart(points[:2], c, roofs=("fp32",), title="vector add"))
    assert {r["source"] for r in _values(_layers(spec)[0])} == {"measured"}
    assert spec["title"]["text"] == "vector add" and "dashed" not in spec["title"]["subtitle"]
    with pytest.raises(ValueError, match="fp64"):
        roofline_chart(points, c, roofs=("fp64",))


def test_roofline_without_points_still_draws_the_roofs(ceilings):
    spec = chart_spec(roofline_chart([], ceilings))
    assert _values(_point_layer(spec)) == []
    assert "NVIDIA H200" in chart_svg(spec)


def test_benchmark_lines_bands_and_tooltips():
    rows = [{"provider": p, "size": s, "gbps": g, "gbps_lo": g * 0.9, "gbps_hi": g * 1.1, "ms": 0.1}
            for p, g0 in (("torch", 100.0), ("triton", 120.0)) for s, g in ((1024, g0), (4096, g0 * 2))]
    spec = chart_spec(benchmark_chart(rows, x="size", y="gbps", y_lo="gbps_lo", y_hi="gbps_hi",
                                      xlabel="elements", ylabel="GB/s", title="add"))
    band, line = _layers(spec)[:2]
    assert band["mark"]["type"] == "area" and band["encoding"]["y2"]["field"] == "gbps_hi"
    assert line["encoding"]["x"]["scale"] == {"type": "log", "base": 2, "nice": False}  # powers of two
    assert [t["field"] for t in line["encoding"]["tooltip"]][:5] == ["provider", "size", "gbps", "gbps_lo", "gbps_hi"]
    (param,) = [p for p in spec.get("params", []) + line.get("params", []) if "select" in p]
    assert param["bind"] == "legend" and [v["provider"] for v in param["value"]] == ["torch", "triton"]
    assert len(_values(line, spec)) == 4


def test_benchmark_log_y_rules_and_a_missing_key():
    rows = [{"impl": "a", "n": 3, "tflops": 1.5}, {"impl": "a", "n": 10, "tflops": 2.5}]
    spec = chart_spec(benchmark_chart(rows, x="n", y="tflops", provider="impl", xlabel="n", ylabel="TFLOP/s",
                                      logy=True, rules=[(4.0, "roof")], x_rules=[(5.0, "ridge")]))
    line = _layers(spec)[0]
    assert line["encoding"]["y"]["scale"]["type"] == "log"
    assert line["encoding"]["x"]["scale"]["base"] == 10  # 3 is not a power of two
    rules = [layer for layer in _layers(spec) if layer["mark"]["type"] == "rule"]
    assert [_values(r)[0]["label"] for r in rules] == ["roof", "ridge"]
    with pytest.raises(KeyError, match="row 1 has no 'gbps'"):
        benchmark_chart([{"size": 1, "provider": "a", "gbps": 1}, {"size": 2, "provider": "a"}],
                        x="size", y="gbps", xlabel="", ylabel="")


def test_chart_files_are_the_spec_and_its_svg(points, ceilings):
    files = chart_files(roofline_chart(points, ceilings, title="every kernel"), "kernels/roofline")
    assert set(files) == {"kernels/roofline.vega.json", "kernels/roofline.vega.svg"}
    spec = json.loads(files["kernels/roofline.vega.json"])
    assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/v5")
    svg = files["kernels/roofline.vega.svg"].decode()
    assert svg.startswith("<svg") and "every kernel" in svg and "tiled matmul" in svg  # title and legend


def test_the_notebook_renderer_gives_the_jupyter_output_and_its_svg(points, ceilings):
    bundle = roofline_chart(points, ceilings, title="in a notebook")._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    assert set(bundle) == {VEGALITE_MIME, "image/svg+xml", "text/plain"}
    assert bundle[VEGALITE_MIME]["layer"][-1]["data"]["values"]  # data inline, not a URL
    assert "in a notebook" in bundle["image/svg+xml"] and "in a notebook" in bundle["text/plain"]


def test_heatmap_days_have_tooltips_and_links():
    words = {dt.date(2026, 11, 2): 120, dt.date(2026, 11, 3): 40, dt.date(2026, 11, 5): 300}
    cells = heatmap_cells(words, until=dt.date(2026, 11, 8))
    chart = heatmap_chart(cells, lambda d: f"{d.isoformat()}/", {dt.date(2026, 11, 2): "T-6"}.get)
    spec = chart_spec(chart)
    days = _layers(spec)[0]
    rows = {r["date"]: r for r in _values(days)}
    assert rows["2026-11-02"] == {"date": "2026-11-02", "weekday": "Mon", "week": 0, "words": 120, "entry": "yes",
                                  "counter": "T-6", "band": rows["2026-11-02"]["band"], "url": "2026-11-02/"}
    assert rows["2026-11-04"]["url"] == "" and rows["2026-11-04"]["entry"] == "no entry"  # no page to open
    assert rows["2026-11-08"]["band"] == "target date" and rows["2026-11-07"]["band"] == "to come"
    assert days["encoding"]["href"]["field"] == "url"
    assert [t["field"] for t in days["encoding"]["tooltip"]] == ["date", "words", "counter", "entry"]
    assert "Words per day" in chart_svg(spec)
    assert heatmap_chart([], lambda d: None) is None


def _compiled_legends(spec: dict) -> list[dict]:
    """The legends of the Vega spec vl-convert compiles ``spec`` to."""
    import vl_convert

    found = []

    def walk(node):
        if isinstance(node, dict):
            found.extend(node.get("legends", []))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(vl_convert.vegalite_to_vega(spec, vl_version="5.20"))
    return found


def test_the_compiled_legends_take_clicks(points, ceilings):
    """Vega-Lite drops a legend's click binding when another layer uses the same channel;
    the compiled legend must have interactive labels and symbols."""
    rows = [{"provider": p, "n": n, "y": 1.0 + n, "lo": 1.0, "hi": 2.0 + n} for p in ("a", "b") for n in (1, 2)]
    for chart in (roofline_chart(points, ceilings),
                  benchmark_chart(rows, x="n", y="y", y_lo="lo", y_hi="hi", xlabel="n", ylabel="y",
                                  rules=[(3.0, "roof")])):
        (legend,) = _compiled_legends(chart_spec(chart))
        assert legend["encode"]["labels"]["interactive"] and legend["encode"]["symbols"]["interactive"]


def test_specs_are_the_same_from_one_build_to_the_next(points, ceilings):
    """Altair numbers unnamed views per process; the charts name theirs, so that the plugin and
    ``worklog-gen generate`` (or two builds in one process) write the same bytes."""
    rows = [{"provider": "a", "n": 1, "y": 1.0, "lo": 0.5, "hi": 2.0}]
    for make in (lambda: roofline_chart(points, ceilings),
                 lambda: benchmark_chart(rows, x="n", y="y", y_lo="lo", y_hi="hi", xlabel="", ylabel="")):
        first, second = (json.dumps(chart_spec(make()), sort_keys=True) for _ in range(2))
        assert first == second and "view_" not in first
