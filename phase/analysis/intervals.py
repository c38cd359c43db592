"""95% intervals whose coverage is measured: how well a campaign's repeats pin down a figure
and a ratio, and whether a ratio is known to differ from plain decoding's.

    ratio_interval    a condition's figure over plain decoding's. Paired by round where both
                      have a run in at least two shared rounds (runs of one round share the
                      machine's state, so their ratio cancels slow drift): a Student t interval
                      on the log of the per-round ratios, n - 1 degrees of freedom, centred on
                      their geometric mean. Else the two samples on the log scale with Welch's t
                      (the ratio of geometric means).
    median_interval   the median of a condition's values and its distribution-free interval
                      from order statistics (the binomial law of how many values fall below
                      the median). It exists only from MEDIAN_MIN_N values: below that no two
                      order statistics cover the median with 95% probability, and none is given.
    adjust            the false-discovery-rate correction (Benjamini-Hochberg) over a family of
                      ratios: each interval's p-value against 1.0 adjusted for how many were
                      looked at.
    resolved          whether a ratio is known to differ from a value: its interval excludes it
                      and, where the family's correction was applied, its adjusted p-value is
                      below 1 - CONFIDENCE.

Why not a percentile bootstrap of the median (what phase used before): with 2 or 3 values
every resample's median is one of the values or a midpoint, so the "95%" interval is the range
of the runs and covers the truth about 50% (n = 2) and 75% (n = 3) of the time. The log scale
makes a ratio symmetric (2x and 0.5x are equally far from 1) and run times on a shared machine
close to lognormal; the t quantile pays for estimating the spread from few rounds. The
coverage of these methods, for the designs phase runs (lognormal noise at CV 5-30%, an outlier
in some rounds, a per-round drift), is measured by tests/test_interval_coverage.py and reported
by `make bench` (bench/coverage_bench.py).

scipy.stats is imported on first use: `phase` starts as a process for every command, and most
never compute an interval.

Files whose adaptive rounds were decided with the bootstrap (config.interval_method absent)
are replayed with it: phase.analysis.intervals_legacy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Final, Protocol

import numpy as np

CONFIDENCE = 0.95
ALPHA = 1 - CONFIDENCE
# A ratio's interval is "narrow enough" when both ends lie within this fraction of its centre.
TARGET_HALF_WIDTH = 0.05
# The fewest values whose extreme order statistics cover the median with >= 95% probability:
# 1 - 2 * 0.5**6 = 96.9% at n = 6, but 1 - 2 * 0.5**5 = 93.75% at n = 5.
MEDIAN_MIN_N = 6
# What config.interval_method records for the methods of this module.
METHOD: Final = "t-log"
# What floor_interval's intervals are marked with.
FLOOR_METHOD: Final = "floor-t-log"
# What each figure's centre and interval are, as the pages name them.
RATIO_STATISTIC = "geometric mean of the per-round ratios to plain, Student t 95% interval"
UNPAIRED_STATISTIC = "ratio of geometric means (unpaired), Welch t 95% interval"
MEDIAN_STATISTIC = "median of runs, order-statistic 95% interval (from 6 runs)"


@dataclass(frozen=True)
class Interval:
    """A centre and its 95% interval, with the p-value of the test that the centre is 1.0
    (ratios only) and, once a family was corrected, that p-value adjusted."""

    centre: float
    low: float
    high: float
    n: int  # values (or pairs) it rests on
    paired: bool = False
    p_value: float | None = None
    p_adjusted: float | None = None
    # "order-statistic", "t-log" (paired), "welch-log" (unpaired); None: the legacy bootstrap.
    method: str | None = None

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
    """True when the interval lies wholly on one side of `against` and, where its family was
    corrected for multiplicity, the adjusted p-value is below ALPHA too (a ratio known to
    differ from plain decoding's); False for no interval, or one that includes `against`."""
    if interval is None or interval.low <= against <= interval.high:
        return False
    adjusted = getattr(interval, "p_adjusted", None)
    return adjusted is None or adjusted < ALPHA


def _clean(values: Sequence[float]) -> np.ndarray:
    return np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)


def median_interval(values: Sequence[float]) -> Interval | None:
    """The median and its order-statistic interval [x(j), x(n+1-j)], j the largest rank whose
    coverage 1 - 2 P(Binomial(n, 1/2) < j) is still at least 95%; None below MEDIAN_MIN_N
    values (then no interval of a median is honest at 95%)."""
    data = np.sort(_clean(values))
    n = len(data)
    if n < MEDIAN_MIN_N:
        return None
    rank = _median_rank(n)
    return Interval(float(np.median(data)), float(data[rank]), float(data[n - 1 - rank]), n,
                    method="order-statistic")


@lru_cache(maxsize=256)
def _median_rank(n: int) -> int:
    """The 0-based index of x(j+1) for n values; cached because it depends on n alone and
    scipy's binomial calls cost more than the rest of an interval (the coverage tests draw
    thousands of samples of one size)."""
    from scipy import stats

    # binom.ppf gives the smallest j with P(X <= j) >= ALPHA/2; the rank below it is the
    # largest whose two tails together stay within ALPHA.
    j = int(stats.binom.ppf(ALPHA / 2, n, 0.5))
    if stats.binom.cdf(j, n, 0.5) > ALPHA / 2:
        j -= 1
    return max(j, 0)


def _degenerate(centre: float, n: int, paired: bool) -> Interval:
    """Every log ratio the same: no spread to estimate, so the interval is the point, and the
    test rejects 1.0 exactly when the point is not 1.0."""
    return Interval(centre, centre, centre, n, paired, 1.0 if centre == 1.0 else 0.0,
                    method="t-log" if paired else "welch-log")


@lru_cache(maxsize=256)
def _t_quantile(df: float, tail: float = ALPHA / 2) -> float:
    """Student t's quantile with `tail` above it (a two-sided 95% interval's by default)."""
    from scipy import stats

    return float(stats.t.ppf(1 - tail, df))


def _t_interval(mean: float, se: float, df: float, n: int, paired: bool) -> Interval:
    """exp(mean ± t(df) se) and the two-sided p-value of mean = 0: what scipy's ttest_1samp
    and ttest_ind(equal_var=False) give, without their per-call overhead (the coverage
    simulation calls this tens of thousands of times)."""
    from scipy import special

    half = _t_quantile(df) * se
    # Student t's lower tail at -|t| (scipy.special.stdtr): stats.t.sf's value, without its
    # argument checks, which were half the coverage simulation's time.
    p = float(2 * special.stdtr(df, -abs(mean) / se))
    return Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n, paired,
                    p, method="t-log" if paired else "welch-log")


@dataclass(frozen=True)
class _LogRatio:
    """A ratio on the log scale: its mean, that mean's standard error and degrees of freedom,
    the values (pairs) it rests on and whether they were paired; `flat` where every log is
    the same (no spread to estimate)."""

    mean: float
    se: float
    df: float
    n: int
    paired: bool
    flat: bool


def _paired(ratios: np.ndarray) -> _LogRatio:
    logs = np.log(ratios)
    n = len(logs)
    if np.ptp(logs) == 0:
        return _LogRatio(float(logs.mean()), 0.0, n - 1, n, True, True)
    se = float(logs.std(ddof=1)) / math.sqrt(n)
    return _LogRatio(float(logs.mean()), se, n - 1, n, True, False)


def _unpaired(top: np.ndarray, bottom: np.ndarray) -> _LogRatio:
    a, b = np.log(top), np.log(bottom)
    n = min(len(a), len(b))
    mean = float(a.mean() - b.mean())
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return _LogRatio(mean, 0.0, n - 1, n, False, True)
    va, vb = float(a.var(ddof=1)) / len(a), float(b.var(ddof=1)) / len(b)
    # Welch-Satterthwaite degrees of freedom (one side without spread gives the other's n-1).
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return _LogRatio(mean, math.sqrt(va + vb), df, n, False, False)


def _positive(values: Sequence[float] | Mapping[int, float]) -> np.ndarray:
    data = _clean(list(values.values()) if isinstance(values, Mapping) else values)
    return data[data > 0]


def _log_ratio(values: Sequence[float] | Mapping[int, float],
               baseline: Sequence[float] | Mapping[int, float]) -> _LogRatio | None:
    if isinstance(values, Mapping) and isinstance(baseline, Mapping):
        rounds = sorted(set(values) & set(baseline))
        pairs = [(values[r], baseline[r]) for r in rounds
                 if baseline[r] and baseline[r] > 0 and values[r] and values[r] > 0
                 and math.isfinite(values[r]) and math.isfinite(baseline[r])]
        if len(pairs) >= 2:
            return _paired(np.array([v / b for v, b in pairs], dtype=float))
    top, bottom = _positive(values), _positive(baseline)
    if len(top) < 2 or len(bottom) < 2:
        return None
    return _unpaired(top, bottom)


def ratio_interval(values: Sequence[float] | Mapping[int, float],
                   baseline: Sequence[float] | Mapping[int, float]) -> Interval | None:
    """values over baseline with its 95% interval and the p-value against 1.0.

    Given mappings from round (repeat) to value, the rounds both share are paired (at least
    two); otherwise the two samples are compared unpaired. None where either side has fewer
    than two positive values (a ratio to nothing, or of one run, is not an estimate)."""
    ratio = _log_ratio(values, baseline)
    if ratio is None:
        return None
    if ratio.flat:
        return _degenerate(math.exp(ratio.mean), ratio.n, ratio.paired)
    return _t_interval(ratio.mean, ratio.se, ratio.df, ratio.n, ratio.paired)


def floor_interval(values: Mapping[int, float], rivals: Sequence[Mapping[int, float]],
                   family: int = 1) -> tuple[Interval, int] | None:
    """values over the best of several rivals (auto over the better of plain and the best
    fixed proposer): the lowest of the ratios to each rival, whichever rival is truly best,
    with a 95% interval that holds without knowing which, and the index of the rival whose
    ratio is lowest.

    Each rival's ratio is read as ratio_interval reads it (a t interval on the logs). The
    interval's low end is the lowest of the rivals' 97.5% one-sided lower ends: the true
    best rival's ratio is the lowest, and its own lower end lies below it 97.5% of the time.
    Its high end is the lowest of their upper ends, each at 1 - 2.5% / (rivals x `family`)
    (Bonferroni): it lies above the lowest true ratio only if every rival's upper end holds,
    and `family` is how many such intervals a verdict that needs only one of them reads (the
    levels of a serving campaign). So the interval covers at least 95% by construction, at
    any gap between the rivals, where choosing the rival first and then comparing with it
    (on the same repeats, or on the others) covered 92-94% at ties. No p-value: the floor is
    judged by its ends, not tested against 1.0. None where a rival has no interval."""
    ratios = [_log_ratio(values, rival) for rival in rivals]
    if not ratios or any(r is None for r in ratios):
        return None
    known = [r for r in ratios if r is not None]
    tail = ALPHA / 2 / (len(known) * max(family, 1))
    lows = [math.exp(r.mean - (0.0 if r.flat else _t_quantile(r.df) * r.se)) for r in known]
    highs = [math.exp(r.mean + (0.0 if r.flat else _t_quantile(r.df, tail) * r.se)) for r in known]
    lowest = min(range(len(known)), key=lambda i: known[i].mean)
    return Interval(math.exp(known[lowest].mean), min(lows), min(highs),
                    min(r.n for r in known), all(r.paired for r in known),
                    method=FLOOR_METHOD), lowest


def adjust(family: Sequence[Interval | None]) -> list[Interval | None]:
    """The family's intervals with p_adjusted set: Benjamini-Hochberg over every member that
    has a p-value (scipy.stats.false_discovery_control), so that of the ratios called
    different from plain, at most 5% are expected not to be. Under the global null (no ratio
    differs) this is also the chance of any false claim in the family."""
    from scipy import stats

    tested = [i for i, iv in enumerate(family) if iv is not None and iv.p_value is not None]
    if not tested:
        return list(family)
    p = np.array([p for iv in family if iv is not None and (p := iv.p_value) is not None],
                 dtype=float)
    adjusted = stats.false_discovery_control(p, method="bh")
    out = list(family)
    for i, q in zip(tested, adjusted, strict=True):
        member = family[i]
        assert member is not None  # `tested` holds members with a p-value only
        out[i] = replace(member, p_adjusted=float(q))
    return out


def words(method: str | None, paired: bool, n: int) -> str:
    """What an interval is, for a hover title or a caption: its method and what it rests on
    (`method` None: a summary from before schema 12, whose intervals were bootstrapped)."""
    if method == "t-log":
        return f"Student t 95% interval on the logs of {n} per-round ratios to plain"
    if method == "welch-log":
        return (f"Welch t 95% interval of the ratio of geometric means to plain decoding "
                f"(unpaired, {n} or more runs a side)")
    if method == FLOOR_METHOD:
        return (f"the lowest of the ratios to each rival, {n} paired repeats: low end the "
                "lowest of their Student t lower ends, high end the lowest of their upper "
                "ends widened for the rivals and levels (Bonferroni), together a 95% interval")
    if method == "order-statistic":
        return f"order-statistic 95% interval of the median of {n} runs"
    how = "paired by repeat" if paired else "resampled independently"
    return f"percentile bootstrap interval of {n} runs ({how}; before schema 12)"


# Said once per page under a table or chart that shows intervals.
LEGEND = ("Ratios to plain decoding are geometric means of the per-round ratios (each round "
          "runs the condition and plain back to back), with a Student t 95% interval on their "
          "logs; a ratio counts as different from plain only where that interval excludes 1.00 "
          "and its test stays significant after the Benjamini-Hochberg correction over all of "
          "the campaign's ratios of that figure. Other figures are medians of the undisturbed "
          "runs; a median's 95% interval comes from order statistics and needs at least "
          f"{MEDIAN_MIN_N} runs, so figures of fewer runs show none.")
