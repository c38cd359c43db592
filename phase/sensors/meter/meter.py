"""A trace recorded by an external meter (a wall plug meter, a board power analyser).

A trace is a CSV or JSON file of (timestamp, power) or (timestamp, cumulative energy) rows,
recorded outside phase and aligned to run windows by timestamp afterwards (file format and
units: phase.sensors.meter.meter_format). The user declares the meter's scope and smoothing on the
command line, plus options after the smoothing:

    --meter FILE:SCOPE:TAU[,unit=U][,time=s|ms|us|ns][,offset=SECONDS]

`unit` names the value column's unit when the header does not (W, mW, kW, J, kJ, Wh, kWh);
`time` the unit of numeric timestamps (default: judged by size, and said so); `offset` is
added to the meter's timestamps when its clock differs from this machine's (meter time +
offset = this machine's time).

Accepted shapes:
    CSV with a header:  timestamp,watts          (or time/t/unix_s ; energy_wh, "Power (W)"...)
    JSON:               [{"timestamp": 1764490000.0, "watts": 12.5}, ...]
                        {"samples": [...same...]}
An empty value is a gap (the meter missed a reading), never a zero; a negative one is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from phase.base.errors import PhaseError, UsageProblem
from phase.results import Scope
from phase.sensors.core.base import Declared, PostHocSensor, Probe, ReadError, Reading, Sensor
from phase.sensors.core.energy import Series
from phase.sensors.meter import meter_format as fmt
from phase.sensors.meter.meter_format import MeterData, MeterError

BACKEND = "meter"
DECLARED = Declared(BACKEND, measures="wall", priority=10)
_EXAMPLE = "e.g. wall.csv:wall:1.0 or plug.csv:wall:1.0,unit=kWh,offset=-2.5"


@dataclass(frozen=True)
class MeterSpec:
    path: Path
    scope: Scope
    tau_s: float
    unit: str | None = None
    time_unit: str | None = None
    offset_s: float = 0.0


def _number(text: str, what: str, spec: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise UsageProblem(f"--meter {spec!r}: {what} must be a number ({_EXAMPLE})") from None
    if not math.isfinite(number):
        raise UsageProblem(f"--meter {spec!r}: {what} must be a finite number")
    return number


def parse_meter_spec(text: str) -> MeterSpec:
    """Parse `FILE:SCOPE:TAU[,key=value...]`; FILE may contain colons (split from the right)."""
    parts = text.rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        raise UsageProblem(f"--meter expects FILE:SCOPE:TAU ({_EXAMPLE}), got {text!r}")
    path, scope, rest = parts
    scopes = get_args(Scope)
    if scope not in scopes:
        raise UsageProblem(f"--meter {text!r}: scope must be one of {', '.join(scopes)}")
    tau, *options = rest.split(",")
    tau_s = _number(tau, "TAU (seconds)", text)
    if tau_s < 0:
        raise UsageProblem(f"--meter {text!r}: TAU must be a finite number >= 0")
    found: dict[str, str] = {}
    for option in options:
        key, sep, val = option.partition("=")
        key = key.strip().lower()
        if not sep or key not in ("unit", "time", "offset") or key in found:
            raise UsageProblem(f"--meter {text!r}: options are unit=, time= and offset=, each "
                               f"at most once ({_EXAMPLE}); got {option!r}")
        found[key] = val.strip()
    unit = found.get("unit")
    if unit is not None and unit.lower() not in fmt.UNITS:
        raise UsageProblem(f"--meter {text!r}: unit must be one of {', '.join(sorted(fmt.UNITS))}")
    time_unit = found.get("time")
    if time_unit is not None and time_unit not in fmt.TIME_UNITS:
        raise UsageProblem(f"--meter {text!r}: time must be one of s, ms, us, ns")
    offset = _number(found["offset"], "offset (seconds)", text) if "offset" in found else 0.0
    return MeterSpec(Path(path), scope, tau_s, unit, time_unit, offset)  # type: ignore[arg-type]  # unit checked above


def _time_unit(key: str, spec: MeterSpec, first: float, where: str) -> tuple[str, str | None]:
    """The timestamps' unit, and a note when it was judged from their size."""
    if spec.time_unit:
        return spec.time_unit, None
    suffix = key.rpartition("_")[2]
    if "_" in key and suffix in fmt.TIME_UNITS:
        return suffix, None
    unit = fmt.epoch_unit(first, where)
    if unit == "s":
        return unit, None
    return unit, (f"{spec.path}: timestamps read as unix {unit} (judged by their size: "
                  f"{first:.0f}); say time={unit} to make it explicit")


def load_meter(spec: MeterSpec | Path) -> MeterData:
    """Read a whole trace; raises MeterError (exit 2) naming the file, row and problem."""
    if isinstance(spec, Path):
        spec = MeterSpec(spec, "wall", 0.0)
    path = spec.path
    text = fmt.read_text(path)
    records = fmt.rows(path, text)
    keys = list(records[0]) if records else fmt.header(path, text)
    time_key = next((k for k in fmt.TIME_KEYS if k in keys), None)
    if time_key is None:
        raise MeterError(f"{path}: needs a timestamp column ({'/'.join(fmt.TIME_KEYS)}); "
                         f"found {keys or 'none'}")
    column = fmt.value_column(path, keys, spec.unit)
    data = MeterData(column.kind, [], [])
    scale: float | None = None
    for n, row in enumerate(records, start=1):
        where = f"{path}: row {n}"
        raw_t, is_iso = fmt.timestamp(row.get(time_key), where)
        if not is_iso:
            if scale is None:
                unit, note = _time_unit(time_key, spec, raw_t, where)
                scale = fmt.TIME_UNITS[unit]
                if note:
                    data.notes.append(note)
            if raw_t * scale < 1e9:
                raise MeterError(f"{where}: timestamp {raw_t:g} looks relative; a meter trace "
                                 "needs absolute unix or ISO 8601 times to align with runs")
        t = (raw_t if is_iso else raw_t * (scale or 1.0)) + spec.offset_s
        if data.times and t <= data.times[-1]:
            raise MeterError(f"{where}: timestamps must increase ({t} after {data.times[-1]})")
        data.times.append(t)
        data.values.append(fmt.value(row.get(column.key), column, where))
    return data


class MeterTrace(PostHocSensor):
    """A sensor whose samples come from a file; the sampler aligns them after the run."""

    backend = BACKEND

    def __init__(self, spec: MeterSpec) -> None:
        self.spec = spec
        data = load_meter(spec)  # fail early: the file and its columns must make sense
        super().__init__(f"meter:{spec.path.stem}", scope=spec.scope, kind=data.kind,
                         smoothing_s=spec.tau_s, max_power_w=None, part="meter")
        self.notes = data.notes

    def load(self) -> MeterData:
        """Re-read the file: a meter may keep appending to it while phase runs."""
        return load_meter(self.spec)

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
            trace = MeterTrace(spec)
        except PhaseError as exc:
            found.problems.append(str(exc))
            continue
        found.sensors.append(trace)
        found.notes.extend(trace.notes)
    return found


def declare_enclosures(sensors: list[Sensor]) -> None:
    """A wall meter encloses every other sensor of the machine; a board meter its chip-scope
    sensors; a module or chip meter declares nothing it encloses."""
    chips = [s.name for s in sensors if s.scope == "chip"]
    for m in sensors:
        if m.backend != BACKEND:
            continue
        if m.scope == "wall":
            m.encloses = [s.name for s in sensors if s.scope != "wall"]
        elif m.scope == "board":
            m.encloses = list(chips)
        else:
            m.encloses = []


__all__ = ["MeterData", "MeterError", "MeterSpec", "MeterTrace", "load_meter",
           "parse_meter_spec", "probe"]
