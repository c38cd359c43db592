"""sensor-lag (rejected): a smoothed sensor's energy over a window too short for its lag.

A sensor smoothed with time constant tau under-reads a step from idle, integrated over a
window T, by up to b(T) = (tau/T)(1 - e^(-T/tau)) (see phase.validate.lag); that sensor's
energy for the run is rejected when b(T) > lag_bias_max.
"""

from __future__ import annotations

from phase.analysis import measured_windows, window_s
from phase.results import ResultsFile
from phase.validate.lag import lag_bias, min_window
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    for run, w, info in measured_windows(results):
        tau = info.smoothing_s
        window = window_s(w)
        bias = lag_bias(window, tau)
        if bias <= settings.lag_bias_max:
            continue
        needed = min_window(tau, settings.lag_bias_max)
        out.append(ctx.finding(
            "sensor-lag",
            "rejected",
            f"a {window:.3g} s window on a sensor smoothed over {tau:.3g} s can under-read "
            f"by {bias:.1%} (limit {settings.lag_bias_max:.1%}; needs >= {needed:.3g} s)",
            run=run,
            sensor=info.name,
            numbers={
                "bias": bias,
                "limit": settings.lag_bias_max,
                "window_s": window,
                "smoothing_s": tau,
                "min_window_s": needed,
            },
        ))
    return out
