"""The statistics that prove a sampled strategy keeps the target's distribution: a chi-square
goodness-of-fit test against the exact distribution, and the sample size that gives it power.

The chi-square and noncentral chi-square tails are scipy.stats' (imported on first use, as in
phase.analysis.intervals: nothing that starts `phase` pays for scipy).

Sample size: a test of k categories with exact probabilities p has, against an alternative p',
noncentrality λ = N Σ (p'_i - p_i)² / p_i. Among alternatives that move the top category by
δ, the least detectable spreads -δ over the others in proportion to their probabilities,
giving λ = N δ² / (p_top (1 - p_top)). So N = λ* p_top (1 - p_top) / δ², with λ* the
noncentrality at which the test at level α has the wanted power: every such shift is then
detected with at least that power (to the usual large-sample approximation).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

# Categories whose exact probability is below this are pooled into one, so the expected counts
# are large at the sample sizes the tests use and the chi-square approximation holds (a
# pooled cell of tiny probability can still hold few: its mass is what the tests keep small).
MIN_CATEGORY_P = 0.01


def _check_df(df: int) -> None:
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1 (got {df})")


def chi2_sf(x: float, df: int) -> float:
    """P(X >= x) for X chi-square with df (a positive integer) degrees of freedom."""
    from scipy import stats

    _check_df(df)
    return float(stats.chi2.sf(x, df))


def chi2_critical(alpha: float, df: int) -> float:
    """The x with chi2_sf(x, df) = alpha."""
    from scipy import stats

    _check_df(df)
    return float(stats.chi2.isf(alpha, df))


def ncx2_sf(x: float, df: int, lam: float) -> float:
    """P(X >= x) for a noncentral chi-square with noncentrality lam (0: the central one)."""
    from scipy import stats

    _check_df(df)
    return float(stats.ncx2.sf(x, df, lam)) if lam > 0 else chi2_sf(x, df)


def noncentrality_for(df: int, alpha: float, power: float) -> float:
    """The λ at which a level-alpha chi-square test with df degrees of freedom has `power`."""
    from scipy import optimize

    critical = chi2_critical(alpha, df)
    high = 1.0
    while ncx2_sf(critical, df, high) < power:
        high *= 2.0
    return float(optimize.brentq(lambda lam: ncx2_sf(critical, df, lam) - power, 0.0, high,
                                 xtol=1e-10))


def samples_for_shift(p_top: float, shift: float, df: int, alpha: float, power: float) -> int:
    """How many samples detect any move of the top category's probability by `shift` with
    at least `power` (see the module's docstring)."""
    if not 0 < p_top < 1:
        raise ValueError(f"the top category's probability must be in (0, 1) (got {p_top})")
    lam = noncentrality_for(df, alpha, power)
    return math.ceil(lam * p_top * (1.0 - p_top) / shift**2)


@dataclass(frozen=True)
class FitResult:
    statistic: float
    df: int
    p_value: float
    categories: int
    n: int
    top: Hashable
    top_expected: float
    top_observed: float


def categories(exact: Mapping[Hashable, float],
               min_p: float = MIN_CATEGORY_P) -> tuple[list[Hashable], float]:
    """The outcomes tested on their own (probability >= min_p, most probable first) and the
    pooled probability of the rest."""
    kept = sorted((k for k, v in exact.items() if v >= min_p), key=lambda k: -exact[k])
    rest = 1.0 - sum(exact[k] for k in kept)
    return kept, rest if rest > 1e-9 else 0.0  # below: rounding, not an outcome


def goodness_of_fit(outcomes: Sequence[Hashable], exact: Mapping[Hashable, float],
                    min_p: float = MIN_CATEGORY_P) -> FitResult:
    """Pearson's chi-square of observed outcomes against exact probabilities, the outcomes
    below min_p pooled into one category."""
    kept, pooled = categories(exact, min_p)
    n = len(outcomes)
    counts: dict[Hashable, int] = {k: 0 for k in kept}
    other = 0
    for outcome in outcomes:
        if outcome in counts:
            counts[outcome] += 1
        else:
            other += 1
    cells = [(counts[k], exact[k]) for k in kept]
    if pooled > 0 or other:
        # 1e-12: outcomes the exact distribution says are impossible count against the fit
        cells.append((other, max(pooled, 1e-12)))
    stat = sum((obs - n * p) ** 2 / (n * p) for obs, p in cells)
    df = max(1, len(cells) - 1)
    return FitResult(stat, df, chi2_sf(stat, df), len(cells), n, kept[0], exact[kept[0]],
                     counts[kept[0]] / n if n else 0.0)
