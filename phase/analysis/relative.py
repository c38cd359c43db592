"""Figures relative to something else: a figure against plain decoding's, and a spread
relative to its centre. One definition each; every table, chart, finding, note figure, the
terminal summary and the bench call these rather than dividing for themselves.

    vs_plain          a figure over plain decoding's for the same prompt ("speed vs plain")
    spread            (max - min) / centre, the centre named: the mean for a campaign's runs
                      (RUN_SPREAD: tables, charts, the variance rule), the median for a
                      benchmark row's repeats (BENCH_SPREAD: bench/, the Benchmarks page)
    spread_of_range   the same from a range already reduced to low, high, centre and n
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Literal

Centre = Literal["mean", "median"]
# A campaign's repeats are few (3 to 5) and every one of them is a measurement the page
# reports, so their spread is taken about the mean the page shows beside it.
RUN_SPREAD: Centre = "mean"
# A benchmark reports the median of alternating repeats (one slow outlier on a shared machine
# must not move the verdict), so its spread is taken about that median.
BENCH_SPREAD: Centre = "median"


def vs_plain(value: float | None, plain: float | None) -> float | None:
    """`value` over plain decoding's figure; None when either is missing or plain's is 0 (a
    ratio to nothing is not a figure)."""
    return value / plain if value is not None and plain else None


def spread_of_range(low: float, high: float, centre: float, n: int) -> float | None:
    """(high - low) / centre; None for fewer than two values or a centre that is not positive
    (a range relative to nothing, or to a negative figure, says nothing about repeats)."""
    return (high - low) / centre if n >= 2 and centre > 0 else None


def spread(values: Sequence[float], centre: Centre = RUN_SPREAD) -> float | None:
    """(max - min) / the values' mean or median; None with fewer than two values or a centre
    that is not positive."""
    if len(values) < 2:
        return None
    mid = statistics.fmean(values) if centre == "mean" else statistics.median(values)
    return spread_of_range(min(values), max(values), mid, len(values))
