"""counter-edges (rejected): a counter window whose edges leave too much of it uncertain.

An energy counter is only known at its updates (NVML every 20-100 ms, Apple IOReport about
every 2 s). Where a window's edges fall between updates, its energy can be off by up to the
window's recorded `edge_error_j` (phase.sensors.edges), most of one update's energy at the
end edge. Like the under-read of a lagged power reading (sensor-lag), that value is rejected
when the error exceeds `lag_bias_max` of the energy, so short windows on coarse counters
are rejected instead of published. Windows without a recorded edge error (older files,
power sensors) are not judged here.
"""

from __future__ import annotations

import math

from phase.analysis import measured_windows, sensors_by_name, window_s
from phase.results import ResultsFile
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    sensors = sensors_by_name(results)
    for run, w, info in measured_windows(results):
        if info.kind != "counter" or w.edge_error_j is None or w.energy_j is None:
            continue
        share = w.edge_error_j / w.energy_j if w.energy_j > 0 else math.inf
        if share <= settings.lag_bias_max:
            continue
        window = window_s(w)
        needed = window * share / settings.lag_bias_max if math.isfinite(share) else math.inf
        period = sensors[w.sensor].update_period_s
        every = f"updates every {period:.3g} s, so " if period else ""
        out.append(ctx.finding(
            "counter-edges",
            "rejected",
            f"the counter {every}this {window:.3g} s window's energy is uncertain by "
            f"±{w.edge_error_j:.3g} J ({share:.1%} of it; limit {settings.lag_bias_max:.1%}); "
            f"about {needed:.3g} s or more would pass",
            run=run,
            sensor=info.name,
            numbers={
                "edge_error_j": w.edge_error_j,
                "energy_j": w.energy_j,
                "share": share,
                "limit": settings.lag_bias_max,
                "window_s": window,
                "min_window_s": needed,
            },
        ))
    return out
