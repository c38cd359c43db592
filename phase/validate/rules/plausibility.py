"""plausibility (rejected): a sensor's mean power above what that sensor can physically read.

Each sensor is judged against its own bound first: the maximum it declares (`max_power_w`),
else the default for its scope (`RuleSettings.max_power_w`, recorded in the report). Both the
power implied by energy / window and the window's recorded mean power count. This runs before
any comparison between sensors (rule enclosure), so an impossible chip reading is rejected on
its own and never makes a correct board reading look impossible.
"""

from __future__ import annotations

from phase.analysis import measured_windows, window_s
from phase.results import ResultsFile
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    for run, w, info in measured_windows(results):
        assert w.energy_j is not None
        window = window_s(w)
        implied = w.energy_j / window if window > 0 else None
        powers = [p for p in (implied, w.mean_power_w) if p is not None]
        declared = info.max_power_w is not None
        bound = info.max_power_w if info.max_power_w is not None else settings.max_power_w[
            info.scope]
        if not powers or max(powers) <= bound:
            continue
        numbers = {"max_power_w": bound, "energy_j": w.energy_j, "window_s": window}
        if implied is not None:
            numbers["implied_power_w"] = implied
        if w.mean_power_w is not None:
            numbers["mean_power_w"] = w.mean_power_w
        whose = ("the sensor's declared maximum" if declared
                 else f"the default bound for a {info.scope} sensor that declares none")
        out.append(ctx.finding(
            "plausibility", "rejected",
            f"mean power {max(powers):.4g} W exceeds {whose}, {bound:.4g} W",
            run=run, sensor=info.name, numbers=numbers,
        ))
    return out


RULE = Rule(order=140, check=check)
