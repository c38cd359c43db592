"""enclosure-sum (rejected): an enclosing sensor reads less than the sum of what it encloses.

The enclosure rule compares an enclosing sensor with each enclosed one in turn; a reading
can pass every pair and still be broken: RAPL psys at 20 J over a window in which two
packages read 12 J each encloses both, so it must read at least 24 J. Per run, over the
same window (or as mean power where the windows differ, the way the enclosure rule does),
the enclosing sensor must read at least the sum of the sensors it encloses, less a
tolerance.

What is summed: the enclosed sensors of the enclosing sensor's own backend that no other
enclosed sensor encloses (a wall meter around psys around the packages sums psys, never
psys and the packages). Only its own backend, because that is what knows its domains are
disjoint: RAPL's package and DRAM domains are separate counters of separate supplies, and a
Jetson module's INA3221 rails are separate shunts (phase.sensors.jetson.jetson); across backends
phase cannot tell that two sensors do not overlap. At least two must be left (one is the
enclosure rule's pair), each with a standing value: a value an earlier rule rejected is
not summed, and the run is then not checked for that sensor.

Tolerance, in J: the windows' edge errors (each counter window's recorded uncertainty at its
edges), plus what lag can explain (phase.validate.lag: the enclosing sensor under-reading a
rise by b(T) of the enclosed energy, each enclosed one over-reading a fall by its own
b(T) of its energy), plus SUM_SHARE of the enclosed sum for sensor resolution and
calibration: the summed sensors are calibrated separately (an INA3221 channel's offset is
up to 80 uV across a 5 mOhm shunt, 16 mA, 2-4% of a rail drawing half an amp; RAPL's DRAM
domain and older package domains are modelled estimates, not metered), so a sum a few
percent above the enclosing reading is not by itself a broken reading. A missing or halved
package (psys 20 J against 24 J) is far beyond it.

Which reading is wrong is decided from each sensor's history, as the enclosure rule does
(the same sensor's mean power in the other runs of the condition): the one sensor out of
line while the others are in line is rejected; where that cannot decide, the enclosing
sensor and every summed sensor are rejected, each finding naming them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from phase.analysis import sensors_by_name, window_s
from phase.results import ResultsFile, Run, SensorInfo, SensorWindow
from phase.validate.enclosures import enclosures, how
from phase.validate.lag import lag_bias
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.rules.enclosure import History, in_line, standing, window_power
from phase.validate.settings import RuleSettings

NAME = "enclosure-sum"
# Share of the enclosed sum allowed for the summed sensors' resolution and separate
# calibration (module docstring).
SUM_SHARE = 0.05


def summed(results: ResultsFile) -> dict[str, list[str]]:
    """Enclosing sensor -> the enclosed sensors whose sum it must reach (module docstring);
    only where there are at least two."""
    sensors = sensors_by_name(results)
    pairs = enclosures(results)
    out: dict[str, list[str]] = {}
    for big, inside in pairs.items():
        own = [n for n in inside if sensors[n].backend == sensors[big].backend]
        top = [n for n in own if not any(n in pairs.get(other, []) for other in own)]
        if len(top) >= 2:
            out[big] = top
    return out


@dataclass(frozen=True)
class _Sum:
    run: Run
    index: int
    big: SensorWindow
    parts: list[SensorWindow]
    decided: str

    def path(self, w: SensorWindow) -> str:
        return f"$.runs[{self.index}].energy[{self.run.energy.index(w)}].energy_j"


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    groups = summed(results)
    if not groups:
        return []
    sensors = sensors_by_name(results)
    history = History(results, ctx)
    out: list[Finding] = []
    for i, run in enumerate(results.runs):
        for big_name, inside in groups.items():
            big = standing(run, big_name, ctx)
            parts = [standing(run, n, ctx) for n in inside]
            if big is None or any(p is None for p in parts):
                continue
            found = _compare(_Sum(run, i, big, [p for p in parts if p is not None],
                                  how(results, big_name)), sensors, settings, ctx, history)
            out += found
    return out


def _deficit(s: _Sum, settings: RuleSettings) -> tuple[float, float, dict[str, float]] | None:
    """(deficit J, enclosed sum J, numbers), or None where the enclosing reading is at or
    above the sum. Compared as energy over the same window, else as mean power."""
    big = s.big
    assert big.energy_j is not None
    total = sum(p.energy_j or 0.0 for p in s.parts)
    same = all(abs(big.start_unix_s - p.start_unix_s) <= settings.window_match_s
               and abs(big.end_unix_s - p.end_unix_s) <= settings.window_match_s
               for p in s.parts)
    numbers = {"energy_j": big.energy_j, "enclosed_sum_j": total, "window_s": window_s(big)}
    if same:
        deficit = total - big.energy_j
    else:
        powers = [window_power(w) for w in (big, *s.parts)]
        if any(p is None for p in powers):
            return None
        big_w, *part_w = [p for p in powers if p is not None]
        numbers.update({"mean_power_w": big_w, "enclosed_sum_mean_power_w": sum(part_w)})
        deficit = (sum(part_w) - big_w) * window_s(big)
    return (deficit, total, numbers) if deficit > 0 else None


def _compare(s: _Sum, sensors: dict[str, SensorInfo], settings: RuleSettings, ctx: Context,
             history: History) -> list[Finding]:
    found = _deficit(s, settings)
    if found is None:
        return []
    deficit, total, numbers = found
    edges = (s.big.edge_error_j or 0.0) + sum(p.edge_error_j or 0.0 for p in s.parts)
    lag = lag_bias(window_s(s.big), sensors[s.big.sensor].smoothing_s) * total + sum(
        lag_bias(window_s(p), sensors[p.sensor].smoothing_s) * (p.energy_j or 0.0)
        for p in s.parts)
    share = SUM_SHARE * total
    tolerance = edges + lag + share
    numbers.update({"deficit_j": deficit, "edge_error_j": edges, "lag_j": lag,
                    "resolution_j": share, "tolerance_j": tolerance})
    if deficit <= tolerance:
        return []
    names = ", ".join(repr(p.sensor) for p in s.parts)
    shown = (f"{s.big.sensor!r} read {s.big.energy_j:.6g} J, {deficit:.3g} J below the "
             f"{total:.6g} J that the sensors it encloses ({names}; {s.decided}) read together "
             f"over this {window_s(s.big):.3g} s window: more than the {tolerance:.3g} J that "
             f"edge errors ({edges:.3g} J), lag ({lag:.3g} J) and {SUM_SHARE:.0%} of the sum "
             f"for resolution and calibration ({share:.3g} J) allow")
    verdicts = {w.sensor: in_line(s.run, w, settings, history) for w in (s.big, *s.parts)}
    off = [w for w in (s.big, *s.parts) if verdicts[w.sensor][0] is False]
    on = [w for w in (s.big, *s.parts) if verdicts[w.sensor][0] is True]
    if len(off) == 1 and len(on) == len(s.parts):
        why = "; ".join(verdicts[w.sensor][1] for w in (s.big, *s.parts))
        return [_reject(s, off[0], f"{shown}; {why}: {off[0].sensor!r} is the one out of line",
                        numbers, ctx)]
    why = "; ".join(verdicts[w.sensor][1] for w in (s.big, *s.parts))
    return [_reject(s, w, f"{shown}; which reading is wrong cannot be decided ({why}): all "
                    "are rejected", numbers, ctx) for w in (s.big, *s.parts)]


def _reject(s: _Sum, w: SensorWindow, message: str, numbers: dict[str, float],
            ctx: Context) -> Finding:
    return ctx.finding(NAME, "rejected", message, run=s.run, sensor=w.sensor, numbers=numbers,
                       json_path=s.path(w))


RULE = Rule(order=200, check=check)
