"""Bootstrap 95% intervals: how well a campaign's repeats pin down a figure and a ratio.

    median_interval   the median of a condition's values and its percentile-bootstrap interval
    ratio_interval    a condition's median over plain decoding's, and its interval: paired by
                      round where both have a run in the same repeat (runs of one round share
                      the machine's state, so their ratio cancels slow drift), else the two
                      samples resampled independently
    resolved          whether an interval excludes a value (1.0: "no different from plain")

Resampling is seeded from the values themselves, so the same runs always give the same interval
and a page built twice is byte-identical. A median and a percentile bootstrap, not a mean and
a t-interval: one disturbed run on a shared machine must not move the centre, and three
repeats are too few to assume a shape. With n = 2 or 3 the interval is the honest one such a
design allows, wide; adaptive repeats (phase.campaign) add runs until it is narrow enough.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 4000
# A ratio's interval is "narrow enough" when both ends lie within this fraction of its centre.
TARGET_HALF_WIDTH = 0.05


@dataclass(frozen=True)
class Interval:
    """A centre (the median, or a ratio of medians) and its 95% bootstrap interval."""

    centre: float
    low: float
    high: float
    n: int  # values (or pairs) it rests on
    paired: bool = False

    def includes(self, value: float) -> bool:
        return self.low <= value <= self.high

    @property
    def half_width(self) -> float | None:
        """The larger distance from the centre to an end, relative to the centre (0.05: the
        interval lies within ±5% of it); None for a centre that is not positive."""
        if self.centre <= 0:
            return None
        return max(self.centre - self.low, self.high - self.centre) / self.centre

    def narrow(self, target: float = TARGET_HALF_WIDTH) -> bool:
        width = self.half_width
        # A hair of tolerance: (2.2 - 2.0) / 2.0 is 0.10000000000000009 in binary floats.
        return width is not None and width <= target * (1 + 1e-9)


class Bounds(Protocol):
    """Anything with an interval's two ends (an Interval, a summary row's FigureInterval)."""

    @property
    def low(self) -> float: ...
    @property
    def high(self) -> float: ...


def resolved(interval: Bounds | None, against: float = 1.0) -> bool:
    """True when the interval lies wholly on one side of `against` (a ratio known to differ
    from plain decoding's); False for no interval or one that includes it."""
    return interval is not None and not interval.low <= against <= interval.high


def _rng(*samples: Sequence[float]) -> np.random.Generator:
    digest = hashlib.sha256(repr([[float(v) for v in s] for s in samples]).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def _percentiles(stats: np.ndarray) -> tuple[float, float]:
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(stats, [tail, 100 - tail])
    return float(low), float(high)


def _medians(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    picks = rng.integers(0, len(values), size=(RESAMPLES, len(values)))
    return np.median(values[picks], axis=1)


def _clean(values: Sequence[float]) -> np.ndarray:
    return np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)


def median_interval(values: Sequence[float]) -> Interval | None:
    """The median and its interval; None for fewer than two values (one run is a value, not
    an estimate with an interval)."""
    data = _clean(values)
    if len(data) < 2:
        return None
    low, high = _percentiles(_medians(data, _rng(data)))
    return Interval(float(np.median(data)), low, high, len(data))


def ratio_interval(values: Sequence[float] | Mapping[int, float],
                   baseline: Sequence[float] | Mapping[int, float]) -> Interval | None:
    """median(values) / median(baseline) with its interval.

    Given mappings from round (repeat) to value, the rounds both share are paired: the ratio
    is the median of per-round ratios, resampled by round. With fewer than two shared rounds,
    or given plain sequences, the two samples are resampled independently and the ratio is of
    their medians. None where either side has fewer than two values or a median that is not
    positive (a ratio to nothing is not a figure)."""
    if isinstance(values, Mapping) and isinstance(baseline, Mapping):
        rounds = sorted(set(values) & set(baseline))
        pairs = [(values[r], baseline[r]) for r in rounds
                 if baseline[r] and baseline[r] > 0 and math.isfinite(values[r])]
        if len(pairs) >= 2:
            ratios = np.array([v / b for v, b in pairs], dtype=float)
            low, high = _percentiles(_medians(ratios, _rng(ratios)))
            return Interval(float(np.median(ratios)), low, high, len(ratios), paired=True)
    top = _clean(list(values.values()) if isinstance(values, Mapping) else values)
    bottom = _clean(list(baseline.values()) if isinstance(baseline, Mapping) else baseline)
    if len(top) < 2 or len(bottom) < 2 or np.median(bottom) <= 0:
        return None
    rng = _rng(top, bottom)
    over = _medians(top, rng)
    under = _medians(bottom, rng)
    ok = under > 0
    low, high = _percentiles(over[ok] / under[ok])
    return Interval(float(np.median(top) / np.median(bottom)), low, high,
                    min(len(top), len(bottom)))
