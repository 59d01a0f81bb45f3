"""nvidia-smi samples, clock-event reasons and work per clock (worklog_gen.kit.power), without a GPU."""

from __future__ import annotations

import pytest

from worklog_gen.kit.power import (SMI_FIELDS, TENSOR_FLOP_PER_CLK_SM, clock_split, flop_per_clock, parse_smi,
                                   reason_names, sustained)


def test_smi_samples_are_parsed_and_broken_lines_skipped():
    text = "\n".join([
        "2026/11/21 09:01:02.125, 1455, 703.52, 51, 0x0000000000000004",
        "2026/11/21 09:01:02.176, 1470, [N/A], 51, 0x0000000000000004",  # a value the driver could not read
        "Failed to query: the sampler was stopped",
        "2026/11/21 09:01:02.227, 1485, 711.0",  # cut short
        "2026/11/21 09:01:02.278, 1500, 698.25, 52, 0x0000000000000005",
    ])
    samples = parse_smi(text)
    assert [s["sm_mhz"] for s in samples] == [1455.0, 1500.0]
    assert [s["power_w"] for s in samples] == [703.52, 698.25]
    assert [s["reasons"] for s in samples] == [0x4, 0x5] and samples[1]["temp_c"] == 52.0
    assert samples[0]["time"].microsecond == 125000 and samples[0]["time"] < samples[1]["time"]
    assert len(SMI_FIELDS) == 5  # the fields parse_smi reads, in its order


def test_clock_event_reasons_are_named_from_the_nvml_bits():
    names = reason_names
    assert names(0x4) == ["SW power cap"]
    assert names(0x1 | 0x4 | 0x40) == ["GPU idle", "SW power cap", "HW thermal slowdown"]
    assert names(0) == [] and names(0x4 | 0x400) == ["SW power cap", "0x400"]  # a bit newer than the table


def test_work_per_clock_matches_the_datasheet_peak_at_its_clock():
    # 132 SMs x 4096 dense bf16 FLOP per clock at 1.83 GHz is the H100/H200 datasheet's 989.4 TFLOP/s
    peak = TENSOR_FLOP_PER_CLK_SM["bf16"]
    assert flop_per_clock(132 * peak * 1.83e9 / 1e12, 1830, 132) == pytest.approx(peak)
    assert flop_per_clock(989.4, 1830, 132) == pytest.approx(4096, rel=1e-3)
    assert TENSOR_FLOP_PER_CLK_SM["tf32"] * 2 == peak == TENSOR_FLOP_PER_CLK_SM["fp16"]


def test_sustained_says_none_without_nvidia_smi(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert sustained(lambda: None) is None


def test_clock_split_means_each_provider_over_its_runs_and_skips_unsampled_ones():
    # two providers, the order baseline, kernel, kernel, baseline; the last run gets no samples
    samples = iter([{"ms": 2.0, "sm_mhz": 1500, "power_w": 700, "temp_c": 60, "reasons": 0x4, "samples": 40, "calls": 900},
                    {"ms": 1.0, "sm_mhz": 1800, "power_w": 690, "temp_c": 61, "reasons": 0x0, "samples": 40, "calls": 1800},
                    {"ms": 1.0, "sm_mhz": 1600, "power_w": 710, "temp_c": 62, "reasons": 0x4, "samples": 40, "calls": 1800},
                    None])
    flops = 1e12  # 1 TFLOP a call: 500 TFLOP/s at 2 ms, 1000 at 1 ms
    rows, means = clock_split({"cudnn": None, "triton": None}, ["cudnn", "triton", "triton", "cudnn"], flops, 132,
                              measure=lambda fn: next(samples))
    assert [(r["provider"], r["run"]) for r in rows] == [("cudnn", 0), ("triton", 1), ("triton", 2)]
    assert rows[0]["tflops"] == pytest.approx(500) and rows[0]["pj_per_flop"] == pytest.approx(1.4)
    assert rows[0]["reasons"] == "SW power cap"
    assert means["triton"]["tflops"] == pytest.approx(1000) and means["triton"]["sm_mhz"] == pytest.approx(1700)
    per_clock = (flop_per_clock(1000, 1800, 132) + flop_per_clock(1000, 1600, 132)) / 2
    assert means["triton"]["flop_per_clk_sm"] == pytest.approx(per_clock)
    assert means["triton"]["% of dense peak"] == pytest.approx(100 * per_clock / 4096)
    assert means["triton"]["reasons"] == "SW power cap"
    assert clock_split({"x": None}, ["x"], flops, 132, measure=lambda fn: None) == ([], {})
