"""impossible (rejected): readings no real sensor can give.

Per run and sensor: energy <= 0; a counter that did not move (energy 0, or a raw trace of at
least two samples that never changes); mean power above the sensor's declared maximum.
Then enclosing vs chip: scopes nest chip < module < board < wall, so every sensor whose scope
is in `enclosing_scopes` must read more than any standing chip sensor over the same window
(compared as mean power where the windows differ). When it does not, the *enclosing* value is
rejected: chip sensors are normally counters read at the window edges, enclosing ones are
normally smoothed power readings, and an under-reading lagged sensor is the usual cause.
"""

from __future__ import annotations

from phase.analysis import first_windows, measured_windows, sensors_by_name, window_s
from phase.results import ResultsFile, Run, SensorInfo, SensorWindow
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    sensors = sensors_by_name(results)
    readings: list[Finding] = []
    for run, w, info in measured_windows(results):
        readings += _reading(run, w, info, ctx)
    # A chip value this rule just rejected is no yardstick for the enclosing sensors.
    return readings + _enclosing_vs_chip(results, sensors, settings, ctx.including(readings))


def _reading(run: Run, w: SensorWindow, info: SensorInfo, ctx: Context) -> list[Finding]:
    energy = w.energy_j
    assert energy is not None
    window = window_s(w)
    frozen = _frozen_trace(run, info)
    out: list[Finding] = []
    if info.kind == "counter" and (energy == 0 or frozen is not None):
        numbers = {"energy_j": energy, "window_s": window}
        if frozen is not None:
            numbers.update(frozen)
        out.append(ctx.finding(
            "impossible", "rejected",
            "the energy counter did not change during the run (frozen or not updating)",
            run=run, sensor=info.name, numbers=numbers,
        ))
    elif energy <= 0:
        out.append(ctx.finding(
            "impossible", "rejected",
            f"energy {energy:.6g} J over a {window:.3g} s window; a running machine uses some",
            run=run, sensor=info.name, numbers={"energy_j": energy, "window_s": window},
        ))
    if info.max_power_w is not None:
        implied = energy / window if window > 0 else None
        powers = [p for p in (implied, w.mean_power_w) if p is not None]
        if powers and max(powers) > info.max_power_w:
            numbers = {"max_power_w": info.max_power_w, "energy_j": energy, "window_s": window}
            if implied is not None:
                numbers["implied_power_w"] = implied
            if w.mean_power_w is not None:
                numbers["mean_power_w"] = w.mean_power_w
            out.append(ctx.finding(
                "impossible", "rejected",
                f"mean power {max(powers):.4g} W exceeds the sensor's physical maximum "
                f"{info.max_power_w:.4g} W",
                run=run, sensor=info.name, numbers=numbers,
            ))
    return out


def _frozen_trace(run: Run, info: SensorInfo) -> dict[str, float] | None:
    """A counter's raw samples over the run that never change (at least two samples)."""
    if info.kind != "counter":
        return None
    for trace in run.samples:
        if trace.sensor == info.name and len(trace.values) >= 2:
            if max(trace.values) == min(trace.values):
                return {"samples": len(trace.values), "counter_j": trace.values[0]}
            return None
    return None


def _enclosing_vs_chip(
    results: ResultsFile, sensors: dict[str, SensorInfo], settings: RuleSettings, ctx: Context
) -> list[Finding]:
    out: list[Finding] = []
    for run in results.runs:
        windows = [w for w in first_windows(run) if w.sensor in sensors and w.energy_j is not None]
        chips = [
            w
            for w in windows
            if sensors[w.sensor].scope == "chip"
            and w.energy_j is not None
            and w.energy_j > 0
            and not ctx.is_rejected(run.id, w.sensor)
        ]
        for big in windows:
            if sensors[big.sensor].scope not in settings.enclosing_scopes:
                continue
            assert big.energy_j is not None
            if big.energy_j <= 0:
                continue  # already rejected as energy <= 0; comparing adds nothing
            for chip in chips:
                finding = _compare(run, big, chip, sensors[big.sensor], settings, ctx)
                if finding is not None:
                    out.append(finding)
    return out


def _compare(
    run: Run,
    big: SensorWindow,
    chip: SensorWindow,
    big_info: SensorInfo,
    settings: RuleSettings,
    ctx: Context,
) -> Finding | None:
    assert big.energy_j is not None and chip.energy_j is not None
    same = (
        abs(big.start_unix_s - chip.start_unix_s) <= settings.window_match_s
        and abs(big.end_unix_s - chip.end_unix_s) <= settings.window_match_s
    )
    numbers = {
        "energy_j": big.energy_j,
        "chip_energy_j": chip.energy_j,
        "window_s": window_s(big),
        "chip_window_s": window_s(chip),
    }
    if same:
        if big.energy_j > chip.energy_j:
            return None
        message = (
            f"{big_info.scope} energy {big.energy_j:.6g} J is not above chip sensor "
            f"{chip.sensor!r}'s {chip.energy_j:.6g} J over the same window"
        )
    else:
        if window_s(big) <= 0 or window_s(chip) <= 0:
            return None
        big_w = big.energy_j / window_s(big)
        chip_w = chip.energy_j / window_s(chip)
        if big_w > chip_w:
            return None
        numbers.update({"mean_power_w": big_w, "chip_mean_power_w": chip_w})
        message = (
            f"{big_info.scope} mean power {big_w:.4g} W is not above chip sensor "
            f"{chip.sensor!r}'s {chip_w:.4g} W (windows differ, so compared as power)"
        )
    return ctx.finding("impossible", "rejected", message, run=run, sensor=big.sensor,
                       numbers=numbers)
