"""Paired timing: a baseline and a candidate timed back to back, round after round.

The H200 runs at its 700 W power cap, where the SM clock follows the load and drifts by
a few percent over seconds. Timing two kernels minutes apart then compares two clocks as
much as two kernels. Timed in pairs, each round's ratio sees one clock, and alternating
which goes first cancels a drift within the round.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class PairedRatio:
    """Baseline time / candidate time over paired rounds.

    ratio: median over rounds of each round's ratio (> 1: the candidate is faster).
    lo, hi: the smallest and largest round ratio.
    baseline_ms, candidate_ms: median times, ms.
    rounds: how many rounds.
    """

    ratio: float
    lo: float
    hi: float
    baseline_ms: float
    candidate_ms: float
    rounds: int

    def spread(self) -> str:
        return f"{self.lo:.3f}-{self.hi:.3f}"


def paired_ratio(baseline: Callable[[], object], candidate: Callable[[], object], *, rounds: int = 9,
                 timer: Callable[[Callable[[], object]], float] | None = None) -> PairedRatio:
    """Time ``baseline`` and ``candidate`` back to back ``rounds`` times, the baseline first
    in even rounds and second in odd ones.

    Args:
        baseline, candidate: functions of no arguments that launch the work.
        rounds: paired rounds, at least 1.
        timer: ``fn -> ms``; default the median of :func:`worklog_gen.kit.measure.bench`
            (``triton.testing.do_bench``, L2 flushed before each call).

    Returns:
        The median ratio baseline / candidate, its range, and the median times.

    Raises:
        ValueError: ``rounds`` < 1 or a time that is not positive.
        RuntimeError: no CUDA device, from the default timer.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if timer is None:
        from worklog_gen.kit.measure import bench

        def timer(fn):
            return bench(fn).ms

    ratios, base_ms, cand_ms = [], [], []
    for k in range(rounds):
        if k % 2 == 0:
            b = timer(baseline)
            c = timer(candidate)
        else:
            c = timer(candidate)
            b = timer(baseline)
        if b <= 0 or c <= 0:
            raise ValueError(f"times must be positive, got {b} and {c} ms")
        ratios.append(b / c)
        base_ms.append(b)
        cand_ms.append(c)
    return PairedRatio(ratio=statistics.median(ratios), lo=min(ratios), hi=max(ratios),
                       baseline_ms=statistics.median(base_ms), candidate_ms=statistics.median(cand_ms),
                       rounds=rounds)
