"""impossible (rejected): energy at or below zero over a run's window.

A running machine uses energy; a counter that reads no change at all did not update (the
counter is named so), anything else reading <= 0 J is broken. Near-frozen counters, which
advance but by too little, are rule frozen's.
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
        energy = w.energy_j
        assert energy is not None
        if energy > 0:
            continue
        window = window_s(w)
        if info.kind == "counter" and energy == 0:
            message = "the energy counter did not change during the run (frozen or not updating)"
        else:
            message = (f"energy {energy:.6g} J over a {window:.3g} s window; a running machine "
                       "uses some")
        out.append(ctx.finding(
            "impossible", "rejected", message, run=run, sensor=info.name,
            numbers={"energy_j": energy, "window_s": window},
        ))
    return out


RULE = Rule(order=150, check=check)
