"""Energy over a window from timestamped samples: pure functions, no clocks, no threads.

Counter: the sum of wrap-safe deltas between consecutive reads from the window's start edge
to its end edge. A wrap between two reads is handled when at most one can have happened,
i.e. the reads are closer than the wrap time at the sensor's maximum power; otherwise the
energy is unknown (None plus the reason), never guessed.

Power: the trapezoidal integral of the samples, with the value at each edge taken from a
sample exactly there or interpolated between the samples either side. Missing samples are
gaps: too many of them, or too long a stretch without one, and the energy is unknown.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from phase.results import SensorKind, SensorTrace, SensorWindow
from phase.sensors.core.edges import Edge, EdgePower, interpolated_edge, read_edge

# Reads before a window's start that a counter's edge estimate may look back over.
_LOOKBACK = 64


@dataclass(frozen=True)
class Limits:
    """When a window's energy is refused. The defaults suit a 20 Hz sampler."""

    # Power sensors: at most this fraction of the reads in a window may fail.
    max_gap_fraction: float = 0.25
    # Power sensors: the longest stretch without a sample, unless the sensor itself updates
    # more slowly (then 2.5 of its update periods).
    max_gap_s: float = 0.5
    # Counters that declare no maximum power: the bound used to decide whether a wrap could
    # have gone unseen. No RAPL zone, GPU or SoC in this project's range draws 1 kW.
    unknown_max_power_w: float = 1000.0


@dataclass
class Series:
    """One sensor's samples in time order (unix s); failed reads are kept as gap times."""

    times: Sequence[float] = field(default_factory=list)
    values: Sequence[float] = field(default_factory=list)
    gap_times: Sequence[float] = field(default_factory=list)
    last_error: str | None = None


@dataclass(frozen=True)
class WindowSpec:
    """What the energy computation needs to know about one sensor."""

    name: str
    kind: SensorKind
    wrap_j: float | None = None
    max_power_w: float | None = None
    max_interval_s: float = 0.5
    # Live counters are read exactly at both edges; a failed edge read voids the window
    # rather than being papered over by interpolation.
    exact_edges: bool = True
    # How often a counter's value changes (measured): bounds how stale an edge read can be.
    update_period_s: float | None = None


Outcome = tuple[float | None, str | None]


def _count(times: Sequence[float], a: float, b: float) -> int:
    return bisect_right(times, b) - bisect_left(times, a)


def _unwrap(spec: WindowSpec, s: Series, lo: int, hi: int,
            limits: Limits) -> tuple[list[float], str | None]:
    """Reads lo..hi on one increasing scale (J from read lo), undoing wraps where at most one
    can have happened between two reads; otherwise the reason it cannot be known."""
    times, values = s.times, s.values
    bound = spec.max_power_w or limits.unknown_max_power_w
    wrap_time = spec.wrap_j / bound if spec.wrap_j else None
    u = [0.0]
    for k in range(lo + 1, hi + 1):
        dt = times[k] - times[k - 1]
        if wrap_time is not None and dt >= wrap_time:
            return u, (
                f"{dt:.3g} s passed between two reads, but the counter wraps every "
                f"{spec.wrap_j:.4g} J, i.e. after {wrap_time:.3g} s at {bound:.4g} W: it may "
                "have wrapped more than once unseen (sample faster, or use a shorter window)"
            )
        d = values[k] - values[k - 1]
        if d < 0:
            if spec.wrap_j is None:
                return u, (f"the counter went backwards ({values[k - 1]:.6g} -> "
                           f"{values[k]:.6g} J): reset or driver reload during the window")
            d += spec.wrap_j
        u.append(u[-1] + d)
    return u, None


def counter_window(spec: WindowSpec, s: Series, a: float, b: float, limits: Limits = Limits(),
                   power: EdgePower | None = None
                   ) -> tuple[float | None, str | None, float | None]:
    """(energy J, reason, edge error J) of a counter over [a, b]: the counter's estimated
    value at b minus at a (phase.sensors.core.edges); `power` describes the power near the edges
    (None: nothing is known beyond the counter's own updates)."""
    if b <= a:
        return None, "the window has zero length", None
    times = s.times
    i0 = bisect_right(times, a) - 1  # last read at or before a
    i1 = bisect_left(times, b)  # first read at or after b
    for edge, ok, exact, side in (
        ("start", i0 >= 0, i0 >= 0 and times[i0] == a, "before"),
        ("end", i1 < len(times), i1 < len(times) and times[i1] == b, "after"),
    ):
        if spec.exact_edges and not exact:
            why = f": {s.last_error}" if s.last_error else ""
            return None, f"the counter read at the window {edge} failed{why}", None
        if not ok:
            return None, f"the trace has no reading at or {side} the window {edge}", None
    lo = max(0, i0 - _LOOKBACK)
    u, problem = _unwrap(spec, s, lo, len(times) - 1, limits)
    if problem is not None and len(u) <= i1 - lo and lo < i0:  # trouble before the window
        lo = i0
        u, problem = _unwrap(spec, s, lo, len(times) - 1, limits)
    if problem is not None and len(u) <= i1 - lo:
        return None, problem, None
    ui0, ui1 = i0 - lo, i1 - lo
    moves_later = spec.update_period_s is not None and any(v != u[ui1] for v in u[ui1:])
    if u[ui1] == u[ui0] and not moves_later:
        n = i1 - i0 + 1
        return None, (f"the counter did not change over the {b - a:.3g} s window ({n} reads): "
                      "a frozen sensor, or a window shorter than its update period"), None
    rel = times[lo:lo + len(u)]
    if spec.exact_edges:
        start = read_edge(rel, u, ui0, a, spec.update_period_s, power)
        end = read_edge(rel, u, ui1, b, spec.update_period_s, power)
    else:
        for k, exact, name in ((ui0 + 1, rel[ui0] == a, "start"), (ui1, rel[ui1] == b, "end")):
            if not exact and rel[k] - rel[k - 1] > spec.max_interval_s:
                span = rel[k] - rel[k - 1]
                return None, (f"no reading within {span:.3g} s around the window {name} "
                              f"(at most {spec.max_interval_s:.3g} s allowed)"), None
        start = (Edge(u[ui0], 0.0) if rel[ui0] == a else interpolated_edge(rel, u, ui0 + 1, a))
        end = Edge(u[ui1], 0.0) if rel[ui1] == b else interpolated_edge(rel, u, ui1, b)
    error = (None if start.error_j is None or end.error_j is None
             else start.error_j + end.error_j)
    return end.value_j - start.value_j, None, error


def counter_energy(spec: WindowSpec, s: Series, a: float, b: float,
                   limits: Limits = Limits()) -> Outcome:
    energy, reason, _ = counter_window(spec, s, a, b, limits)
    return energy, reason


def _edge_value(times: Sequence[float], values: Sequence[float], t: float,
                max_interval_s: float, edge: str) -> tuple[float | None, str]:
    """The power at t: a sample exactly there, or interpolated between its neighbours."""
    i = bisect_left(times, t)
    if i < len(times) and times[i] == t:
        return values[i], ""
    if i == 0:
        return None, f"no power reading at or before the window {edge}"
    if i == len(times):
        return None, f"no power reading at or after the window {edge}"
    if times[i] - times[i - 1] > max_interval_s:
        return None, (f"no power reading within {times[i] - times[i - 1]:.3g} s around the "
                      f"window {edge} (at most {max_interval_s:.3g} s allowed)")
    f = (t - times[i - 1]) / (times[i] - times[i - 1])
    return values[i - 1] + f * (values[i] - values[i - 1]), ""


def power_energy(spec: WindowSpec, s: Series, a: float, b: float,
                 limits: Limits = Limits()) -> Outcome:
    if b <= a:
        return None, "the window has zero length"
    times, values = s.times, s.values
    lo, hi = bisect_left(times, a), bisect_right(times, b)
    good, bad = hi - lo, _count(s.gap_times, a, b)
    last = f"; last error: {s.last_error}" if s.last_error else ""
    if bad and bad / (good + bad) > limits.max_gap_fraction:
        return None, (f"{bad} of {good + bad} reads failed in the window "
                      f"(more than {limits.max_gap_fraction:.0%}){last}")
    va, why_a = _edge_value(times, values, a, spec.max_interval_s, "start")
    vb, why_b = _edge_value(times, values, b, spec.max_interval_s, "end")
    if va is None or vb is None:
        return None, f"{why_a or why_b}{last}"
    ts = [a, *(times[k] for k in range(lo, hi) if a < times[k] < b), b]
    vs = [va, *(values[k] for k in range(lo, hi) if a < times[k] < b), vb]
    longest = max(t1 - t0 for t0, t1 in itertools.pairwise(ts))
    if longest > spec.max_interval_s:
        return None, (f"no power reading for {longest:.3g} s inside the window "
                      f"(at most {spec.max_interval_s:.3g} s allowed){last}")
    energy = 0.0
    for k in range(1, len(ts)):
        energy += (ts[k] - ts[k - 1]) * (vs[k] + vs[k - 1]) / 2
    return energy, None


def energy_between(spec: WindowSpec, s: Series, a: float, b: float,
                   limits: Limits = Limits()) -> Outcome:
    compute = counter_energy if spec.kind == "counter" else power_energy
    return compute(spec, s, a, b, limits)


def window_result(spec: WindowSpec, s: Series, idle_start: float, start: float, end: float,
                  limits: Limits = Limits(), *,
                  trace_to: float | None = None) -> tuple[SensorWindow, SensorTrace]:
    """One sensor's SensorWindow (decode window [start, end], idle [idle_start, start]) and
    its SensorTrace (every sample from idle_start to `trace_to`, default end; t_s relative to
    idle_start). A counter's window carries its edge error (phase.sensors.core.edges)."""
    if idle_start < start:
        idle_energy, idle_reason = energy_between(spec, s, idle_start, start, limits)
    else:
        idle_energy, idle_reason = None, "no idle window was recorded before this run"
    idle_power = idle_energy / (start - idle_start) if idle_energy is not None else None
    edge_error = None
    if spec.kind == "counter":
        rough, _ = counter_energy(spec, s, start, end, limits)
        power = edge_power(spec, rough, end - start, idle_power)
        energy, reason, edge_error = counter_window(spec, s, start, end, limits, power)
    else:
        energy, reason = power_energy(spec, s, start, end, limits)
    window = SensorWindow(
        sensor=spec.name,
        start_unix_s=start,
        end_unix_s=end,
        energy_j=energy,
        energy_reason=reason,
        mean_power_w=energy / (end - start) if energy is not None else None,
        idle_power_w=idle_power,
        idle_power_reason=None if idle_power is not None else f"idle window: {idle_reason}",
        samples=_count(s.times, start, end),
        gaps=_count(s.gap_times, start, end),
        edge_error_j=edge_error if energy is not None else None,
    )
    lo, hi = bisect_left(s.times, idle_start), bisect_right(s.times, trace_to or end)
    trace = SensorTrace(
        sensor=spec.name,
        t_s=[s.times[k] - idle_start for k in range(lo, hi)],
        values=[s.values[k] for k in range(lo, hi)],
    )
    return window, trace


# The most power near a window edge is taken to be this much above the larger of the window's
# and the idle window's mean power (never above the sensor's declared bound).
EDGE_POWER_MARGIN = 1.5


def edge_power(spec: WindowSpec, rough_j: float | None, window_s: float,
               idle_w: float | None) -> EdgePower:
    inside = rough_j / window_s if rough_j is not None and window_s > 0 else None
    means = [w for w in (idle_w, inside) if w is not None and w > 0]
    bound = max(means) * EDGE_POWER_MARGIN if means else None
    if spec.max_power_w:
        bound = min(bound, spec.max_power_w) if bound is not None else spec.max_power_w
    return EdgePower(inside, bound)
