"""Reading an external meter's trace file: rows, the time column, the value column and units.

Every problem is a `MeterError` (exit 2: bad input) naming the file, the row or column, and
the fix; no input, however broken (not UTF-8, JSON nested 100 000 deep, a NUL byte, a FIFO),
ends in a traceback.

Units are never guessed from a bare name: a column called `energy` could be J, Wh or kWh
(smart-plug exports are usually Wh or kWh) and `power` W or mW, so the unit must be in the
header (`energy_wh`, `Energy (kWh)`, `power [W]`, `watts`, `joules`) or given in the meter
spec (`unit=kWh`). Timestamps are unix seconds or ISO 8601 with a UTC offset; unix times in
milliseconds, microseconds or nanoseconds are recognised by their size and converted, and
the note says so (or name the unit: `time=ms`).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from phase.base.errors import PhaseError
from phase.results import ResultsError, SensorKind
from phase.storage.jsonread import parse_json, read_regular_bytes


class MeterError(PhaseError):
    exit_code = 2


TIME_KEYS = ("timestamp", "time", "t", "unix", "unix_s", "time_s", "time_ms", "timestamp_ms")
# unit name -> (kind, factor to J or W)
UNITS: dict[str, tuple[SensorKind, float]] = {
    "w": ("power", 1.0), "watt": ("power", 1.0), "watts": ("power", 1.0),
    "mw": ("power", 1e-3), "milliwatts": ("power", 1e-3), "kw": ("power", 1e3),
    "j": ("counter", 1.0), "joule": ("counter", 1.0), "joules": ("counter", 1.0),
    "kj": ("counter", 1e3), "wh": ("counter", 3600.0), "kwh": ("counter", 3.6e6),
    "mwh": ("counter", 3.6),
}
_BARE = {"power": "power", "energy": "counter", "value": "?"}
# Seconds per unit of an epoch timestamp, and the range a 2001..2286 date has in that unit.
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_MIN_UNIX_S = 1e9  # 2001-09-09: anything earlier is almost surely a relative time
_MAX_UNIX_S = 1e10  # 2286
_UNIT_IN_HEADER = re.compile(r"^(?P<base>.*?)\s*[\(\[](?P<unit>[^\)\]]*)[\)\]]\s*$")


@dataclass
class MeterData:
    kind: SensorKind
    times: list[float]
    values: list[float | None]  # None: the meter reported no value at this time (a gap)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Column:
    key: str  # the header as read (lower case)
    kind: SensorKind
    factor: float  # to J or W
    unit: str


def _split_header(key: str) -> tuple[str, str | None]:
    """`energy (kWh)` -> (energy, kwh); `power_mw` -> (power, mw); `watts` -> (watts, watts)."""
    m = _UNIT_IN_HEADER.match(key)
    if m:
        return m.group("base").strip(), m.group("unit").strip().lower()
    if key in UNITS:
        return key, key
    base, _, unit = key.rpartition("_")
    if base and unit in UNITS:
        return base, unit
    return key, None


def value_column(path: Path, keys: list[str], unit: str | None) -> Column:
    """The column holding watts or joules, with its unit from the header or `unit=`."""
    candidates = []
    for key in keys:
        base, header_unit = _split_header(key)
        if key in TIME_KEYS:
            continue
        if header_unit is not None or base in _BARE:
            candidates.append((key, base, header_unit))
    if not candidates:
        raise MeterError(f"{path}: needs a power or energy column (watts, power_w, energy_wh, "
                         f"'Energy (kWh)' ...); found columns {keys or 'none'}")
    key, base, header_unit = candidates[0]
    given = unit.lower() if unit else None
    if header_unit and given and header_unit != given:
        raise MeterError(f"{path}: column '{key}' says {header_unit} but the meter spec says "
                         f"unit={unit}; remove one")
    chosen = header_unit or given
    if chosen is None:
        raise MeterError(
            f"{path}: column '{key}' has no unit; smart-plug exports are often Wh or kWh, "
            "power columns W or mW: put the unit in the header (energy_wh, 'Energy (kWh)', "
            "power_w) or add it to --meter (e.g. FILE:wall:1.0,unit=kWh)")
    if chosen not in UNITS:
        raise MeterError(f"{path}: unit '{chosen}' of column '{key}' is not one of "
                         f"{', '.join(sorted(UNITS))}")
    kind, factor = UNITS[chosen]
    if _BARE.get(base) not in (None, "?", kind):
        raise MeterError(f"{path}: column '{key}' is named {base} but its unit {chosen} is "
                         f"{'energy' if kind == 'counter' else 'power'}")
    return Column(key, kind, factor, chosen)


def read_text(path: Path) -> str:
    if not path.exists():
        raise MeterError(f"{path}: no such meter trace file")
    try:
        data = read_regular_bytes(path)  # a FIFO or device is refused, never waited on
    except ResultsError as exc:
        raise MeterError(f"{exc}; a meter trace is a CSV or JSON file") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MeterError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); export "
                         "the trace as UTF-8 CSV or JSON") from None


def rows(path: Path, text: str) -> list[dict[str, Any]]:
    if path.suffix.lower() == ".json":
        try:
            data = parse_json(text, path)
        except ResultsError as exc:
            raise MeterError(str(exc)) from None
        if isinstance(data, dict):
            data = data.get("samples")
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise MeterError(f"{path}: expected a list of objects, or {{\"samples\": [...]}}")
        return [{str(k).strip().lower(): v for k, v in r.items()} for r in data]
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    try:
        reader = csv.DictReader(io.StringIO("\n".join(lines)))
        return [{(k or "").strip().lower(): v for k, v in r.items()} for r in reader]
    except csv.Error as exc:
        raise MeterError(f"{path}: not a readable CSV file: {exc}") from None


def header(path: Path, text: str) -> list[str]:
    if path.suffix.lower() == ".json":
        return []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return [c.strip().lower() for c in line.split(",")]
    return []


def timestamp(raw: Any, where: str) -> tuple[float, bool]:
    """(value, is_iso): a number as written (any epoch unit), or an ISO time in unix s."""
    if isinstance(raw, str):
        try:
            value = float(raw)
        except ValueError:
            return _iso(raw.strip(), where), True
    elif isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
    else:
        raise MeterError(f"{where}: timestamp {raw!r} is neither unix time nor ISO 8601")
    if not math.isfinite(value):
        raise MeterError(f"{where}: timestamp {raw!r} is not a finite number")
    return value, False


def _iso(raw: str, where: str) -> float:
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise MeterError(f"{where}: timestamp {raw!r} is neither unix time nor ISO 8601") \
            from None
    if parsed.tzinfo is None:
        raise MeterError(f"{where}: timestamp {raw!r} has no UTC offset, so it cannot be aligned "
                         "to run windows; write it with one (e.g. 2026-11-30T09:00:00+00:00)")
    return parsed.timestamp()


def epoch_unit(first: float, where: str) -> str:
    """Which unit an epoch timestamp is in, judged by its size (a date after 2001)."""
    for unit, seconds in TIME_UNITS.items():
        if _MIN_UNIX_S <= first * seconds < _MAX_UNIX_S:
            return unit
    if first < _MIN_UNIX_S:
        raise MeterError(f"{where}: timestamp {first:g} looks relative; a meter trace needs "
                         "absolute unix times or ISO 8601 times to align with runs")
    raise MeterError(f"{where}: timestamp {first:g} is not unix seconds, ms, us or ns of a "
                     "date after 2001; name the unit with time=s|ms|us|ns")


def value(raw: Any, column: Column, where: str) -> float | None:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if isinstance(raw, bool):
        raise MeterError(f"{where}: value {raw!r} is not a number")
    try:
        number = float(raw)
    except (TypeError, ValueError):
        raise MeterError(f"{where}: value {raw!r} is not a number") from None
    if not math.isfinite(number):
        return None
    if number < 0:
        what = "power" if column.kind == "power" else "a cumulative energy reading"
        raise MeterError(f"{where}: {column.key} is {raw!r}, negative; {what} cannot be "
                         "below zero (a sign error or a meter that counts feed-in?)")
    return number * column.factor
