"""Clock and power under load: ``nvidia-smi`` sampled while a kernel runs back to back.

A GPU at its power cap lowers its SM clock until the board's power fits, so throughput is
SMs x SM clock x FLOP per SM per clock, and two kernels can differ in either factor: in work
per clock (the kernel's schedule) or in the clock the card allows it (its joules per FLOP).
:func:`sustained` measures both for one kernel; the notebooks run it for a kernel and its
torch baseline in the order baseline, kernel, kernel, baseline, so that slow drift cancels.

torch is imported inside :func:`sustained`, so the parsing helpers are importable (and
tested) without it.
"""

from __future__ import annotations

import datetime
import shutil
import statistics
import subprocess
import time
from typing import Callable

SMI_FIELDS = ("timestamp", "clocks.sm", "power.draw.instant", "temperature.gpu", "clocks_event_reasons.active")
"""What the sampler asks ``nvidia-smi --query-gpu`` for (see ``nvidia-smi --help-query-gpu``)."""
CLOCK_EVENT_REASONS = {0x1: "GPU idle", 0x2: "applications clocks setting", 0x4: "SW power cap",
                       0x8: "HW slowdown", 0x10: "sync boost", 0x20: "SW thermal slowdown",
                       0x40: "HW thermal slowdown", 0x80: "HW power brake slowdown"}
"""Bits of the clock-event mask: NVML's ``nvmlClocksEventReasons`` (NVML API reference)."""
TENSOR_FLOP_PER_CLK_SM = {"bf16": 4096, "fp16": 4096, "tf32": 2048}
"""Dense tensor-core FLOP per SM per clock on Hopper: 4 tensor cores x 512 fp16/bf16 FMA (256 tf32)
per clock, H100 architecture whitepaper; 132 SMs x 4096 x 1.83 GHz gives the datasheet's 989 TFLOP/s."""
SUSTAIN_S = 2.0
"""Seconds a kernel runs per :func:`sustained` measurement, after 0.5 s of warm-up."""


def parse_smi(text: str) -> list[dict]:
    """Samples from ``nvidia-smi --query-gpu=<SMI_FIELDS> --format=csv,noheader,nounits`` output.

    Each sample: ``time`` (datetime, the host's local clock), ``sm_mhz`` (MHz), ``power_w`` (W),
    ``temp_c`` (degrees C) and ``reasons`` (int bit mask, see :data:`CLOCK_EVENT_REASONS`). A line
    that is not a whole sample (an error message, a value reported as ``[N/A]``, a line cut short
    when the sampler is stopped) is skipped.
    """
    samples = []
    for line in text.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != len(SMI_FIELDS):
            continue
        try:
            samples.append({"time": datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f"),
                            "sm_mhz": float(parts[1]), "power_w": float(parts[2]), "temp_c": float(parts[3]),
                            "reasons": int(parts[4], 16)})
        except ValueError:
            continue
    return samples


def reason_names(mask: int) -> list[str]:
    """Names of the clock-event reasons set in ``mask``; a bit NVML's list lacks is given in hex."""
    names = [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]
    rest = mask & ~sum(CLOCK_EVENT_REASONS)
    return names + ([hex(rest)] if rest else [])


def flop_per_clock(tflops: float, sm_mhz: float, sms: int) -> float:
    """FLOP per SM per clock: TFLOP/s x 1e12 / (SM clock MHz x 1e6 x SMs)."""
    return tflops * 1e12 / (sm_mhz * 1e6 * sms)


def sustained(fn: Callable[[], object], seconds: float = SUSTAIN_S, interval_ms: int = 50) -> dict | None:
    """Run ``fn`` back to back for ``seconds`` while ``nvidia-smi`` samples the GPU every ``interval_ms``.

    ``fn`` launches the GPU work (e.g. one matmul); calls go in batches of about 50 ms, with a
    synchronize between batches so that the samples fall inside the work. No L2 flush: this is
    the steady state.

    Returns:
        ``ms`` (mean per call, from CUDA events over the whole timed loop), ``calls``,
        ``samples`` (how many fell inside the loop), the medians ``sm_mhz``, ``power_w`` and
        ``temp_c`` of those samples, and ``reasons`` (the OR of their clock-event masks).
        ``None`` if ``nvidia-smi`` is missing or gave no sample inside the loop.
    """
    import torch

    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    batch = max(1, round(0.05 / (time.perf_counter() - t0)))
    smi = subprocess.Popen([exe, f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits",
                            "-lms", str(interval_ms)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        warm_until = time.perf_counter() + 0.5
        while time.perf_counter() < warm_until:
            for _ in range(batch):
                fn()
            torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin, calls = datetime.datetime.now(), 0
        start.record()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            for _ in range(batch):
                fn()
            calls += batch
            torch.cuda.synchronize()
        end.record()
        end.synchronize()
        finish = datetime.datetime.now()
    finally:
        smi.terminate()
        text = smi.communicate(timeout=20)[0]
    inside = [s for s in parse_smi(text) if begin <= s["time"] <= finish]
    if not inside:
        return None
    mask = 0
    for s in inside:
        mask |= s["reasons"]
    return {"ms": start.elapsed_time(end) / calls, "calls": calls, "samples": len(inside),
            "sm_mhz": statistics.median(s["sm_mhz"] for s in inside),
            "power_w": statistics.median(s["power_w"] for s in inside),
            "temp_c": statistics.median(s["temp_c"] for s in inside), "reasons": mask}


def clock_split(runs: dict[str, Callable[[], object]], order: list[str], flops: float, sms: int,
                dtype: str = "bf16", measure: Callable[[Callable[[], object]], dict | None] = sustained,
                ) -> tuple[list[dict], dict[str, dict]]:
    """:func:`sustained` runs of ``runs[name]`` for each name in ``order`` (baseline, kernel, kernel,
    baseline, so that slow drift cancels), each call doing ``flops`` FLOPs on ``sms`` SMs.

    Returns ``(rows, means)``. One row per run that ``nvidia-smi`` sampled: ``provider``, ``run``
    (its index in ``order``), ``tflops``, ``sm_mhz``, ``power_w``, ``temp_c``, ``flop_per_clk_sm``
    (:func:`flop_per_clock`), ``pj_per_flop`` (W per TFLOP/s), ``reasons`` (names), ``samples`` and
    ``calls``. ``means[provider]``: the mean of its rows' numbers, ``% of dense peak`` (FLOP per SM
    per clock over :data:`TENSOR_FLOP_PER_CLK_SM` ``[dtype]``) and its distinct reasons. Both are
    empty where ``nvidia-smi`` is missing or gave no sample.
    """
    rows = []
    for i, name in enumerate(order):
        s = measure(runs[name])
        if s is None:
            continue
        tf = flops / s["ms"] / 1e9
        rows.append({"provider": name, "run": i, "tflops": tf, "sm_mhz": s["sm_mhz"], "power_w": s["power_w"],
                     "temp_c": s["temp_c"], "flop_per_clk_sm": flop_per_clock(tf, s["sm_mhz"], sms),
                     "pj_per_flop": s["power_w"] / tf, "reasons": ", ".join(reason_names(s["reasons"])),
                     "samples": s["samples"], "calls": s["calls"]})
    means = {}
    for name in dict.fromkeys(r["provider"] for r in rows):
        mine = [r for r in rows if r["provider"] == name]
        means[name] = {key: statistics.fmean(r[key] for r in mine)
                       for key in ("tflops", "sm_mhz", "power_w", "flop_per_clk_sm", "pj_per_flop")}
        means[name]["% of dense peak"] = 100 * means[name]["flop_per_clk_sm"] / TENSOR_FLOP_PER_CLK_SM[dtype]
        means[name]["reasons"] = "; ".join(sorted({r["reasons"] for r in mine if r["reasons"]}))
    return rows, means
