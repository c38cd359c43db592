"""sensor-lag (rejected): a smoothed sensor's energy over a window too short for its lag.

A sensor smoothed with time constant tau under-reads a step from idle, integrated over a
window T, by up to b(T) = (tau/T)(1 - e^(-T/tau)) (see phase.validate.lag). The rule, with its
tolerance stated: that sensor's energy for the run is rejected when

    b(T + lag_window_tolerance_s) > lag_bias_max

i.e. when the window is shorter than the shortest acceptable one (b = lag_bias_max, about
20 tau at 5%) by more than the tolerance (1 ms by default). Windows are differences of Unix
timestamps, so a window meant to be exactly that long is stored a fraction of a microsecond
either side of it; the tolerance decides such a window in its favour instead of leaving the
verdict to float rounding, and is far too small to let a meaningfully short window through.
"""

from __future__ import annotations

from phase.analysis import measured_windows, window_s
from phase.results import ResultsFile
from phase.validate.lag import lag_bias, min_window
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    tolerance = settings.lag_window_tolerance_s
    for run, w, info in measured_windows(results):
        tau = info.smoothing_s
        window = window_s(w)
        if lag_bias(window + tolerance, tau) <= settings.lag_bias_max:
            continue
        bias = lag_bias(window, tau)
        needed = min_window(tau, settings.lag_bias_max)
        out.append(ctx.finding(
            "sensor-lag",
            "rejected",
            f"a {window:.6g} s window on a sensor smoothed over {tau:.3g} s can under-read "
            f"by {bias:.2%} (limit {settings.lag_bias_max:.1%}; needs >= {needed:.6g} s, "
            f"within {tolerance:.3g} s)",
            run=run,
            sensor=info.name,
            numbers={
                "bias": bias,
                "limit": settings.lag_bias_max,
                "window_s": window,
                "smoothing_s": tau,
                "min_window_s": needed,
                "tolerance_s": tolerance,
            },
        ))
    return out


RULE = Rule(order=170, check=check)
