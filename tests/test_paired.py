"""worklog_gen.kit.paired with fake timers: the order alternates, drift cancels, errors are named."""

from __future__ import annotations

import pytest

from worklog_gen.kit.paired import paired_ratio, rank_paired


def test_the_order_alternates_and_the_ratio_is_the_median():
    calls = []

    def timer(fn):
        calls.append(fn.__name__)
        return {"base": 2.0, "cand": 1.0}[fn.__name__]

    def base():
        pass

    def cand():
        pass

    result = paired_ratio(base, cand, rounds=4, timer=timer)
    assert calls == ["base", "cand", "cand", "base", "base", "cand", "cand", "base"]
    assert result.ratio == 2.0 and result.lo == result.hi == 2.0
    assert (result.baseline_ms, result.candidate_ms, result.rounds) == (2.0, 1.0, 4)


def test_a_clock_that_drifts_between_calls_cancels_in_the_median():
    clock = {"t": 1.0}

    def timer(fn):
        clock["t"] *= 1.02  # each call 2 % slower than the last, as a card warming to its cap
        return clock["t"] * (1.0 if fn.__name__ == "base" else 0.5)

    def base():
        pass

    def cand():
        pass

    result = paired_ratio(base, cand, rounds=9, timer=timer)
    # candidate-first rounds read 2 * 1.02 and baseline-first rounds 2 / 1.02
    assert result.lo == pytest.approx(2 / 1.02) and result.hi == pytest.approx(2 * 1.02)
    assert result.ratio == pytest.approx(2 / 1.02)  # 5 baseline-first rounds of 9
    assert abs(result.ratio - 2.0) < abs(2 * 1.02 ** 9 - 2.0)


@pytest.mark.parametrize("rounds", [0, -1])
def test_no_rounds_is_an_error(rounds):
    with pytest.raises(ValueError, match="rounds"):
        paired_ratio(lambda: None, lambda: None, rounds=rounds, timer=lambda fn: 1.0)


def test_a_time_that_is_not_positive_is_an_error():
    with pytest.raises(ValueError, match="positive"):
        paired_ratio(lambda: None, lambda: None, rounds=1, timer=lambda fn: 0.0)


class DriftingTimer:
    """Stands in for ``bench(fn).ms``: a call costs the callable's base time (ms) times a clock factor
    that grows by ``drift`` per call, and logs which callable ran. The callables return their names."""

    def __init__(self, base: dict, drift: float):
        self.base, self.drift, self.calls = base, drift, []

    def __call__(self, fn) -> float:
        name = fn()
        self.calls.append(name)
        return self.base[name] * (1 + self.drift) ** (len(self.calls) - 1)


def named(name: str):
    return lambda: name


def test_each_round_keeps_both_times():
    timer = DriftingTimer({"torch": 1.0, "triton": 0.8}, 0.0)
    result = paired_ratio(named("torch"), named("triton"), rounds=5, timer=timer)
    assert result.baseline_all == (1.0,) * 5 and result.candidate_all == (0.8,) * 5
    assert result.ratios == pytest.approx((1.25,) * 5)


def test_rank_paired_ranks_by_median_ratio_and_rotates_the_first_candidate():
    timer = DriftingTimer({"torch": 1.0, "fast": 0.9, "slow": 1.1, "even": 1.0}, 0.005)
    candidates = {name: named(name) for name in ("slow", "fast", "even")}
    ranking = rank_paired(named("torch"), candidates, rounds=3, timer=timer)
    assert [name for name, _ in ranking] == ["fast", "even", "slow"]
    assert all(result.rounds == 3 for _, result in ranking)
    names = list(candidates)
    for r in range(3):
        pairs = [timer.calls[6 * r + 2 * i: 6 * r + 2 * i + 2] for i in range(3)]
        assert [next(n for n in pair if n != "torch") for pair in pairs] == names[r:] + names[:r]
        assert all((pair[0] == "torch") == ((r + i) % 2 == 0) for i, pair in enumerate(pairs))


def test_rank_paired_needs_candidates_and_rounds():
    with pytest.raises(ValueError, match="need candidates"):
        rank_paired(named("torch"), {}, timer=DriftingTimer({}, 0))
    with pytest.raises(ValueError, match="need candidates"):
        rank_paired(named("torch"), {"a": named("a")}, rounds=0, timer=DriftingTimer({}, 0))
