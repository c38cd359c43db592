"""Figures per temperature for a campaign with a `temperature` factor (speculative decoding
when sampling): each strategy's acceptance, speed and chip energy against plain decoding at
each temperature, as the median over prompts of each condition's summary row, and what
changed against the greedy rows (temperature 0) of the same file.

The summary rows are the one source (phase.analysis.summarize: medians of undisturbed runs,
ratios to plain at the same levels paired by repeat); this module only arranges them by
temperature, so a sampled figure and its greedy baseline come from one campaign, one machine.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from phase.publish.data.datasets import Dataset
from phase.results import SummaryRow


@dataclass(frozen=True)
class TemperatureRow:
    strategy: str
    temperature: float
    prompts: int  # prompts whose rows the medians are over
    acceptance: float | None
    speed_vs_plain: float | None
    energy_ratio_vs_plain: float | None


@dataclass(frozen=True)
class Change:
    """One strategy at one temperature against its greedy (T = 0) row."""

    strategy: str
    temperature: float
    acceptance_change: float | None  # percentage points, sampled minus greedy
    speed_change: float | None  # ratio of speed_vs_plain, sampled over greedy
    energy_change: float | None  # ratio of energy_ratio_vs_plain, sampled over greedy


def temperature_factor(ds: Dataset) -> str | None:
    """The name of the file's temperature factor, or None."""
    config = ds.raw.config if ds.raw is not None else None
    if config is None:
        return None
    return next((f.name for f in config.factors if f.kind == "temperature"), None)


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def temperature_rows(ds: Dataset) -> list[TemperatureRow]:
    """One row per strategy and temperature, in the file's strategy and level order."""
    name = temperature_factor(ds)
    if name is None:
        return []
    groups: dict[tuple[str, float], list[SummaryRow]] = {}
    for row in ds.summary.rows:
        if name in row.factors:
            groups.setdefault((row.strategy, float(row.factors[name])), []).append(row)
    return [TemperatureRow(strategy, t, len(rows),
                           _median([r.acceptance for r in rows]),
                           _median([r.speed_vs_plain for r in rows]),
                           _median([r.energy_ratio_vs_plain for r in rows]))
            for (strategy, t), rows in groups.items()]


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def changes_from_greedy(rows: Sequence[TemperatureRow]) -> list[Change]:
    """Each speculative strategy at each temperature above 0 against its own T = 0 row."""
    greedy = {r.strategy: r for r in rows if r.temperature == 0}
    out = []
    for r in rows:
        base = greedy.get(r.strategy)
        if r.temperature == 0 or base is None or r.strategy == "plain":
            continue
        points = (100 * (r.acceptance - base.acceptance)
                  if r.acceptance is not None and base.acceptance is not None else None)
        out.append(Change(r.strategy, r.temperature, points,
                          _ratio(r.speed_vs_plain, base.speed_vs_plain),
                          _ratio(r.energy_ratio_vs_plain, base.energy_ratio_vs_plain)))
    return out
