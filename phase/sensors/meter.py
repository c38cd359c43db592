"""Traces recorded by an external meter (a wall plug meter, a board power analyser).

A trace is a CSV or JSON file of (timestamp, watts) or (timestamp, joules) rows, recorded
outside phase and aligned to run windows by timestamp afterwards. Timestamps are unix
seconds or ISO 8601 with a UTC offset; anything relative or without a zone cannot be
aligned and is refused. The user declares the meter's scope and smoothing on the command
line: `--meter FILE:SCOPE:TAU` (e.g. `wall.csv:wall:1.0`).

Accepted shapes:
    CSV with a header:  timestamp,watts          (or time/t/unix_s ; joules/energy_j ...)
    JSON:               [{"timestamp": 1764490000.0, "watts": 12.5}, ...]
                        {"samples": [...same...]}
An empty value is a gap (the meter missed a reading), never a zero.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, get_args

from phase.errors import PhaseError, UsageProblem
from phase.results import Scope, SensorKind
from phase.sensors.base import PostHocSensor, Probe, ReadError, Reading
from phase.sensors.energy import Series

BACKEND = "meter"
_TIME_KEYS = ("timestamp", "time", "t", "unix", "unix_s", "time_s")
_VALUE_KEYS: dict[str, SensorKind] = {
    "watts": "power", "w": "power", "power_w": "power", "power": "power",
    "joules": "counter", "j": "counter", "energy_j": "counter", "energy": "counter",
}
# A unix time before 2001-09-09 is almost surely a relative time (seconds since start).
_MIN_UNIX_S = 1e9


@dataclass(frozen=True)
class MeterSpec:
    path: Path
    scope: Scope
    tau_s: float


def parse_meter_spec(text: str) -> MeterSpec:
    """Parse `FILE:SCOPE:TAU`; FILE may itself contain colons (split from the right)."""
    parts = text.rsplit(":", 2)
    example = "e.g. wall.csv:wall:1.0"
    if len(parts) != 3 or not parts[0]:
        raise UsageProblem(f"--meter expects FILE:SCOPE:TAU ({example}), got {text!r}")
    path, scope, tau = parts
    scopes = get_args(Scope)
    if scope not in scopes:
        raise UsageProblem(f"--meter {text!r}: scope must be one of {', '.join(scopes)}")
    try:
        tau_s = float(tau)
    except ValueError:
        raise UsageProblem(f"--meter {text!r}: TAU must be seconds ({example})") from None
    if not math.isfinite(tau_s) or tau_s < 0:
        raise UsageProblem(f"--meter {text!r}: TAU must be a finite number >= 0")
    return MeterSpec(Path(path), scope, tau_s)  # type: ignore[arg-type]


@dataclass
class MeterData:
    kind: SensorKind
    times: list[float]
    values: list[float | None]  # None: the meter reported no value at this time (a gap)


def _timestamp(raw: Any, where: str) -> float:
    if isinstance(raw, str):
        try:
            value = float(raw)
        except ValueError:
            return _iso(raw.strip(), where)
    elif isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
    else:
        raise PhaseError(f"{where}: timestamp {raw!r} is neither unix seconds nor ISO 8601")
    if not math.isfinite(value):
        raise PhaseError(f"{where}: timestamp {raw!r} is not a finite number")
    return value


def _iso(raw: str, where: str) -> float:
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise PhaseError(f"{where}: timestamp {raw!r} is neither unix seconds nor ISO 8601") \
            from None
    if parsed.tzinfo is None:
        raise PhaseError(f"{where}: timestamp {raw!r} has no UTC offset, so it cannot be aligned "
                         "to run windows; write it with one (e.g. 2026-11-30T09:00:00+00:00)")
    return parsed.timestamp()


def _value(raw: Any, where: str) -> float | None:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise PhaseError(f"{where}: value {raw!r} is not a number") from None
    return value if math.isfinite(value) else None


def _rows(path: Path, text: str) -> list[dict[str, Any]]:
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PhaseError(f"{path}: not valid JSON at line {exc.lineno}: {exc.msg}") from None
        if isinstance(data, dict):
            data = data.get("samples")
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise PhaseError(f"{path}: expected a list of objects, or {{\"samples\": [...]}}")
        return [{str(k).strip().lower(): v for k, v in r.items()} for r in data]
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    return [{(k or "").strip().lower(): v for k, v in r.items()} for r in reader]


def load_meter(path: Path) -> MeterData:
    """Read a whole trace; raises PhaseError naming the file, row and problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PhaseError(f"{path}: no such meter trace file") from None
    except OSError as exc:
        raise PhaseError(f"{path}: cannot read: {exc.strerror or exc}") from None
    rows = _rows(path, text)
    keys = set(rows[0]) if rows else set(_header(text))
    time_key = next((k for k in _TIME_KEYS if k in keys), None)
    value_key = next((k for k in _VALUE_KEYS if k in keys), None)
    if time_key is None or value_key is None:
        raise PhaseError(f"{path}: needs a timestamp column ({'/'.join(_TIME_KEYS)}) and a "
                         f"watts or joules column; found {sorted(keys) or 'none'}")
    times: list[float] = []
    values: list[float | None] = []
    for n, row in enumerate(rows, start=1):
        where = f"{path}: row {n}"
        t = _timestamp(row.get(time_key), where)
        if t < _MIN_UNIX_S:
            raise PhaseError(f"{where}: timestamp {t} looks relative; a meter trace needs "
                             "absolute unix seconds or ISO 8601 times to align with runs")
        if times and t <= times[-1]:
            raise PhaseError(f"{where}: timestamps must increase ({t} after {times[-1]})")
        times.append(t)
        values.append(_value(row.get(value_key), where))
    return MeterData(_VALUE_KEYS[value_key], times, values)


def _header(text: str) -> list[str]:
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return [c.strip().lower() for c in line.split(",")]
    return []


class MeterTrace(PostHocSensor):
    """A sensor whose samples come from a file; the sampler aligns them after the run."""

    backend = BACKEND

    def __init__(self, spec: MeterSpec) -> None:
        self.spec = spec
        data = load_meter(spec.path)  # fail early: the file and its columns must make sense
        super().__init__(f"meter:{spec.path.stem}", scope=spec.scope, kind=data.kind,
                         smoothing_s=spec.tau_s, max_power_w=None)

    def load(self) -> MeterData:
        """Re-read the file: a meter may keep appending to it while phase runs."""
        return load_meter(self.spec.path)

    def series(self) -> Series:
        data = self.load()
        times: list[float] = []
        values: list[float] = []
        gaps: list[float] = []
        for t, v in zip(data.times, data.values, strict=True):
            if v is None:
                gaps.append(t)
            else:
                times.append(t)
                values.append(v)
        return Series(times, values, gaps)

    def read(self) -> Reading:
        data = self.load()
        for t, v in zip(reversed(data.times), reversed(data.values), strict=True):
            if v is not None:
                return Reading(t, v)
        raise ReadError(f"{self.spec.path}: the trace holds no values yet")

    def read_value(self) -> float:
        return self.read().value


def probe(specs: list[MeterSpec]) -> Probe:
    found = Probe(BACKEND)
    for spec in specs:
        try:
            found.sensors.append(MeterTrace(spec))
        except PhaseError as exc:
            found.problems.append(str(exc))
    return found
