"""frozen (rejected): a sensor that barely moved while the run produced tokens.

Per run and sensor with positive energy: a counter whose raw trace (at least two samples)
never changes, or whose advance over the window is at most one step of its resolution
(`RuleSettings.counter_resolution_j` by backend); and any sensor whose mean power over the
window is below the floor for its scope (`RuleSettings.min_power_w`). Every run produced at
least one token, so every sensor in the machine was powered and, if it updates, moved.
"""

from __future__ import annotations

from phase.analysis import measured_windows, window_s
from phase.results import ResultsFile, Run, SensorInfo, SensorWindow
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    for run, w, info in measured_windows(results):
        assert w.energy_j is not None
        if w.energy_j <= 0:
            continue  # rule impossible's
        finding = _frozen(run, w, info, settings, ctx)
        if finding is not None:
            out.append(finding)
    return out


def _frozen(run: Run, w: SensorWindow, info: SensorInfo, settings: RuleSettings,
            ctx: Context) -> Finding | None:
    energy = w.energy_j
    assert energy is not None
    window = window_s(w)
    numbers = {"energy_j": energy, "window_s": window, "tokens": run.tokens}
    if info.kind == "counter":
        stuck = _stuck_trace(run, info)
        if stuck is not None:
            numbers.update(stuck)
            return ctx.finding(
                "frozen", "rejected",
                f"the counter's {int(stuck['samples'])} raw samples never change, yet the run "
                f"produced {run.tokens} tokens",
                run=run, sensor=info.name, numbers=numbers,
            )
        step = settings.resolution_j(info.backend)
        if energy <= step:
            numbers["resolution_j"] = step
            return ctx.finding(
                "frozen", "rejected",
                f"the counter advanced {energy:.3g} J over {window:.3g} s, at most one step of "
                f"its {step:.3g} J resolution, while {run.tokens} tokens were produced",
                run=run, sensor=info.name, numbers=numbers,
            )
    floor = settings.min_power_w[info.scope]
    if window > 0 and energy / window < floor:
        numbers.update({"mean_power_w": energy / window, "min_power_w": floor})
        return ctx.finding(
            "frozen", "rejected",
            f"mean power {energy / window:.3g} W over {window:.3g} s is below the "
            f"{floor:.3g} W floor for a {info.scope} sensor, while {run.tokens} tokens were "
            "produced: not updating",
            run=run, sensor=info.name, numbers=numbers,
        )
    return None


def _stuck_trace(run: Run, info: SensorInfo) -> dict[str, float] | None:
    """A counter's raw samples over the run that never change (at least two samples)."""
    for trace in run.samples:
        if trace.sensor == info.name and len(trace.values) >= 2:
            if max(trace.values) == min(trace.values):
                return {"samples": len(trace.values), "counter_j": trace.values[0]}
            return None
    return None


RULE = Rule(order=160, check=check)
