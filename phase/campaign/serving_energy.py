"""Energy over a window of a serving run, from what its sensors recorded.

The run's energy windows (Run.energy) are the sampler's, opened just before the load
generator starts and closed just after it returns: they are the whole run's energy. A window
inside the run (the steady state) is integrated from the run's sensor samples (Run.samples:
seconds since the run's idle window began), summing the primary energy sensors
(ResultsFile.primary_energy) as every chip-energy figure does. A counter (J) is read at the
window's edges by linear interpolation between its samples; a power reading (W) is integrated
with the trapezoid rule over the samples inside and the interpolated edges. A window that
reaches outside the samples, a counter that went backwards inside it (a wrap) or did not
move, and any window of a sensor whose own whole-run window has no energy (the sampler
judged it frozen, too slow or gapped) have no reading: None, never a guess.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.integrate import trapezoid

from phase.results import PrimaryEnergy, SensorInfo, SensorTrace, SensorWindow
from phase.serving.windows import EnergyReading


def _counter_j(t: np.ndarray, v: np.ndarray, a: float, b: float) -> float | None:
    inside = v[(t >= a) & (t <= b)]
    if inside.size > 1 and np.any(np.diff(inside) < 0):
        return None  # wrapped or reset inside the window
    joules = float(np.interp(b, t, v) - np.interp(a, t, v))
    # a counter that did not move is frozen or slower than the window: 0 J would be a guess
    return joules if joules > 0 else None


def _power_j(t: np.ndarray, v: np.ndarray, a: float, b: float) -> float:
    mask = (t > a) & (t < b)
    times = np.concatenate(([a], t[mask], [b]))
    watts = np.concatenate(([np.interp(a, t, v)], v[mask], [np.interp(b, t, v)]))
    return float(trapezoid(watts, times))


def trace_energy(trace: SensorTrace, unit: str, a: float, b: float) -> float | None:
    """Joules one sensor's trace says were used in (a, b] (its own time base), or None."""
    t, v = np.asarray(trace.t_s, dtype=float), np.asarray(trace.values, dtype=float)
    if t.size < 2 or a < t[0] or b > t[-1] or b <= a:
        return None
    return _counter_j(t, v, a, b) if unit == "J" else _power_j(t, v, a, b)


def serving_reading(primary: PrimaryEnergy | None, sensors: Sequence[SensorInfo],
                    windows: Sequence[SensorWindow], traces: Sequence[SensorTrace],
                    whole: tuple[float, float], offset_s: float) -> EnergyReading | None:
    """Joules between two readings of the run's clock: the primary sensors' own windows for
    the whole run (`whole`: the run's start and end on its clock), their samples for any
    other span. `offset_s` converts the run's clock to the traces' time base (the trace time
    of the run's start). None: no primary energy sensor, so no figure."""
    if primary is None:
        return None
    units = {s.name: s.unit for s in sensors}
    by_name = {t.sensor: t for t in traces}
    own = {w.sensor: w for w in windows}
    start = whole[0]

    def reading(a: float, b: float) -> float | None:
        total = 0.0
        for name in primary.sensors:
            whole_j = own[name].energy_j if name in own else None
            if (a, b) == whole or whole_j is None:
                # a sensor the sampler found no energy in over the run has none in any
                # part of it (frozen, too slow, gaps): its samples are not read instead
                joules = whole_j
            elif name in by_name:
                joules = trace_energy(by_name[name], units.get(name, "J"),
                                      a - start + offset_s, b - start + offset_s)
            else:
                joules = None
            if joules is None:
                return None
            total += joules
        return total

    return reading
