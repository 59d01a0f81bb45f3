"""Unit math and data round trips of worklog_gen.kit.measure (no GPU needed)."""

from __future__ import annotations

import json
import math

import pytest

from worklog_gen.kit import measure
from worklog_gen.kit.measure import H100_SXM, H200_SXM, Ceilings, Datasheet, Timing


def test_gbps_counts_decimal_gigabytes_per_second():
    # 8e9 bytes in 2 ms is 4e12 bytes/s, i.e. 4000 GB/s
    assert measure.gbps(8e9, 2.0) == pytest.approx(4000.0)
    # a copy of 2**31 bytes reads and writes: 2 * 2**31 bytes in 1 ms
    assert measure.gbps(2 * 2**31, 1.0) == pytest.approx(4294.967296)


def test_tflops_of_a_square_matmul():
    n = 8192
    # 2 n^3 = 1.0995e12 FLOP in 1.5 ms is 733.0 TFLOP/s
    assert measure.tflops(2 * n**3, 1.5) == pytest.approx(2 * 8192**3 / 1.5e-3 / 1e12)
    assert measure.tflops(2 * n**3, 1.5) == pytest.approx(733.0, rel=1e-3)


@pytest.mark.parametrize("fn", [measure.gbps, measure.tflops])
@pytest.mark.parametrize("ms", [0.0, -1.0])
def test_rates_reject_non_positive_time(fn, ms):
    with pytest.raises(ValueError, match="positive"):
        fn(1e9, ms)


def test_ridge_point_is_compute_roof_over_memory_roof():
    c = Ceilings("NVIDIA H200", copy_gbps=4000, bf16_tflops=800, tf32_tflops=400, fp32_tflops=67)
    # 800e12 FLOP/s / 4000e9 B/s = 200 FLOP/byte
    assert c.ridge_point() == pytest.approx(200.0)
    assert c.ridge_point("tf32") == pytest.approx(100.0)
    assert c.ridge_point("fp32") == pytest.approx(16.75)
    with pytest.raises(ValueError, match="unknown roof"):
        c.ridge_point("fp8")


def test_attainable_is_the_lower_of_the_two_roofs():
    c = Ceilings("X", copy_gbps=4000, bf16_tflops=800, tf32_tflops=400, fp32_tflops=67)
    assert c.attainable_tflops(0.25, "fp32") == pytest.approx(1.0)  # memory bound: 4000 GB/s * 0.25
    assert c.attainable_tflops(1000, "bf16") == pytest.approx(800.0)  # compute bound


def test_datasheet_dense_rates_are_half_the_sparse_figures():
    # the datasheet prints 1,979 (bf16) and 989 (tf32) TFLOP/s with sparsity
    assert H200_SXM.bf16_tflops == pytest.approx(1979 / 2, abs=0.1)
    assert H200_SXM.tf32_tflops == pytest.approx(989 / 2, abs=0.3)
    assert H200_SXM.hbm_gbps == 4800 and H100_SXM.hbm_gbps == 3350
    assert H200_SXM.ridge_point("bf16") == pytest.approx(989.5e12 / 4800e9)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA H200", H200_SXM),
        ("NVIDIA H100 80GB HBM3", H100_SXM),
        ("NVIDIA H100-SXM5-80GB", H100_SXM),
        ("NVIDIA H100 PCIe", measure.H100_PCIE),
        ("NVIDIA H100 NVL", None),
        ("NVIDIA H200 NVL", None),
        ("NVIDIA A100-SXM4-80GB", measure.A100_SXM_80GB),
        ("NVIDIA A100 80GB PCIe", measure.A100_PCIE_80GB),
        ("NVIDIA A100-SXM4-40GB", measure.A100_40GB),
        ("NVIDIA A100-PCIE-40GB", measure.A100_40GB),
        ("NVIDIA L4", measure.L4),
        ("NVIDIA L40S", measure.L40S),
        ("NVIDIA L40", None),
        ("NVIDIA GeForce RTX 4090", measure.RTX_4090),
        ("NVIDIA GeForce RTX 4080", None),
        ("NVIDIA B200", measure.B200),
        ("NVIDIA GeForce RTX 3090", None),
        ("", None),
    ],
)
def test_datasheet_for_device_names(name, expected):
    assert measure.datasheet_for(name) == expected


def test_every_datasheet_is_dense_sourced_and_reachable():
    """Each sheet names its source; its tensor rates are at least the fp32 rate and bf16 is twice
    tf32 (true of every card listed, dense); and each is what some device name finds."""
    sheets = [sheet for _, _, sheet in measure.DATASHEETS]
    assert len({s.name for s in sheets}) == len(sheets)
    for sheet in sheets:
        assert sheet.source and sheet.hbm_gbps > 0
        assert sheet.bf16_tflops == sheet.fp16_tflops
        assert sheet.tf32_tflops >= sheet.fp32_tflops
        assert sheet.bf16_tflops == pytest.approx(2 * sheet.tf32_tflops, rel=0.02)
        assert measure.datasheet_for(sheet.name) == sheet


def test_ceilings_round_trip_through_json():
    c = Ceilings("NVIDIA H200", copy_gbps=4123.4, bf16_tflops=712.5, tf32_tflops=371.0, fp32_tflops=67,
                 datasheet=H200_SXM, fp32_source="datasheet: vendor")
    back = Ceilings.from_dict(json.loads(json.dumps(c.to_dict())))
    assert back == c
    assert isinstance(back.datasheet, Datasheet)
    assert back.ridge_point("bf16") == c.ridge_point("bf16")


def test_ceilings_round_trip_without_datasheet_and_old_data():
    c = Ceilings("Unknown GPU", copy_gbps=900, bf16_tflops=150, tf32_tflops=75, fp32_tflops=19)
    assert Ceilings.from_dict(c.to_dict()) == c
    data = c.to_dict()
    del data["fp32_source"]  # written before the field existed: takes the default
    assert Ceilings.from_dict(data).fp32_source == "datasheet"


def test_ceilings_from_dict_names_missing_fields():
    with pytest.raises(ValueError, match="copy_gbps"):
        Ceilings.from_dict({"device": "X", "bf16_tflops": 1, "tf32_tflops": 1, "fp32_tflops": 1})


def test_bench_without_cuda_raises_a_clear_error():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(RuntimeError, match="CUDA device"):
        measure.bench(lambda: None)
    with pytest.raises(RuntimeError, match="CUDA device"):
        measure.measure_ceilings()


def test_bench_returns_median_and_quantiles_from_do_bench(monkeypatch):
    """bench asks do_bench for the median and the 20th/80th percentiles, in that order."""
    triton_testing = pytest.importorskip("triton.testing")
    calls = {}

    def fake_do_bench(fn, *, warmup, rep, quantiles):
        calls.update(warmup=warmup, rep=rep, quantiles=quantiles)
        fn()
        return [1.5, 1.25, 2.0]

    ran = []
    monkeypatch.setattr(measure, "_require_cuda", lambda: None)
    monkeypatch.setattr(triton_testing, "do_bench", fake_do_bench)
    t = measure.bench(lambda: ran.append(1), warmup=5, rep=7)
    assert t == Timing(ms=1.5, ms_lo=1.25, ms_hi=2.0)
    assert calls == {"warmup": 5, "rep": 7, "quantiles": [0.5, 0.2, 0.8]}
    assert ran == [1]


def test_gpu_info_tolerates_missing_gpu():
    info = measure.gpu_info()
    assert {"device", "sm_count", "memory_gib", "driver", "cuda", "torch", "triton", "python"} <= set(info)
    assert info["python"].count(".") == 2
    json.dumps(info)  # JSON-able, for save_data
    torch = pytest.importorskip("torch")
    assert info["torch"] == torch.__version__
    if not torch.cuda.is_available():
        assert info["device"] is None and info["sm_count"] is None


def test_rates_are_inverse_in_time():
    # halving the time doubles the rate, for both units
    assert measure.gbps(1e9, 0.5) == pytest.approx(2 * measure.gbps(1e9, 1.0))
    assert math.isclose(measure.tflops(1e12, 1000.0), 1.0)


def test_measure_ceilings_arithmetic_on_cpu_stand_ins(monkeypatch):
    """The bookkeeping of measure_ceilings, with CPU tensors standing in for CUDA ones and a
    fixed 2 ms per call: bytes counted twice for a copy, 2 n^3 FLOP per matmul, tf32 setting
    restored, fp32 from the datasheet of a known device."""
    torch = pytest.importorskip("torch")
    real_randn = torch.randn
    seen = []

    def cpu_randn(*shape, device=None, dtype=None):
        x = real_randn(*shape, dtype=dtype)
        seen.append((x.dtype, torch.backends.cuda.matmul.allow_tf32))
        return x

    def fixed_bench(fn, **_):
        fn()
        return Timing(2.0, 1.9, 2.1)

    monkeypatch.setattr(measure, "_require_cuda", lambda: None)
    monkeypatch.setattr(measure, "bench", fixed_bench)
    monkeypatch.setattr(torch, "randn", cpu_randn)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    torch.backends.cuda.matmul.allow_tf32 = False

    c = measure.measure_ceilings(copy_bytes=4096, matmul_n=16)
    assert c.copy_gbps == pytest.approx(2 * 4096 / 2e-3 / 1e9)
    assert c.bf16_tflops == c.tf32_tflops == pytest.approx(2 * 16**3 / 2e-3 / 1e12)
    assert (c.fp32_tflops, c.datasheet) == (67, H200_SXM) and c.fp32_source.startswith("datasheet")
    assert torch.backends.cuda.matmul.allow_tf32 is False  # restored
    # copy source fp32; bf16 operands; fp32 operands built while tf32 was allowed
    assert seen[0][0] == torch.float32
    assert [d for d, _ in seen[1:3]] == [torch.bfloat16] * 2
    assert seen[3:5] == [(torch.float32, True)] * 2

    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Some Future GPU")
    c = measure.measure_ceilings(copy_bytes=4096, matmul_n=16)
    assert c.datasheet is None and c.fp32_source.startswith("measured")
    assert seen[-1] == (torch.float32, False)  # fp32 measured with tf32 off
