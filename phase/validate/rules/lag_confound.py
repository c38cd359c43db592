"""lag-confound (rejected, campaign-wide): an enclosing sensor whose error moves with what is
being compared.

Over a campaign, when an enclosing sensor's energy divided by the chip energy correlates with
window length (|Pearson r| >= confound_r over >= confound_min_runs runs), the enclosing sensor
is rejected for every run: a lagged sensor reads short windows low, so short (fast)
strategies would look cheaper. A chip value rejected earlier is left out; an enclosing value
rejected earlier still counts (its error is exactly what this rule looks at).
"""

from __future__ import annotations

import math
import statistics

from phase.analysis import energy_window, window_s
from phase.results import ResultsFile, SensorInfo
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    chip = ctx.chip_sensor
    if chip is None:
        return []
    out: list[Finding] = []
    for info in results.sensors:
        if info.scope in settings.enclosing_scopes:
            finding = _confounded(results, info, chip, settings, ctx)
            if finding is not None:
                out.append(finding)
    return out


def _confounded(
    results: ResultsFile, info: SensorInfo, chip: str, settings: RuleSettings, ctx: Context
) -> Finding | None:
    windows: list[float] = []
    ratios: list[float] = []
    for run in results.runs:
        big, small = energy_window(run, info.name), energy_window(run, chip)
        if big is None or small is None or big.energy_j is None or small.energy_j is None:
            continue
        if big.energy_j <= 0 or small.energy_j <= 0 or ctx.is_rejected(run.id, chip):
            continue
        windows.append(window_s(big))
        ratios.append(big.energy_j / small.energy_j)
    if len(windows) < settings.confound_min_runs:
        return None
    try:
        r = statistics.correlation(windows, ratios)
    except statistics.StatisticsError:
        return None  # constant windows or constant ratio: nothing correlates
    if not math.isfinite(r) or abs(r) < settings.confound_r:
        return None
    return ctx.finding(
        "lag-confound",
        "rejected",
        f"{info.scope}/chip energy ratio correlates with window length (r = {r:+.2f} over "
        f"{len(windows)} runs, limit |r| {settings.confound_r:.2f}); rejected for the whole "
        "campaign because its error moves with what is being compared",
        sensor=info.name,
        numbers={
            "r": r,
            "limit_r": settings.confound_r,
            "runs": len(windows),
            "min_window_s": min(windows),
            "max_window_s": max(windows),
            "min_ratio": min(ratios),
            "max_ratio": max(ratios),
        },
    )
