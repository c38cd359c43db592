"""Intervals: a median's from order statistics (none below six runs), a ratio's a t interval
on the log of paired per-round ratios; deterministic, wide or narrow as the data are, and a
family of ratios corrected for how many were looked at. Their coverage is measured in
test_interval_coverage.py."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats

from phase.analysis.intervals import (
    MEDIAN_MIN_N,
    Interval,
    adjust,
    median_interval,
    ratio_interval,
    resolved,
)


def test_median_interval_centres_on_the_median_and_holds_it() -> None:
    values = [40.0, 41.5, 39.0, 3.3, 42.0, 40.5]  # one disturbed run
    iv = median_interval(values)
    assert iv is not None
    assert iv.centre == 40.25  # not the mean (34.4): one slow run does not move it
    assert iv.low <= iv.centre <= iv.high
    assert iv.n == 6 and iv.method == "order-statistic"
    # Six values: only the extremes cover the median with >= 95% (1 - 2/64).
    assert (iv.low, iv.high) == (3.3, 42.0)


def test_order_statistic_ranks_move_in_as_runs_grow() -> None:
    values = [float(v) for v in range(1, 21)]  # 20 runs: ranks 6 and 15 (1-based)
    iv = median_interval(values)
    assert iv is not None
    assert (iv.low, iv.high) == (6.0, 15.0)


def test_fewer_than_six_runs_have_no_median_interval() -> None:
    # Five values: the widest interval, min to max, covers the median only 93.75% of the
    # time, so none at 95% is given (a bootstrap would have called the range 95%).
    assert MEDIAN_MIN_N == 6
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None
    assert median_interval([12.0, 13.0]) is None


def test_one_value_has_no_interval() -> None:
    assert median_interval([12.0]) is None
    assert median_interval([]) is None
    assert ratio_interval([1.0], [1.0, 2.0]) is None


def test_ratio_interval_is_a_t_interval_on_log_ratios() -> None:
    ratios = [1.10, 1.20, 1.15]
    iv = ratio_interval({r: v * 30.0 for r, v in enumerate(ratios)},
                        {r: 30.0 for r in range(3)})
    assert iv is not None and iv.paired and iv.method == "t-log"
    logs = [math.log(v) for v in ratios]
    mean = sum(logs) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    half = 4.302652729911275 * sd / math.sqrt(3)  # t(0.975, 2 df)
    assert iv.centre == pytest.approx(math.exp(mean))
    assert iv.low == pytest.approx(math.exp(mean - half))
    assert iv.high == pytest.approx(math.exp(mean + half))
    assert iv.p_value is not None and iv.p_value < 0.05


@pytest.mark.parametrize("top,bottom", [([1.1, 1.3, 1.2], [1.0, 1.05, 1.02]),
                                        ([1.1, 1.3, 1.2, 1.4], [1.0, 1.05, 1.02]),
                                        ([0.7, 0.9], [1.0, 1.3, 1.1, 0.95, 1.2])])
def test_the_t_intervals_are_scipys(top: list[float], bottom: list[float]) -> None:
    # phase computes them without scipy's per-call overhead; they must be scipy's numbers.
    a, b = np.log(top), np.log(bottom)
    if len(top) == len(bottom):
        iv = ratio_interval(dict(enumerate(top)), dict(enumerate(bottom)))
        test = stats.ttest_1samp(a - b, 0.0)
    else:
        iv = ratio_interval(top, bottom)
        test = stats.ttest_ind(a, b, equal_var=False)
    ci = test.confidence_interval(0.95)
    assert iv is not None
    assert iv.low == pytest.approx(math.exp(ci.low), rel=1e-12)
    assert iv.high == pytest.approx(math.exp(ci.high), rel=1e-12)
    assert iv.p_value == pytest.approx(test.pvalue, rel=1e-9)


def test_same_values_same_interval() -> None:
    values = [random.Random(3).gauss(20, 2) for _ in range(9)]
    assert median_interval(values) == median_interval(list(values))
    assert ratio_interval(values, values[::-1]) == ratio_interval(values, values[::-1])


def test_more_repeats_narrow_the_interval() -> None:
    rng = random.Random(7)
    few = [rng.gauss(100, 10) for _ in range(6)]
    many = few + [rng.gauss(100, 10) for _ in range(60)]
    a, b = median_interval(few), median_interval(many)
    assert a is not None and b is not None
    assert (b.high - b.low) < (a.high - a.low)


def test_paired_ratio_cancels_drift_between_rounds() -> None:
    # The machine slows round by round; each round's condition runs 1.2x its own plain run.
    plain = {r: 40.0 / (1 + 0.3 * r) for r in range(6)}
    fast = {r: 1.2 * v for r, v in plain.items()}
    paired = ratio_interval(fast, plain)
    unpaired = ratio_interval(list(fast.values()), list(plain.values()))
    assert paired is not None and unpaired is not None
    assert paired.paired and not unpaired.paired
    assert paired.centre == pytest.approx(1.2)
    assert paired.high - paired.low < 1e-9  # every round says 1.2
    assert unpaired.high - unpaired.low > 0.3  # drift swamps it unpaired
    assert resolved(paired)


def test_rounds_shared_by_fewer_than_two_fall_back_to_unpaired() -> None:
    iv = ratio_interval({0: 10.0, 1: 11.0}, {2: 10.0, 3: 10.5})
    assert iv is not None and not iv.paired and iv.method == "welch-log"
    assert iv.low < iv.centre < iv.high


def test_the_family_correction_can_take_a_claim_back() -> None:
    # One ratio whose own test rejects 1.0 (p about 0.036), among nine that are plainly 1.0:
    # corrected for ten looks, it no longer counts as different from plain.
    lone = ratio_interval({r: v for r, v in enumerate([1.02, 1.10, 1.05, 1.08])},
                          {r: 1.0 for r in range(4)})
    assert lone is not None and resolved(lone)
    nulls = [ratio_interval({r: 1.0 + d for r, d in enumerate([0.05, -0.04, 0.01, -0.02])},
                            {r: 1.0 for r in range(4)}) for _ in range(9)]
    corrected = adjust([lone, *nulls])
    first = corrected[0]
    assert first is not None and first.p_adjusted is not None
    assert first.p_adjusted > first.p_value  # type: ignore[operator]
    # The interval itself still excludes 1.0; only the corrected test decides.
    assert not first.includes(1.0)
    assert first.p_adjusted >= 0.05 and not resolved(first)
    # A strong effect survives the same correction.
    strong = ratio_interval({r: 2.0 + 0.01 * r for r in range(4)}, {r: 1.0 for r in range(4)})
    kept = adjust([strong, *nulls])[0]
    assert kept is not None and resolved(kept)


def test_an_interval_that_includes_one_is_not_resolved() -> None:
    rng = random.Random(11)
    a = [rng.gauss(30, 6) for _ in range(3)]
    b = [rng.gauss(30, 6) for _ in range(3)]
    iv = ratio_interval(a, b)
    assert iv is not None and iv.includes(1.0)
    assert not resolved(iv)
    assert not resolved(None)


def test_half_width_and_narrow() -> None:
    iv = Interval(2.0, 1.9, 2.2, 5)
    assert iv.half_width == pytest.approx(0.1)
    assert not iv.narrow(0.05) and iv.narrow(0.1)
    assert Interval(0.0, -1.0, 1.0, 3).half_width is None
