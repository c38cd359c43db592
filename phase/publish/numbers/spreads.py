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

from phase.analysis import PLAIN, cpu_ms_per_token, energy_mj_per_token, runs_by_condition
from phase.publish.data.datasets import Dataset
from phase.publish.numbers.steps import Spread, spread_of
from phase.results import Run

# Figures a condition has per run. "speed_vs_plain" and "cpu_vs_plain" divide each run's
# figure by the plain mean for the same prompt.
PER_RUN = ("tokens_per_s", "cpu_ms_per_token", "chip_mj_per_token", "acceptance",
           "speed_vs_plain", "cpu_vs_plain")


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


def _per_run(ds: Dataset, runs: list[Run], plain: dict[str, float]) -> dict[str, list[float]]:
    values: dict[str, list[float]] = {name: [] for name in PER_RUN}
    for run in runs:
        values["tokens_per_s"].append(run.tokens_per_s)
        values["cpu_ms_per_token"].append(cpu_ms_per_token(run))
        chip = _chip(ds, run)
        if chip is not None:
            values["chip_mj_per_token"].append(chip)
        if run.acceptance is not None:
            values["acceptance"].append(run.acceptance)
        base_speed = plain.get(f"{run.prompt}/tokens_per_s")
        if base_speed:
            values["speed_vs_plain"].append(run.tokens_per_s / base_speed)
        base_cpu = plain.get(f"{run.prompt}/cpu_ms_per_token")
        if base_cpu:
            values["cpu_vs_plain"].append(cpu_ms_per_token(run) / base_cpu)
    return values


def condition_spreads(ds: Dataset) -> dict[tuple[str, str], ConditionSpread]:
    """Per condition of the file: each figure's mean, min, max and n over its runs."""
    rows = ds.summary.rows
    raw = ds.raw
    if raw is None:
        return {(r.prompt, r.strategy): ConditionSpread(r.prompt, r.strategy, r.n, {})
                for r in rows}
    plain: dict[str, float] = {}
    for r in rows:
        if r.strategy == PLAIN:
            if r.tokens_per_s:
                plain[f"{r.prompt}/tokens_per_s"] = r.tokens_per_s
            if r.cpu_ms_per_token:
                plain[f"{r.prompt}/cpu_ms_per_token"] = r.cpu_ms_per_token
    grouped = runs_by_condition(raw)
    out = {}
    for r in rows:
        runs = grouped.get((r.prompt, r.strategy), [])
        figures = {name: s for name, values in _per_run(ds, runs, plain).items()
                   if (s := spread_of(values)) is not None}
        out[(r.prompt, r.strategy)] = ConditionSpread(r.prompt, r.strategy, len(runs), figures)
    return out


def unstable_baselines(ds: Dataset) -> dict[str, str]:
    """Prompt -> how far plain decoding's runs spread, where the variance rule found plain
    itself unstable ("tokens/s spread 8.0% across 3 runs")."""
    out = {}
    for f in ds.report.findings:
        if f.rule != "variance" or f.strategy != PLAIN or f.prompt is None:
            continue
        metric = "chip energy per token" if f.sensor is not None else "tokens/s"
        spread, runs = f.numbers.get("spread"), f.numbers.get("runs")
        out[f.prompt] = (f"{metric} spread {spread:.1%} across {runs:.0f} runs"
                         if spread is not None and runs is not None else f.message)
    return out


def baseline_caveat(prompt: str, how: str) -> str:
    """The sentence a "vs plain" figure on an unstable-baseline prompt carries."""
    return (f"plain decoding on {prompt} was itself unstable ({how}): this ratio is uncertain "
            "by at least as much")
