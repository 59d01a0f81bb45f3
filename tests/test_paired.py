"""worklog_gen.kit.paired with fake timers: the order alternates, drift cancels, errors are named."""

from __future__ import annotations

import pytest

from worklog_gen.kit.paired import paired_ratio


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
