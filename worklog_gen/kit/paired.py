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
    baseline_all, candidate_all: each round's two times, ms, in round order.
    """

    ratio: float
    lo: float
    hi: float
    baseline_ms: float
    candidate_ms: float
    rounds: int
    baseline_all: tuple[float, ...] = ()
    candidate_all: tuple[float, ...] = ()

    @classmethod
    def from_times(cls, baseline_ms: list[float], candidate_ms: list[float]) -> "PairedRatio":
        """The ratio of rounds whose times are ``baseline_ms[i]`` and ``candidate_ms[i]``, ms.
        Raises ValueError on no rounds or a time that is not positive."""
        if not baseline_ms or len(baseline_ms) != len(candidate_ms):
            raise ValueError(f"need paired times, got {len(baseline_ms)} and {len(candidate_ms)}")
        if min(baseline_ms) <= 0 or min(candidate_ms) <= 0:
            raise ValueError(f"times must be positive, got {baseline_ms} and {candidate_ms} ms")
        ratios = [b / c for b, c in zip(baseline_ms, candidate_ms)]
        return cls(ratio=statistics.median(ratios), lo=min(ratios), hi=max(ratios),
                   baseline_ms=statistics.median(baseline_ms), candidate_ms=statistics.median(candidate_ms),
                   rounds=len(ratios), baseline_all=tuple(baseline_ms), candidate_all=tuple(candidate_ms))

    @property
    def ratios(self) -> tuple[float, ...]:
        """Each round's baseline time / candidate time."""
        return tuple(b / c for b, c in zip(self.baseline_all, self.candidate_all))

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
    timer = timer or _bench_ms
    base_ms, cand_ms = [], []
    for k in range(rounds):
        b, c = _pair(baseline, candidate, k % 2 == 0, timer)
        base_ms.append(b)
        cand_ms.append(c)
    return PairedRatio.from_times(base_ms, cand_ms)


def rank_paired(baseline: Callable[[], object], candidates: dict[str, Callable[[], object]], *, rounds: int = 3,
                timer: Callable[[Callable[[], object]], float] | None = None) -> list[tuple[str, PairedRatio]]:
    """Rank ``candidates`` (name -> function of no arguments) by their paired ratio against ``baseline``.

    Each of ``rounds`` rounds pairs every candidate with the baseline once, as
    :func:`paired_ratio` does. A round starts from the next candidate in turn, and who goes
    first alternates pair by pair, so each candidate's pairs are spread over the whole
    measurement rather than bunched at one clock.

    The best of several noisy medians is biased upwards (the winner's curse): time the winner
    again in fresh rounds with :func:`paired_ratio` before reporting its ratio.

    Returns:
        ``[(name, PairedRatio)]``, the highest median ratio first.

    Raises:
        ValueError: no candidates, ``rounds`` < 1, or a time that is not positive.
    """
    if not candidates or rounds < 1:
        raise ValueError(f"need candidates and at least one round, got {len(candidates)} and {rounds}")
    timer = timer or _bench_ms
    names = list(candidates)
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in names}
    for r in range(rounds):
        start = r % len(names)
        for i, name in enumerate(names[start:] + names[:start]):
            b, c = _pair(baseline, candidates[name], (r + i) % 2 == 0, timer)
            times[name][0].append(b)
            times[name][1].append(c)
    ranked = [(name, PairedRatio.from_times(*times[name])) for name in names]
    return sorted(ranked, key=lambda item: -item[1].ratio)


def _bench_ms(fn: Callable[[], object]) -> float:
    from worklog_gen.kit.measure import bench

    return bench(fn).ms


def _pair(baseline, candidate, baseline_first: bool, timer) -> tuple[float, float]:
    """(baseline ms, candidate ms), timed back to back in the order given."""
    if baseline_first:
        b = timer(baseline)
        return b, timer(candidate)
    c = timer(candidate)
    return timer(baseline), c
