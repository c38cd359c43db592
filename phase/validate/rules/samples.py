"""samples (rejected): each window's energy recomputed from the raw samples recorded with it.

A run keeps every sensor's timestamped samples (`samples[].t_s`: seconds since the idle
window began; `values` in the sensor's unit). The window's energy is recomputed from them
the way the sampler computed it (phase.sensors.core.energy), never trusted:

- The window is found in the trace by its edges: live sensors are read exactly at the
  window's start and end, so two samples lie exactly `end - start` apart (the pair nearest
  the idle window plus the prefill, where several are). A power reading's energy is the
  trapezoid over them; a counter's the sampler's edge estimate, with the counter's declared
  update period and the window's own and idle power. The recorded energy must equal it
  within both edge errors (recorded and recomputed) and one step of the counter's
  resolution.
- A trace without reads at the window's edges (a meter on its own clock), spanning at least
  the window, bounds the energy only: a power reading's mean power within its samples' range
  (10% either side), a counter's energy no more than it advanced over the whole trace.
- A counter that goes down between two samples inside the window wrapped (the sampler never
  stores a reset as energy). The recorded energy implies the range it corrected each wrap by:
  energy = the reads' raw difference + one range per wrap. Where the file declares the
  counter's range (`sensors[].wrap_j`, RAPL's `max_energy_range_uj`; schema 8), the implied
  range must be it. In any case it must lie above every value the counter showed,
  and the energy it puts into the wrapped interval must not exceed the sensor's power bound
  (declared, else its scope's) over that interval: a wrap corrected twice puts a whole range
  (kJ) into tens of ms, where the window's mean power may still look plausible.

Rejected: that sensor's value in that run, which the later rules then leave out (so a board
reading is never rejected for disagreeing with a chip value its own samples contradict).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

from phase.analysis import sensors_by_name
from phase.results import ResultsFile, Run, SensorInfo, SensorTrace, SensorWindow
from phase.sensors.core.energy import Series, WindowSpec, counter_window, edge_power, power_energy
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings

# Two samples this close to the window's length apart are its edge reads (Unix timestamps
# differenced twice: a few 1e-7 s of round-off).
_PAIR_S = 1e-6
_REL = 1e-6  # float round-off between the sampler's arithmetic and the recomputation
_BAND = 0.10  # without edge reads: how far outside its samples' range a mean power may lie


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    sensors = sensors_by_name(results)
    out: list[Finding] = []
    for i, run in enumerate(results.runs):
        traces = {t.sensor: t for t in run.samples}
        for j, w in enumerate(run.energy):
            info, trace = sensors.get(w.sensor), traces.get(w.sensor)
            if info is None or trace is None or w.energy_j is None or len(trace.t_s) < 2:
                continue
            problem = _problem(results, run, w, info, trace, settings)
            if problem is not None:
                message, numbers = problem
                out.append(ctx.finding("samples", "rejected", message, run=run,
                                       sensor=w.sensor, numbers=numbers,
                                       json_path=f"$.runs[{i}].energy[{j}].energy_j"))
    return out


Problem = tuple[str, dict[str, float]]


def _edges(results: ResultsFile, run: Run, w: SensorWindow,
           t: Sequence[float]) -> tuple[int, int] | None:
    """The samples read at the window's start and end: a pair exactly its length apart; of
    several, the one whose start is nearest the idle window plus the prefill."""
    span = w.end_unix_s - w.start_unix_s
    expected = results.config.idle_window_s + run.prefill_s
    best: tuple[float, int, int] | None = None
    k1 = 0
    for k0, t0 in enumerate(t):
        while k1 < len(t) - 1 and t[k1] - t0 < span - _PAIR_S:
            k1 += 1
        if k1 > k0 and abs(t[k1] - t0 - span) <= _PAIR_S:
            score = abs(t0 - expected)
            if best is None or score < best[0]:
                best = (score, k0, k1)
    return None if best is None else (best[1], best[2])


def _bound_w(info: SensorInfo, settings: RuleSettings) -> float:
    return info.max_power_w if info.max_power_w is not None else settings.max_power_w[info.scope]


def _problem(results: ResultsFile, run: Run, w: SensorWindow, info: SensorInfo,
             trace: SensorTrace, settings: RuleSettings) -> Problem | None:
    assert w.energy_j is not None
    t, v = trace.t_s, trace.values
    if any(b < a for a, b in pairwise(t)):
        return None  # samples out of time order: rule clocks' finding
    edges = _edges(results, run, w, t)
    if edges is None:
        return _bounded(w, info, t, v)
    k0, k1 = edges
    wraps = [k for k in range(k0 + 1, k1 + 1) if info.kind == "counter" and v[k] < v[k - 1]]
    if wraps:
        return _wrapped(w, info, t, v, edges, wraps, settings)
    a, b = t[k0], t[k1]
    series = Series(times=t, values=v)
    if info.kind == "power":
        spec = WindowSpec(name=info.name, kind="power", max_interval_s=math.inf)
        energy, _ = power_energy(spec, series, a, b)
        error = 0.0
    else:
        spec = WindowSpec(name=info.name, kind="counter", max_power_w=info.max_power_w,
                          update_period_s=info.update_period_s)
        power = edge_power(spec, v[k1] - v[k0], b - a, w.idle_power_w)
        energy, _, recomputed_error = counter_window(spec, series, a, b, power=power)
        error = (recomputed_error or 0.0) + (w.edge_error_j or 0.0) + settings.resolution_j(
            info.backend)
    if energy is None:
        return None
    if abs(w.energy_j - energy) <= error + _REL * max(abs(energy), abs(w.energy_j)):
        return None
    how = "the trapezoid of its power samples" if info.kind == "power" else (
        "the counter's reads at the window's edges, estimated as the sampler does")
    return (f"the window records {w.energy_j:.6g} J, but its own samples give {energy:.6g} J "
            f"({how}, samples {k0}..{k1}; allowed difference {error:.3g} J)",
            {"energy_j": w.energy_j, "samples_energy_j": energy, "allowed_j": error})


def _bounded(w: SensorWindow, info: SensorInfo, t: Sequence[float],
             v: Sequence[float]) -> Problem | None:
    """No reads at the window's edges: what any window inside the trace can hold."""
    assert w.energy_j is not None
    window = w.end_unix_s - w.start_unix_s
    if t[-1] - t[0] < window:
        return None  # a trace shorter than the window holds no bound on it (rule clocks')
    if info.kind == "power":
        if window <= 0:
            return None
        mean = w.energy_j / window
        lo, hi = min(v), max(v)
        if lo * (1 - _BAND) <= mean <= hi * (1 + _BAND):
            return None
        return (f"the window's mean power is {mean:.6g} W, outside its power samples' range "
                f"({lo:.6g}-{hi:.6g} W): no stretch of them integrates to {w.energy_j:.6g} J",
                {"mean_power_w": mean, "min_sample_w": lo, "max_sample_w": hi})
    advance = v[-1] - v[0]
    if w.energy_j <= advance * (1 + _REL) + (w.edge_error_j or 0.0):
        return None
    return (f"the window records {w.energy_j:.6g} J, but the counter advanced only "
            f"{advance:.6g} J over its whole trace ({t[-1] - t[0]:.3g} s, idle window included)",
            {"energy_j": w.energy_j, "trace_advance_j": advance})


def _wrapped(w: SensorWindow, info: SensorInfo, t: Sequence[float], v: Sequence[float],
             edges: tuple[int, int], wraps: list[int], settings: RuleSettings) -> Problem | None:
    """A counter that wrapped inside the window: the wrap range the recorded energy implies
    (energy = the reads' raw difference + one range per wrap) must lie above every value the
    counter showed, and put into each wrapped interval no more than the sensor's bound."""
    assert w.energy_j is not None
    k0, k1 = edges
    n = len(wraps)
    slack = (w.edge_error_j or 0.0) + settings.resolution_j(info.backend)
    implied = (w.energy_j - (v[k1] - v[k0])) / n
    numbers = {"energy_j": w.energy_j, "wraps": n, "wrap_range_j": implied}
    if info.wrap_j is not None and abs(implied - info.wrap_j) > slack / n:
        numbers["declared_wrap_j"] = info.wrap_j
        times = (w.energy_j - (v[k1] - v[k0])) / info.wrap_j
        return (f"the counter wrapped {n} time(s) in the window, but the window's "
                f"{w.energy_j:.6g} J implies a wrap range of {implied:.6g} J where the sensor "
                f"declares {info.wrap_j:.6g} J ($.sensors[].wrap_j): the recorded energy "
                f"corrects {times:.3g} ranges for {n} wrap(s)", numbers)
    if implied <= max(v) - slack / n:
        return (f"the counter wrapped {n} time(s) in the window, but the window's "
                f"{w.energy_j:.6g} J implies a wrap range of {implied:.6g} J, not above the "
                f"{max(v):.6g} J it showed: a wrap was left uncorrected", numbers)
    bound = _bound_w(info, settings)
    worst = max(wraps, key=lambda k: (implied + v[k] - v[k - 1]) / max(t[k] - t[k - 1], 1e-12))
    wrapped_j = implied + v[worst] - v[worst - 1]
    dt = t[worst] - t[worst - 1]
    if wrapped_j <= bound * dt + slack:
        return None
    numbers.update({"wrapped_interval_j": wrapped_j, "interval_s": dt, "max_power_w": bound})
    return (f"the counter wrapped between samples {worst - 1} and {worst} "
            f"({v[worst - 1]:.6g} -> {v[worst]:.6g} J, {dt:.3g} s apart); the window's "
            f"{w.energy_j:.6g} J implies a wrap range of {implied:.6g} J, which puts "
            f"{wrapped_j:.6g} J ({wrapped_j / dt if dt > 0 else math.inf:.6g} W) into that "
            f"interval, above the sensor's {bound:.6g} W: the wrap was corrected more than once",
            numbers)


RULE = Rule(order=130, check=check)
