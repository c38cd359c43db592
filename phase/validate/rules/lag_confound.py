"""lag-confound (rejected, campaign-wide): an enclosing sensor whose error moves with what is
being compared, in the way lag would move it.

What lag would produce is tested, not any correlation. A sensor that encloses the chip sensor
reads the chip plus the rest of what it encloses (rest power R = P_enclosing - P_chip, both as
mean power over each run's window). Lag in the enclosing sensor (an undeclared time constant
tau) under-reads a window T after a step up by about dP * b(T) ~ dP * tau / T, so across a
campaign it makes the rest power fall with 1/T:

    R(T) = R0 - (dP * tau) / T

The rule fits R against 1/T over every run where both values exist and the chip value stands,
and rejects the enclosing sensor for the whole campaign when both hold:

- the fit has the lag's sign and is tight: Pearson r(1/T, R) <= -confound_r, over at least
  confound_min_runs runs;
- the under-read it implies matters: (dP * tau) / T_min is at least confound_min_under_read of
  the enclosing sensor's mean power over that shortest window.

Chip power that legitimately differs by strategy does not move R at all (a board reading
chip + 9 W has R = 9 W in every run), and noise in R gives no consistent slope, or one too
small to matter. A rejected enclosing value still counts (its error is exactly what this rule
looks at); a rejected chip value is left out.
"""

from __future__ import annotations

import math
import statistics

from phase.analysis import energy_window, window_s
from phase.results import ResultsFile
from phase.validate.enclosures import enclosures
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    chip = ctx.chip_sensor
    if chip is None:
        return []
    out: list[Finding] = []
    for big, inside in enclosures(results).items():
        if chip in inside:
            finding = _confounded(results, big, chip, settings, ctx)
            if finding is not None:
                out.append(finding)
    return out


def _rest_power(results: ResultsFile, big: str, chip: str,
                ctx: Context) -> list[tuple[float, float, float]]:
    """(window_s, rest power W, enclosing mean power W) per run with both values usable."""
    points = []
    for run in results.runs:
        b, c = energy_window(run, big), energy_window(run, chip)
        if b is None or c is None or b.energy_j is None or c.energy_j is None:
            continue
        if b.energy_j <= 0 or c.energy_j <= 0 or ctx.is_rejected(run.id, chip):
            continue
        if window_s(b) <= 0 or window_s(c) <= 0:
            continue
        big_w = b.energy_j / window_s(b)
        points.append((window_s(b), big_w - c.energy_j / window_s(c), big_w))
    return points


def _confounded(results: ResultsFile, big: str, chip: str, settings: RuleSettings,
                ctx: Context) -> Finding | None:
    points = _rest_power(results, big, chip, ctx)
    if len(points) < settings.confound_min_runs:
        return None
    inverse = [1.0 / t for t, _, _ in points]
    rest = [r for _, r, _ in points]
    try:
        r = statistics.correlation(inverse, rest)
        slope, _ = statistics.linear_regression(inverse, rest)
    except statistics.StatisticsError:
        return None  # constant windows or constant rest power: nothing moves with T
    if not math.isfinite(r) or r > -settings.confound_r:
        return None
    shortest = min(points)
    under_w = -slope / shortest[0]  # dP * tau / T_min
    share = under_w / shortest[2] if shortest[2] > 0 else math.inf
    if share < settings.confound_min_under_read:
        return None
    return ctx.finding(
        "lag-confound",
        "rejected",
        f"rest power ({big} - {chip}) falls with 1/window as a lag of about "
        f"{-slope:.3g} J (dP x tau) would make it (r = {r:+.2f} over {len(points)} runs, limit "
        f"{-settings.confound_r:+.2f}): the shortest window ({shortest[0]:.3g} s) reads "
        f"{share:.1%} low (limit {settings.confound_min_under_read:.1%}); rejected for the "
        "whole campaign because its error moves with what is being compared",
        sensor=big,
        numbers={
            "r": r,
            "limit_r": settings.confound_r,
            "runs": len(points),
            "lag_j": -slope,
            "under_read_w": under_w,
            "under_read": share,
            "min_under_read": settings.confound_min_under_read,
            "min_window_s": shortest[0],
            "max_window_s": max(points)[0],
            "min_rest_w": min(rest),
            "max_rest_w": max(rest),
        },
    )


RULE = Rule(order=210, check=check)
