"""Every raw number a snapshot supplies, range-checked before a replay uses it.

The schema (snapshot_schema) checks types: a value is a finite number where one is expected.
This checks what the number can be on a real machine: a counter or a power reading is never
negative, a kernel counter fits in 64 bits, no chip draws 100 kW. A value outside its range
(1e30 µW, a negative energy, text that parses to infinity or NaN) makes that recording
unreadable, with the reason: its series or file then fails as a recorded error does, so
discovery lists the sensor as unavailable with the reason and the chip-energy choice never
sees it. The reasons are kept (`screen`'s list) for the report.

Ranges, by where the number comes from:
* sysfs value files (RAPL, hwmon, IIO rails): an integer; energy 0 <= v < 2**64 (the kernel's
  unsigned counters), power 0 <= v <= 1e11 µW, current and voltage (signed: a shunt monitor
  reads a rail at rest a few mA either side of 0) within ±1e9;
* NVML: energy (mJ) 0 <= v < 2**64, power readings and limits (mW) 0 <= v <= 1e8;
* zeus (mJ, cumulative): 0 <= v < 2**64; powermetrics readings (W): 0 <= v <= 1e5.
"""

from __future__ import annotations

import math
import re
from typing import Any

from phase.sensors.core.ranges import MAX_POWER_W
from phase.sensors.core.ranges import reading_problem as _problem

# Current (mA) and voltage (mV) readings are signed; a million of either is no rail's.
_SIGNED = 1e9
# sysfs files that hold a power, energy, current or voltage reading (not a label, a name or
# a temperature, which may be below zero).
_VALUE_FILE = re.compile(
    r"^(?!temp)(?:.*(?:energy|power|curr|volt).*|in\d+)_(?:input|average|uj|uw)$")


def _text_problem(text: str, low_high: tuple[float, float]) -> str | None:
    try:
        return _problem(int(text.strip()), low_high[1], low_high[0])
    except ValueError:
        try:
            number = float(text.strip())
        except ValueError:
            return None  # not a number at all: parse_int refuses it, naming the text
        return f"{text.strip()[:32]!r} is not an integer ({number!r})"


def _sysfs_range(name: str) -> tuple[float, float]:
    """(low, high) of a sysfs value file: power in µW (or mW on IIO rails) up to 100 kW,
    energy any 64-bit count, current (mA) and voltage (mV) signed, within a megaunit."""
    if "power" in name:
        return 0.0, MAX_POWER_W * 1e6
    if "energy" in name:
        return 0.0, math.inf
    return -_SIGNED, _SIGNED


def _series_problem(series: dict[str, Any], low_high: tuple[float, float]) -> str | None:
    low, high = low_high
    for _t, value in series.get("changes", []):
        why = _problem(value, high, low)
        if why is not None:
            return why
    return None


def _unreadable(series: dict[str, Any], reason: str) -> None:
    series["changes"] = []
    series["error"] = f"unreadable: {reason}"


def _screen_fs(fs: dict[str, Any], reasons: list[str]) -> None:
    for path, series in fs.get("series", {}).items():
        name = path.rsplit("/", 1)[-1]
        if _VALUE_FILE.match(name):
            why = _series_problem(series, _sysfs_range(name))
            if why is not None:
                reasons.append(f"{path}: unreadable: recorded value {why}")
                _unreadable(series, f"recorded value {why}")
    for path, entry in fs.get("files", {}).items():
        name = path.rsplit("/", 1)[-1]
        if _VALUE_FILE.match(name) and "text" in entry and "error" not in entry:
            why = _text_problem(str(entry["text"]), _sysfs_range(name))
            if why is not None:
                reasons.append(f"{path}: unreadable: recorded value {why}")
                del entry["text"]  # read_text: nothing; a read: the reason
                entry["read_error"] = f"{path}: unreadable: recorded value {why}"


_NVML_SERIES = {"energy_mj": math.inf, "power_mw": MAX_POWER_W * 1e3,
                "power_instant_mw": MAX_POWER_W * 1e3}
_NVML_FACTS = ("enforced_power_limit_mw", "power_limit_constraints_mw")
_NVML_ERROR_UNKNOWN = 999


def _screen_nvml(nvml: dict[str, Any], reasons: list[str]) -> None:
    for gpu in nvml.get("gpus", []):
        where = f"nvml gpu {gpu.get('index')}"
        for key, high in _NVML_SERIES.items():
            series = gpu.get(key)
            why = _series_problem(series, (0.0, high)) if series else None
            if series is not None and why is not None:
                reasons.append(f"{where}: unreadable: {key} {why}")
                _unreadable(series, f"{key} {why}")
                series["code"] = _NVML_ERROR_UNKNOWN
        for key in _NVML_FACTS:
            fact = gpu.get(key)
            values = fact.get("value") if fact else None
            values = values if isinstance(values, list) else [values]
            why = next((w for v in values if v is not None
                        and (w := _problem(v, MAX_POWER_W * 1e3)) is not None), None)
            if fact is not None and why is not None:
                reasons.append(f"{where}: unreadable: {key} {why}")
                gpu[key] = {"code": _NVML_ERROR_UNKNOWN, "error": f"unreadable: {key} {why}"}


def _screen_apple(apple: dict[str, Any], reasons: list[str]) -> None:
    zeus = apple.get("zeus", {})
    for _t, sample in zeus.get("changes", []):
        why = next((f"{k} {w}" for k, v in sample.items() if v is not None
                    and (w := _problem(v, math.inf)) is not None), None)
        if why is not None:
            reasons.append(f"zeus: unreadable: {why}")
            zeus["changes"] = []
            zeus["error"] = f"unreadable: recorded {why}"
            break
    pm = apple.get("powermetrics", {})
    for reading in pm.get("readings", []):
        why = _problem(reading.get("w"), MAX_POWER_W)
        if why is not None:
            reasons.append(f"powermetrics: unreadable: {reading.get('key')} {why}")
            pm["readings"] = []
            pm["error"] = f"unreadable: recorded {reading.get('key')} {why}"
            break


def screen(data: dict[str, Any]) -> list[str]:
    """Make every recording whose raw value is out of its range unreadable (in `data`, a
    snapshot its schema passed), and return why, one line per recording."""
    reasons: list[str] = []
    _screen_fs(data.get("fs", {}), reasons)
    _screen_nvml(data.get("nvml", {}), reasons)
    _screen_apple(data.get("apple", {}), reasons)
    return reasons
