"""Where an energy counter stood at a window edge, and how far off that can be.

A counter is only known at its updates: NVML's updates every 20-100 ms, Apple's IOReport in
batches about 2 s apart, RAPL about every millisecond. A read at time x returns the value of
the last update, which happened at most one update period p before x, and at most since the
last read that showed an older value. So the true E(x) lies between the value read at x and
the smaller of (that value + P x staleness) and the next value the counter showed after x.

An edge estimate is the point in that interval given by interpolating linearly across the
update interval that contains x (uniform power within one update), and its error is the
larger distance to the interval's ends. The sampler helps by reading a coarse counter until
its next update after a window ends (phase.sensors.core.sampler), which brackets the end edge.

`U` below is the counter unwrapped onto one increasing scale (J), `t` the read times.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Edge:
    value_j: float  # the counter's estimated value at the edge, on the unwrapped scale
    error_j: float | None  # the most it can be off; None: unknown


def _clamp(x: float, lo: float, hi: float) -> float:
    return min(max(x, lo), hi)


@dataclass(frozen=True)
class EdgePower:
    """Power around a window edge: `inside` the window (its mean) and `bound`, the most it
    can be (a margin over the window's and the idle window's means, capped by the sensor's
    declared bound)."""

    inside_w: float | None
    bound_w: float | None


def read_edge(t: Sequence[float], u: Sequence[float], k: int, x: float,
              period_s: float | None, power: EdgePower | None) -> Edge:
    """The counter at x, read exactly then (read k, t[k] == x).

    The update that produced u[k] happened after the last read showing an older value (and
    at most one period before x); the next update, u[nxt], after x and at most one period
    before the read that first showed it. The estimate counts from whichever of the two
    updates is nearer to x, with the window's own mean power; without that power it is the
    value read. The error is the distance to the ends of the interval that monotonicity and
    the power bound allow.
    """
    run = k
    while run > 0 and u[run - 1] == u[k]:
        run -= 1
    nxt = next((n for n in range(k + 1, len(u)) if u[n] != u[k]), None)
    lo = u[k]
    earliest = t[run - 1] if run > 0 else None  # u[k]'s update came after this read
    if period_s:
        earliest = max(earliest, x - period_s) if earliest is not None else x - period_s
    before = (earliest + t[run]) / 2 if earliest is not None else None
    after = None
    if nxt is not None:  # u[nxt]'s update: after the read before it, within a period of t[nxt]
        soonest = max(t[nxt - 1], t[nxt] - period_s) if period_s else t[nxt - 1]
        after = (soonest + t[nxt]) / 2
    bound = power.bound_w if power else None
    floor, hi = lo, (u[nxt] if nxt is not None else None)
    if bound is not None and nxt is not None:
        floor = max(lo, u[nxt] - bound * (t[nxt] - x))
    if bound is not None and earliest is not None:
        ceiling = lo + bound * max(x - earliest, 0.0)
        hi = ceiling if hi is None else min(hi, ceiling)
    if hi is None:
        return Edge(lo, None)
    hi = max(hi, floor)
    inside = power.inside_w if power else None
    gap_before = x - before if before is not None else None
    gap_after = after - x if after is not None else None
    if inside is None or (gap_before is None and gap_after is None):
        estimate = lo  # nothing known about the power across the edge: the value read
    elif gap_after is not None and nxt is not None and (gap_before is None
                                                         or gap_after < gap_before):
        estimate = u[nxt] - inside * max(gap_after, 0.0)
    else:
        estimate = lo + inside * max(gap_before or 0.0, 0.0)
    estimate = _clamp(estimate, floor, hi)
    return Edge(estimate, max(estimate - floor, hi - estimate))


def interpolated_edge(t: Sequence[float], u: Sequence[float], k: int, x: float) -> Edge:
    """The counter at x between reads k-1 and k (t[k-1] < x < t[k]), for traces recorded
    elsewhere whose values hold at their own timestamps."""
    lo, hi = u[k - 1], u[k]
    f = (x - t[k - 1]) / (t[k] - t[k - 1])
    estimate = lo + f * (hi - lo)
    return Edge(estimate, max(estimate - lo, hi - estimate))
