"""Uncertainty behind each figure: the per-run values of a condition (mean, min, max, n), the
"vs plain" ratios per run, and which prompts have an unstable plain baseline.

Summary rows hold means; charts and prose also need the range over repeats, so this module
goes back to the raw runs (rejected energy readings left out, as in the means). A summary-only
file has no runs: its conditions carry n but no range, and pages say the spread was not
published.

A prompt's plain baseline is *unstable* when the variance rule flagged plain decoding on it;
every ratio to plain on that prompt is then at least as uncertain as the baseline, and the
page says so wherever such a ratio is shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from phase.analysis import (
    FIGURES,
    PLAIN,
    Condition,
    RunView,
    condition_key,
    energy_mj_per_token,
    plain_row,
    run_value,
    runs_by_condition,
)
from phase.analysis.figures import per_run_names
from phase.publish.data.datasets import Dataset
from phase.publish.numbers.steps import Spread, spread_of
from phase.results import Run

# Figures a condition has per run (the registry's per_run ones). A "vs plain" one divides each
# run's figure by the plain mean for the same prompt.
PER_RUN = per_run_names()


@dataclass(frozen=True)
class ConditionSpread:
    prompt: str
    strategy: str
    n: int | None
    figures: dict[str, Spread]  # only figures with at least one value


def _chip(ds: Dataset, run: Run) -> float | None:
    sensor = ds.summary.chip_sensor
    if sensor is None or ds.report.rejection_of(run.id, sensor) is not None:
        return None
    return energy_mj_per_token(run, sensor)


def _per_run(ds: Dataset, runs: list[Run]) -> dict[str, list[float]]:
    values: dict[str, list[float]] = {name: [] for name in PER_RUN}
    for run in runs:
        view = RunView(run, _chip(ds, run))
        plain = plain_row(ds.summary.rows, run.prompt, condition_key(run)[2])
        for name in PER_RUN:
            value = run_value(name, view, plain)
            if value is not None:
                values[name].append(value)
    return values


def condition_spreads(ds: Dataset) -> dict[Condition, ConditionSpread]:
    """Per condition of the file: each figure's mean, min, max and n over its runs."""
    rows = ds.summary.rows
    raw = ds.raw
    if raw is None:
        return {condition_key(r): ConditionSpread(r.prompt, r.strategy, r.n, {}) for r in rows}
    grouped = runs_by_condition(raw)
    out = {}
    for r in rows:
        runs = grouped.get(condition_key(r), [])
        figures = {name: s for name, values in _per_run(ds, runs).items()
                   if (s := spread_of(values)) is not None}
        out[condition_key(r)] = ConditionSpread(r.prompt, r.strategy, len(runs), figures)
    return out


def unstable_baselines(ds: Dataset) -> dict[str, str]:
    """Prompt -> how far plain decoding's runs spread, where the variance rule found plain
    itself unstable ("tokens/s spread 8.0% across 3 runs")."""
    out = {}
    for f in ds.report.findings:
        if f.rule != "variance" or f.strategy != PLAIN or f.prompt is None:
            continue
        metric = "chip energy per token" if f.sensor is not None else "tokens/s"
        figure = FIGURES["chip_energy_spread" if f.sensor is not None else "tokens_per_s_spread"]
        spread, runs = f.numbers.get("spread"), f.numbers.get("runs")
        out[f.prompt] = (f"{metric} spread {figure.show(spread)} across {runs:.0f} runs"
                         if spread is not None and runs is not None else f.message)
    return out


def baseline_caveat(prompt: str, how: str) -> str:
    """The sentence a "vs plain" figure on an unstable-baseline prompt carries."""
    return (f"plain decoding on {prompt} was itself unstable ({how}): this ratio is uncertain "
            "by at least as much")
