"""enclosure (rejected): a sensor reads more than every sensor it physically encloses.

Only true enclosures are compared (phase.validate.enclosures: declared by the sensor's
`encloses`, else derived from scope and backend; a DRAM zone is never taken to enclose the
package). Per run, over the same window (or as mean power where the windows differ), the
enclosing sensor must read more than each enclosed one whose value still stands. Each sensor
was first judged against its own bounds and its own samples (rules clocks, samples,
plausibility, impossible, frozen), so a rejected value is never the yardstick here. Where it
does not, which reading is wrong is decided from the evidence, and the finding says which
and why:

- Not above, but by no more than the window's edge errors and what lag can explain on this
  window (a smoothed sensor with time constant tau misses up to b(T) = (tau/T)(1 - e^(-T/tau))
  of a step: phase.validate.lag): the sensor whose lag explains it is rejected, the
  enclosing one where neither is smoothed (it must read *more*, and equality is not more).
- Beyond that, each reading is held against its own history: the same sensor's mean power
  in the other runs of the same condition where it stands. The one out of line with its
  history (by more than `variance_max`, or its history's own spread if wider) while the
  other is in line is rejected: a wrap counted twice puts the chip far above its repeats
  while the board reads as always, a failing board meter falls below its own.
- Where that cannot decide (too little history, both or neither out of line), both are
  rejected.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass

from phase.analysis import energy_window, sensors_by_name, spread, window_s
from phase.results import ResultsFile, Run, SensorInfo, SensorWindow
from phase.validate.enclosures import enclosures, how
from phase.validate.lag import lag_bias
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    sensors = sensors_by_name(results)
    pairs = enclosures(results)
    history = History(results, ctx)
    out: list[Finding] = []
    for i, run in enumerate(results.runs):
        rejected: set[str] = set()
        for big_name, inside in pairs.items():
            for small_name in inside:
                if big_name in rejected:
                    break
                big, small = standing(run, big_name, ctx), standing(run, small_name, ctx)
                if big is None or small is None or small_name in rejected:
                    continue
                pair = _Pair(run, i, big, small, sensors[big_name], sensors[small_name],
                             how(results, big_name))
                found = _compare(pair, settings, ctx, history)
                rejected.update(f.sensor for f in found if f.sensor is not None)
                out += found
    return out


def standing(run: Run, sensor: str, ctx: Context) -> SensorWindow | None:
    w = energy_window(run, sensor)
    if w is None or w.energy_j is None or w.energy_j <= 0 or ctx.is_rejected(run.id, sensor):
        return None
    return w


def window_power(w: SensorWindow) -> float | None:
    return w.energy_j / window_s(w) if w.energy_j is not None and window_s(w) > 0 else None


class History:
    """Each sensor's standing mean power per run, by condition: what its repeats read."""

    def __init__(self, results: ResultsFile, ctx: Context) -> None:
        # (prompt, strategy, sensor) -> run id -> mean power
        self.power: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
        for run in results.runs:
            for w in run.energy:
                if standing(run, w.sensor, ctx) is not None and (p := window_power(w)) is not None:
                    self.power[(run.prompt, run.strategy, w.sensor)].setdefault(run.id, p)

    def others(self, run: Run, sensor: str) -> list[float]:
        """The sensor's standing mean power in the other runs of this run's condition."""
        return [p for run_id, p in self.power[(run.prompt, run.strategy, sensor)].items()
                if run_id != run.id]


@dataclass(frozen=True)
class _Pair:
    run: Run
    index: int
    big: SensorWindow
    small: SensorWindow
    big_info: SensorInfo
    small_info: SensorInfo
    decided: str  # how the enclosure is known: declared, or derived from scope

    def path(self, w: SensorWindow) -> str:
        return f"$.runs[{self.index}].energy[{self.run.energy.index(w)}].energy_j"


def _compare(pair: _Pair, settings: RuleSettings, ctx: Context,
             history: History) -> list[Finding]:
    big, small = pair.big, pair.small
    assert big.energy_j is not None and small.energy_j is not None
    same = (abs(big.start_unix_s - small.start_unix_s) <= settings.window_match_s
            and abs(big.end_unix_s - small.end_unix_s) <= settings.window_match_s)
    numbers = {"energy_j": big.energy_j, "enclosed_energy_j": small.energy_j,
               "window_s": window_s(big), "enclosed_window_s": window_s(small)}
    big_w, small_w = window_power(big), window_power(small)
    if same:
        if big.energy_j > small.energy_j:
            return []
        shown = (f"{pair.big_info.scope} energy {big.energy_j:.6g} J is not above "
                 f"{pair.small_info.scope} sensor {small.sensor!r}'s {small.energy_j:.6g} J over "
                 f"the same window, though it encloses it ({pair.decided})")
        deficit, scale = small.energy_j - big.energy_j, small.energy_j
    else:
        if big_w is None or small_w is None or big_w > small_w:
            return []
        numbers.update({"mean_power_w": big_w, "enclosed_mean_power_w": small_w})
        shown = (f"{pair.big_info.scope} mean power {big_w:.4g} W is not above "
                 f"{pair.small_info.scope} sensor {small.sensor!r}'s {small_w:.4g} W, though it "
                 f"encloses it ({pair.decided}; windows differ, so compared as power)")
        deficit = (small_w - big_w) * window_s(small)
        scale = small.energy_j
    lags = {w.sensor: lag_bias(window_s(w), info.smoothing_s) * scale
            for w, info in ((big, pair.big_info), (small, pair.small_info))}
    edges = (big.edge_error_j or 0.0) + (small.edge_error_j or 0.0)
    numbers.update({"deficit_j": deficit, "edge_error_j": edges,
                    "lag_j": lags[big.sensor], "enclosed_lag_j": lags[small.sensor]})
    if deficit <= edges + max(lags.values()):
        laggard = small if lags[small.sensor] > lags[big.sensor] else big
        why = (f"by no more than the windows' edge errors and what lag can explain on this "
               f"{window_s(big):.3g} s window ({edges + max(lags.values()):.3g} J): "
               f"{laggard.sensor!r} is rejected, "
               + ("its smoothing being the longer" if laggard is small or lags[big.sensor] > 0
                  else "as an enclosing reading must be more, not equal"))
        return [_reject(pair, laggard, f"{shown}, {why}", numbers, ctx)]
    return _by_history(pair, shown, numbers, settings, ctx, history)


def _in_line(pair: _Pair, w: SensorWindow, settings: RuleSettings,
             history: History) -> tuple[bool | None, str]:
    return in_line(pair.run, w, settings, history)


def in_line(run: Run, w: SensorWindow, settings: RuleSettings,
            history: History) -> tuple[bool | None, str]:
    """Whether this reading is in line with the sensor's other runs of this condition (None:
    too few to tell), and the words that say so (also the enclosure-sum rule's evidence)."""
    others = history.others(run, w.sensor)
    power = window_power(w)
    if len(others) < 2 or power is None:
        return None, f"{w.sensor!r} has {len(others)} other standing run(s) of this condition"
    median = statistics.median(others)
    tolerance = max(settings.variance_max, spread(others) or 0.0)
    off = power / median - 1 if median > 0 else math.inf
    verdict = abs(off) <= tolerance
    return verdict, (f"{w.sensor!r} reads {power:.4g} W, {off:+.1%} from the median of its "
                     f"{len(others)} other runs of this condition ({median:.4g} W; in line "
                     f"within {tolerance:.1%})")


def _by_history(pair: _Pair, shown: str, numbers: dict[str, float], settings: RuleSettings,
                ctx: Context, history: History) -> list[Finding]:
    big_ok, big_why = _in_line(pair, pair.big, settings, history)
    small_ok, small_why = _in_line(pair, pair.small, settings, history)
    beyond = f"{shown}, by more than edge errors and lag can explain on this window"
    if big_ok is True and small_ok is False:
        return [_reject(pair, pair.small, f"{beyond}; {small_why}, while {big_why}: the "
                        f"{pair.small_info.scope} reading is the one out of line", numbers, ctx)]
    if big_ok is False and small_ok is True:
        return [_reject(pair, pair.big, f"{beyond}; {big_why}, while {small_why}: the "
                        f"{pair.big_info.scope} reading is the one out of line", numbers, ctx)]
    why = f"{beyond}; which one is wrong cannot be decided ({big_why}; {small_why}): both " \
          "are rejected"
    return [_reject(pair, pair.big, why, numbers, ctx), _reject(pair, pair.small, why,
                                                               numbers, ctx)]


def _reject(pair: _Pair, w: SensorWindow, message: str, numbers: dict[str, float],
            ctx: Context) -> Finding:
    return ctx.finding("enclosure", "rejected", message, run=pair.run, sensor=w.sensor,
                       numbers=numbers, json_path=pair.path(w))


RULE = Rule(order=190, check=check)
