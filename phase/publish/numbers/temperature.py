"""Figures per temperature for a campaign with a `temperature` factor (speculative decoding
when sampling): each strategy's acceptance, speed and chip energy against plain decoding at
each temperature, per prompt, what changed against the greedy rows (temperature 0) of the same
file, and the trend over temperature per prompt with an aggregate only where the prompts agree
(phase.analysis.trends).

The summary rows are the one source (phase.analysis.summarize: medians of undisturbed runs,
ratios to plain at the same levels paired by repeat); this module only arranges them by
temperature, so a sampled figure and its greedy baseline come from one campaign, one machine.
Every acceptance carries the accepted/drafted tokens of the runs behind it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from phase.analysis import PLAIN
from phase.analysis.counts import Counts, row_acceptance_counts
from phase.analysis.trends import Trend, trend
from phase.publish.data.datasets import Dataset

# The figures whose trend over temperature the page states, by summary-row field.
TREND_FIGURES = ("acceptance", "speed_vs_plain")


@dataclass(frozen=True)
class TemperatureRow:
    strategy: str
    prompt: str
    temperature: float
    n: int | None  # undisturbed runs behind the row
    acceptance: float | None  # median of the runs' acceptances
    counts: Counts | None  # accepted/drafted tokens summed over the same runs
    speed_vs_plain: float | None
    energy_ratio_vs_plain: float | None


@dataclass(frozen=True)
class Change:
    """One strategy on one prompt at one temperature against its greedy (T = 0) row."""

    strategy: str
    prompt: str
    temperature: float
    acceptance_change: float | None  # percentage points, sampled minus greedy
    speed_change: float | None  # ratio of speed_vs_plain, sampled over greedy
    energy_change: float | None  # ratio of energy_ratio_vs_plain, sampled over greedy


@dataclass(frozen=True)
class StrategyTrend:
    """A strategy's figure over temperature: per prompt, and across prompts where they agree
    (`across`: the median over prompts at each temperature; empty where withheld)."""

    strategy: str
    figure: str
    temperatures: list[float]
    trend: Trend
    across: list[float | None]
    # Per prompt, the counts behind its acceptance at the lowest and highest temperature.
    ends: dict[str, tuple[Counts | None, Counts | None]]
    # The counts behind each `across` value: every prompt's, summed (empty where withheld).
    across_counts: list[Counts | None]


def temperature_factor(ds: Dataset) -> str | None:
    """The name of the file's temperature factor, or None."""
    config = ds.raw.config if ds.raw is not None else None
    if config is None:
        return None
    return next((f.name for f in config.factors if f.kind == "temperature"), None)


def temperature_rows(ds: Dataset) -> list[TemperatureRow]:
    """One row per speculative strategy, prompt and temperature, in the file's order of
    strategies, then prompts, then temperatures (plain decoding is every ratio's baseline)."""
    name = temperature_factor(ds)
    if name is None:
        return []
    rows = [TemperatureRow(r.strategy, r.prompt, float(r.factors[name]), r.n, r.acceptance,
                           row_acceptance_counts(ds.raw, r), r.speed_vs_plain,
                           r.energy_ratio_vs_plain)
            for r in ds.summary.rows if name in r.factors and r.strategy != PLAIN]
    strategies = list(dict.fromkeys(r.strategy for r in rows))
    prompts = list(dict.fromkeys(r.prompt for r in rows))
    return sorted(rows, key=lambda r: (strategies.index(r.strategy), prompts.index(r.prompt),
                                       r.temperature))


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def changes_from_greedy(rows: Sequence[TemperatureRow]) -> list[Change]:
    """Each speculative strategy on each prompt at each temperature above 0 against its own
    T = 0 row on that prompt."""
    greedy = {(r.strategy, r.prompt): r for r in rows if r.temperature == 0}
    out = []
    for r in rows:
        base = greedy.get((r.strategy, r.prompt))
        if r.temperature == 0 or base is None:
            continue
        points = (100 * (r.acceptance - base.acceptance)
                  if r.acceptance is not None and base.acceptance is not None else None)
        out.append(Change(r.strategy, r.prompt, r.temperature, points,
                          _ratio(r.speed_vs_plain, base.speed_vs_plain),
                          _ratio(r.energy_ratio_vs_plain, base.energy_ratio_vs_plain)))
    return out


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _summed(counts: Sequence[Counts | None]) -> Counts | None:
    known = [c for c in counts if c is not None]
    return Counts(sum(c.kept for c in known), sum(c.tried for c in known)) if known else None


def trends(rows: Sequence[TemperatureRow]) -> list[StrategyTrend]:
    """Per strategy and figure, the trend over temperature on each prompt, and the median over
    prompts at each temperature only where every prompt goes the same way."""
    out = []
    for strategy in dict.fromkeys(r.strategy for r in rows):
        mine = [r for r in rows if r.strategy == strategy]
        temperatures = sorted({r.temperature for r in mine})
        prompts = list(dict.fromkeys(r.prompt for r in mine))
        at = {(r.prompt, r.temperature): r for r in mine}
        for figure in TREND_FIGURES:
            values = {p: [getattr(at[(p, t)], figure) if (p, t) in at else None
                          for t in temperatures] for p in prompts}
            found = trend(values)
            across = ([_median([values[p][i] for p in prompts]) for i in range(len(temperatures))]
                      if found.agrees else [])
            ends = {p: (at[(p, temperatures[0])].counts if (p, temperatures[0]) in at else None,
                        at[(p, temperatures[-1])].counts if (p, temperatures[-1]) in at else None)
                    for p in prompts}
            summed = ([_summed([at[(p, t)].counts for p in prompts if (p, t) in at])
                       for t in temperatures] if found.agrees else [])
            out.append(StrategyTrend(strategy, figure, temperatures, found, across, ends,
                                     summed))
    return out
