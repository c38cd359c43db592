"""enclosure (rejected): a sensor reads more than every sensor it physically encloses.

Only true enclosures are compared (phase.validate.enclosures: declared by the sensor's
`encloses`, else derived from scope and backend; a DRAM zone is never taken to enclose the
package). Per run, over the same window (or as mean power where the windows differ), the
enclosing sensor must read more than each enclosed one whose value still stands. When it does
not, the *enclosing* value is rejected: enclosed sensors are normally counters read at the
window edges, enclosing ones normally smoothed power readings, and an under-reading lagged
sensor is the usual cause. Each sensor was first judged against its own bounds (rules
plausibility, impossible, frozen), so a rejected value is never the yardstick here.
"""

from __future__ import annotations

from phase.analysis import energy_window, sensors_by_name, window_s
from phase.results import ResultsFile, Run, SensorInfo, SensorWindow
from phase.validate.enclosures import enclosures, how
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    sensors = sensors_by_name(results)
    pairs = enclosures(results)
    out: list[Finding] = []
    for run in results.runs:
        for big_name, inside in pairs.items():
            big = _standing(run, big_name, ctx)
            if big is None:
                continue
            for small_name in inside:
                small = _standing(run, small_name, ctx)
                if small is None:
                    continue
                finding = _compare(run, big, small, sensors[big_name], sensors[small_name],
                                   settings, ctx, how(results, big_name))
                if finding is not None:
                    out.append(finding)
                    break  # one rejection of this enclosing value per run is enough
    return out


def _standing(run: Run, sensor: str, ctx: Context) -> SensorWindow | None:
    w = energy_window(run, sensor)
    if w is None or w.energy_j is None or w.energy_j <= 0 or ctx.is_rejected(run.id, sensor):
        return None
    return w


def _compare(run: Run, big: SensorWindow, small: SensorWindow, big_info: SensorInfo,
             small_info: SensorInfo, settings: RuleSettings, ctx: Context,
             decided: str) -> Finding | None:
    assert big.energy_j is not None and small.energy_j is not None
    same = (
        abs(big.start_unix_s - small.start_unix_s) <= settings.window_match_s
        and abs(big.end_unix_s - small.end_unix_s) <= settings.window_match_s
    )
    numbers = {
        "energy_j": big.energy_j,
        "enclosed_energy_j": small.energy_j,
        "window_s": window_s(big),
        "enclosed_window_s": window_s(small),
    }
    if same:
        if big.energy_j > small.energy_j:
            return None
        message = (
            f"{big_info.scope} energy {big.energy_j:.6g} J is not above {small_info.scope} "
            f"sensor {small.sensor!r}'s {small.energy_j:.6g} J over the same window, though it "
            f"encloses it ({decided})"
        )
    else:
        if window_s(big) <= 0 or window_s(small) <= 0:
            return None
        big_w = big.energy_j / window_s(big)
        small_w = small.energy_j / window_s(small)
        if big_w > small_w:
            return None
        numbers.update({"mean_power_w": big_w, "enclosed_mean_power_w": small_w})
        message = (
            f"{big_info.scope} mean power {big_w:.4g} W is not above {small_info.scope} sensor "
            f"{small.sensor!r}'s {small_w:.4g} W, though it encloses it ({decided}; windows "
            "differ, so compared as power)"
        )
    return ctx.finding("enclosure", "rejected", message, run=run, sensor=big.sensor,
                       numbers=numbers)
