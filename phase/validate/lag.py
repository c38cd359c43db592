"""The lag model: how much a first-order-lag (smoothed) sensor under-reads a window."""

from __future__ import annotations

import math


def lag_bias(window_s: float, tau_s: float) -> float:
    """Worst-case fractional under-read of a step from idle by a first-order-lag sensor.

    A sensor smoothed with time constant tau reads P_idle + dP(1 - e^(-t/tau)) after a step of
    dP at t = 0; integrated over [0, T] it misses dP*tau*(1 - e^(-T/tau)) of the step's dP*T
    joules, a fraction b(T) = (tau/T)(1 - e^(-T/tau)). An unsmoothed sensor (tau 0) misses
    nothing; an empty window misses everything.
    """
    if tau_s <= 0:
        return 0.0
    if window_s <= 0:
        return 1.0
    x = window_s / tau_s
    return -math.expm1(-x) / x


def min_window(tau_s: float, bias_max: float) -> float:
    """Shortest window T with lag_bias(T, tau) <= bias_max (about tau / bias_max)."""
    if tau_s <= 0 or bias_max >= 1:
        return 0.0
    if bias_max <= 0:
        return math.inf
    lo, hi = 0.0, tau_s / bias_max  # b(hi) < bias_max since b(T) < tau/T
    for _ in range(200):
        mid = (lo + hi) / 2
        if lag_bias(mid, tau_s) > bias_max:
            lo = mid
        else:
            hi = mid
    return hi
