"""``kit.attention`` (the baselines of the FlashAttention topic) and ``kit.compiler``, on the CPU."""

from __future__ import annotations

import math
import os

import pytest

from worklog_gen.kit.compiler import compiler_output_kept, failed_pass


def test_the_compiler_output_is_kept_out_of_file_descriptor_2_and_handed_back():
    with compiler_output_kept() as lines:
        os.write(2, b"error: Failures have been detected\n")
        os.write(2, b"note: Pipeline failed while executing [`NVGPUWarpSpecialization` on 'builtin.module']\n")
    assert lines[0].startswith("error:") and len(lines) == 2
    assert failed_pass(lines) == "NVGPUWarpSpecialization"


def test_the_output_comes_back_when_the_block_raises_and_no_pass_is_named():
    with pytest.raises(RuntimeError), compiler_output_kept() as lines:
        os.write(2, b"PassManager::run failed\n")
        raise RuntimeError("compile")
    assert lines == ["PassManager::run failed"] and failed_pass(lines) == ""


def naive(q, k, v, causal):
    import torch

    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


@pytest.mark.parametrize("causal", [False, True])
def test_an_sdpa_backend_chosen_by_name_computes_attention(causal):
    torch = pytest.importorskip("torch")
    from worklog_gen.kit.attention import sdpa, sdpa_backends

    q, k, v = (torch.randn(1, 2, 33, 16) for _ in range(3))
    out = sdpa(sdpa_backends()["sdpa math"])(q, k, v, causal)
    assert (out - naive(q, k, v, causal)).abs().max().item() < 1e-5


def test_backward_only_returns_the_gradients_of_the_forward_each_call():
    torch = pytest.importorskip("torch")
    from worklog_gen.kit.attention import backward_only

    q, k, v, do = (torch.randn(1, 2, 9, 8) for _ in range(4))
    run = backward_only(naive, q, k, v, do, True)
    qf, kf, vf = (t.clone().requires_grad_() for t in (q, k, v))
    naive(qf, kf, vf, True).backward(do)
    for _ in range(2):  # the graph is kept between calls
        for got, expected in zip(run(), (qf.grad, kf.grad, vf.grad)):
            assert torch.allclose(got, expected, atol=1e-6)


def test_a_step_against_cudnn_is_timed_in_pairs_and_becomes_a_table_row(monkeypatch):
    from worklog_gen.kit import paired
    from worklog_gen.kit.attention import step_against_cudnn

    times = {"cudnn": iter([2.0, 2.2, 1.8]), "step": iter([4.0, 4.0, 4.0])}
    monkeypatch.setattr(paired, "_bench_ms", lambda fn: next(times[fn()]))
    pairs, row = step_against_cudnn(lambda: "cudnn", lambda: "step", 8e12, rounds=3, mask="causal", step="v1")
    assert list(row) == ["mask", "step", "TFLOP/s", "% of cuDNN", "spread"]
    assert (row["mask"], row["step"]) == ("causal", "v1")
    assert pairs.ratio == pytest.approx(0.5) and row["% of cuDNN"] == pytest.approx(50.0)
    assert row["TFLOP/s"] == pytest.approx(8e12 / 4e-3 / 1e12)  # 8 TFLOP in 4 ms
    assert row["spread"] == pairs.spread()
