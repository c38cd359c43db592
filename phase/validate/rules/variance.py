"""variance (warning): per condition, (max - min) / mean must not exceed variance_max, for
speed and for energy, always both.

tokens/s is judged over every run of the condition. Chip energy per token is judged too
wherever at least `variance_min_runs` chip values stand (a rejected value is left out). A
condition failing either is *unstable* (marked on the page); each metric that fails is its
own finding, named in its message.
"""

from __future__ import annotations

import statistics

from phase.analysis import (
    FIGURES,
    RUN_SPREAD,
    conditions,
    energy_j_per_token,
    runs_by_condition,
    spread,
)
from phase.results import ResultsFile, Run
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def _standing_chip(runs: list[Run], ctx: Context) -> list[float]:
    chip = ctx.chip_sensor
    if chip is None:
        return []
    values = [(run, energy_j_per_token(run, chip)) for run in runs]
    return [v for run, v in values if v is not None and not ctx.is_rejected(run.id, chip)]


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    by_condition = runs_by_condition(results)
    out: list[Finding] = []
    for condition in conditions(results):
        prompt, strategy, levels = condition
        runs = by_condition.get(condition, [])
        # sensor names the chip sensor when energy was judged, None for tokens/s; the figure
        # is the registry's spread the message reports.
        metrics = [
            ("tokens/s", [r.tokens_per_s for r in runs], None, "tokens_per_s_spread"),
            ("chip energy per token", _standing_chip(runs, ctx), ctx.chip_sensor,
             "chip_energy_spread"),
        ]
        for metric, values, sensor, figure in metrics:
            if len(values) < settings.variance_min_runs:
                continue
            measured = spread(values, RUN_SPREAD)
            if measured is None or measured <= settings.variance_max:
                continue
            out.append(ctx.finding(
                "variance",
                "warning",
                f"unstable: {metric} spreads {FIGURES[figure].show(measured)} of its mean across "
                f"{len(values)} runs (limit {settings.variance_max:.1%})",
                prompt=prompt,
                strategy=strategy,
                levels=levels,
                sensor=sensor,
                numbers={
                    "spread": measured,
                    "limit": settings.variance_max,
                    "min": min(values),
                    "max": max(values),
                    "mean": statistics.fmean(values),
                    "runs": len(values),
                },
            ))
    return out


RULE = Rule(order=220, check=check)
