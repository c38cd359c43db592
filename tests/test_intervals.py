"""Bootstrap intervals: centred on the median, paired by round where rounds are shared,
deterministic, and wide or narrow as the data are."""

from __future__ import annotations

import random

import pytest

from phase.analysis.intervals import Interval, median_interval, ratio_interval, resolved


def test_median_interval_centres_on_the_median_and_holds_it() -> None:
    values = [40.0, 41.5, 39.0, 3.3, 42.0]  # one disturbed run
    iv = median_interval(values)
    assert iv is not None
    assert iv.centre == 40.0  # not the mean (33.16): one slow run does not move it
    assert iv.low <= iv.centre <= iv.high
    assert iv.n == 5


def test_one_value_has_no_interval() -> None:
    assert median_interval([12.0]) is None
    assert median_interval([]) is None
    assert ratio_interval([1.0], [1.0, 2.0]) is None


def test_same_values_same_interval() -> None:
    values = [random.Random(3).gauss(20, 2) for _ in range(9)]
    assert median_interval(values) == median_interval(list(values))
    assert ratio_interval(values, values[::-1]) == ratio_interval(values, values[::-1])


def test_more_repeats_narrow_the_interval() -> None:
    rng = random.Random(7)
    few = [rng.gauss(100, 10) for _ in range(4)]
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
    assert iv is not None and not iv.paired


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
