"""How often an interval phase publishes covers the truth: simulated campaigns with known
ratios, run through the same functions the notes use (phase.analysis.intervals).

    simulate(design, draws, seed)      one cell: coverage of the true ratio, how often a ratio
                                       of exactly 1.0 is called different from plain, and the
                                       legacy bootstrap's coverage on the same draws
    family_rate(m, design, draws, seed) how often a note of m conditions, none different from
                                       plain, makes at least one false claim, with and without
                                       the family's correction
    floor_coverage(design, rivals, ...) the serving note's auto floor: auto over the best of
                                       several rivals (intervals.floor_interval)

A simulated campaign is what phase runs: n rounds, each a run of plain and a run of the
condition; every run's time is lognormal around its condition's median (CV `cv`); every round
shares a drift of the machine's pace (lognormal, CV `drift`) that paired ratios cancel; and in
a share `outlier_share` of campaigns one run, in a round and arm drawn at random, is slowed or
sped by a factor from 1.3 to 2 (a disturbance that validation missed). The true ratio is the
ratio of the two conditions' medians. tests/test_interval_coverage.py asserts the coverage;
bench/coverage_bench.py reports the table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from phase.analysis import intervals, intervals_legacy


@dataclass(frozen=True)
class Design:
    n: int  # rounds (pairs of runs)
    cv: float  # run-to-run coefficient of variation
    drift: float = 0.15  # round-to-round pace drift (CV), shared by both arms of a round
    outlier_share: float = 0.0  # share of campaigns with one outlying run


@dataclass(frozen=True)
class Cell:
    design: Design
    draws: int
    coverage: float  # intervals that hold the true ratio (its ratio is random per draw)
    false_resolved: float  # at a true ratio of 1.0: intervals that exclude it
    legacy_coverage: float  # the percentile bootstrap of before, on the same draws (or NaN)


def _sigma(cv: float) -> float:
    return math.sqrt(math.log1p(cv * cv))


def _campaigns(design: Design, ratios: np.ndarray, rng: np.random.Generator
               ) -> list[tuple[dict[int, float], dict[int, float]]]:
    """One campaign per true ratio, as (condition, plain) by round. Drawn for all of them at
    once: drawing each campaign alone cost a quarter of the simulation's time in numpy's
    per-call overhead."""
    m, n = len(ratios), design.n
    pace = np.exp(rng.normal(0.0, _sigma(design.drift), (m, n)))
    plain = 40.0 * pace * np.exp(rng.normal(0.0, _sigma(design.cv), (m, n)))
    other = 40.0 * ratios[:, None] * pace * np.exp(rng.normal(0.0, _sigma(design.cv), (m, n)))
    hit = rng.random(m) < design.outlier_share
    in_plain = rng.random(m) < 0.5
    factor = rng.uniform(1.3, 2.0, m)
    scale = np.where(rng.random(m) < 0.5, factor, 1.0 / factor)
    at = rng.integers(n, size=m)
    for arm, rows in ((plain, np.flatnonzero(hit & in_plain)),
                      (other, np.flatnonzero(hit & ~in_plain))):
        arm[rows, at[rows]] *= scale[rows]
    return [(dict(enumerate(o)), dict(enumerate(b)))
            for o, b in zip(other.tolist(), plain.tolist(), strict=True)]


def simulate(design: Design, draws: int = 1000, seed: int = 0, legacy_too: bool = True
             ) -> Cell:
    """One cell; `legacy_too` False skips the (slow) bootstrap, whose coverage is then NaN."""
    rng = np.random.default_rng([seed, design.n, int(design.cv * 1000),
                                 int(design.outlier_share * 1000)])
    ratios = np.exp(rng.uniform(-0.5, 0.5, draws))
    tested = _campaigns(design, ratios, rng)
    null = _campaigns(design, np.ones(draws), rng)
    covered = legacy = false = 0
    for ratio, (values, baseline), at_one in zip(ratios.tolist(), tested, null, strict=True):
        iv = intervals.ratio_interval(values, baseline)
        covered += iv is not None and iv.includes(ratio)
        if legacy_too:
            old = intervals_legacy.ratio_interval(values, baseline)
            legacy += old is not None and old.includes(ratio)
        false += intervals.resolved(intervals.ratio_interval(*at_one))
    return Cell(design, draws, covered / draws, false / draws,
                legacy / draws if legacy_too else math.nan)


@dataclass(frozen=True)
class FamilyRate:
    conditions: int
    design: Design
    notes: int
    uncorrected: float  # notes with at least one ratio called different, each at 95% alone
    corrected: float  # the same after the family's Benjamini-Hochberg correction


def family_rate(conditions: int, design: Design, notes: int = 200, seed: int = 0
                ) -> FamilyRate:
    rng = np.random.default_rng([seed, conditions, design.n, int(design.cv * 1000)])
    alone = together = 0
    for _ in range(notes):
        family = [intervals.ratio_interval(*c)
                  for c in _campaigns(design, np.ones(conditions), rng)]
        alone += any(intervals.resolved(iv) for iv in family)
        together += any(intervals.resolved(iv) for iv in intervals.adjust(family))
    return FamilyRate(conditions, design, notes, alone / notes, together / notes)


def floor_coverage(design: Design, rivals: tuple[float, ...], draws: int = 1000,
                   seed: int = 0, auto_share: float = 0.98, levels: int = 4) -> float:
    """How often the serving note's auto-floor interval holds its truth: auto at `auto_share`
    of the best rival's true speed, the rivals (plain and the fixed proposers) at the
    relative speeds `rivals`, every strategy's run in a round sharing that round's pace
    drift, and the interval intervals.floor_interval over a campaign of `levels`
    concurrencies, as the note computes it. At a tie every rival's upper end must hold at
    once; that is what its Bonferroni widening pays for."""
    rng = np.random.default_rng([seed, design.n, int(design.cv * 1000),
                                 *(int(r * 1000) for r in rivals)])
    n, covered = design.n, 0
    for _ in range(draws):
        pace = np.exp(rng.normal(0.0, _sigma(design.drift), n))

        def runs(truth: float, pace: np.ndarray = pace) -> dict[int, float]:
            return dict(enumerate((truth * pace * np.exp(
                rng.normal(0.0, _sigma(design.cv), n))).tolist()))
        speeds = [runs(truth) for truth in rivals]
        found = intervals.floor_interval(runs(auto_share * max(rivals)), speeds,
                                         family=levels)
        covered += found is not None and found[0].includes(auto_share)
    return covered / draws
