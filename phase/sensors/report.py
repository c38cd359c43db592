"""What `phase sensors` shows: each sensor found, a reading or a short sampled window, and
every backend that is unavailable with the reason."""

from __future__ import annotations

import time
from typing import Any

from phase.sensors.base import PostHocSensor, ReadError
from phase.sensors.discovery import Discovery
from phase.sensors.sampler import Sampler


def survey(found: Discovery, *, hz: float, sample_s: float | None = None,
           probe_s: float = 1.0) -> dict[str, Any]:
    """Measure update periods, then a live reading per sensor or (sample_s) one window.

    Closes the sensors when done. The result is JSON-ready.
    """
    sampler = Sampler(found.sensors, hz=hz, probe_s=probe_s)
    rows: list[dict[str, Any]] = []
    try:
        sampler.start()
        infos = sampler.sensor_infos()
        windows = {}
        if sample_s is not None and found.sensors:
            win = sampler.begin(idle_s=min(1.0, sample_s))
            win.start()
            time.sleep(sample_s)
            win.stop()
            windows = {w.sensor: w for w in win.result()[0]}
        for sensor, info in zip(found.sensors, infos, strict=True):
            row: dict[str, Any] = info.model_dump()
            row["post_hoc"] = isinstance(sensor, PostHocSensor)
            if sample_s is not None:
                row["window"] = windows[sensor.name].model_dump()
            else:
                try:
                    reading = sensor.read()
                    row["reading"] = {"unix_s": reading.t_unix_s, "value": reading.value,
                                      "error": None}
                except ReadError as exc:
                    row["reading"] = {"unix_s": None, "value": None, "error": str(exc)}
            rows.append(row)
    finally:
        sampler.close()
    return {
        "sensors": rows,
        "unavailable": [u.model_dump() for u in found.unavailable],
        "sample_s": sample_s,
    }


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    if value == 0:
        return "0"
    return f"{value * 1e3:.3g} ms" if value < 1 else f"{value:.3g} s"


def _cell(row: dict[str, Any]) -> str:
    if "window" in row:
        w = row["window"]
        if w["energy_j"] is None:
            return f"no energy: {w['energy_reason']}"
        idle = (f"idle {w['idle_power_w']:.3f} W" if w["idle_power_w"] is not None
                else "idle ?")
        return (f"{w['energy_j']:.3f} J, mean {w['mean_power_w']:.3f} W, {idle} "
                f"({w['samples']} samples, {w['gaps']} gaps)")
    r = row["reading"]
    if r["error"]:
        return f"read failed: {r['error']}"
    recorded = " (last value in the trace)" if row["post_hoc"] else ""
    return f"{r['value']:.3f} {row['unit']}{recorded}"


def format_survey(data: dict[str, Any]) -> str:
    lines: list[str] = []
    sensors = data["sensors"]
    if sensors:
        what = (f"{data['sample_s']:g} s sampled window" if data["sample_s"] is not None
                else "reading now")
        header = ("sensor", "backend", "scope", "kind", "tau", "updates", what)
        table = [header] + [
            (r["name"], r["backend"], r["scope"], r["kind"], _seconds(r["smoothing_s"]),
             _seconds(r["update_period_s"]), _cell(r))
            for r in sensors
        ]
        widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
        lines.append(f"Energy sensors found: {len(sensors)}")
        for row in table:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False))
                         + "  " + row[-1])
        unknown: dict[str, list[str]] = {}
        for r in sensors:
            if r["update_period_s"] is None:
                unknown.setdefault(r["update_period_reason"], []).append(r["name"])
        for reason, names in unknown.items():
            lines.append(f"Update period unknown for {', '.join(names)}: {reason}")
    else:
        lines.append("No energy sensors found on this machine. Runs will still record speed, "
                     "acceptance and CPU time; their energy will be null with the reasons below.")
    if data["unavailable"]:
        lines.append("")
        lines.append("Unavailable:")
        for u in data["unavailable"]:
            lines.append(f"  {u['backend']}: {u['reason']}")
    return "\n".join(lines)
