"""The percentile bootstrap phase used before schema 12, kept only to replay the adaptive
rounds of files that were decided with it (config.interval_method absent): a decision recorded
in a file is re-derived by the method that made it. Nothing publishes these intervals any more;
at n = 2-3 they are the range of the runs (see phase.analysis.intervals).

Resampling is seeded from the values themselves, so the same runs always give the same interval.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence

import numpy as np

from phase.analysis.intervals import CONFIDENCE, Interval

RESAMPLES = 4000


def _rng(*samples: Sequence[float] | np.ndarray) -> np.random.Generator:
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
