"""Roofline points and their saved form (synthetic data, no GPU); the charts are in test_charts.py."""

from __future__ import annotations

import json

import pytest

from worklog_gen.kit.measure import Timing
from worklog_gen.kit.notebook import OUTPUT_ENV
from worklog_gen.kit.roofline import RooflinePoint, load_roofline, save_roofline

N = 2**24  # elements of a vector add (the ``points`` fixture in conftest.py)


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
