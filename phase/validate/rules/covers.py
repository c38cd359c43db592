"""covers (blocking): what each sensor covers holds what the enclosure rules and the chip
figure rely on.

The parts a sensor's reading covers follow from its backend and name (phase.results.covers:
RAPL package = cpu + uncore, dram = dram, psys = package + dram + board, ...). Checked from
the file, where the parts are known (a sensor phase cannot place is not judged):

- an enclosure (`encloses`, declared or derived: phase.validate.enclosures) holds only
  sensors whose parts the enclosing sensor covers: "package-0 encloses dram" would make the
  enclosure rules demand package >= DRAM, which nothing physical says;
  the enclosure-sum rule holds the enclosing sensor against the sum of such sensors, so each
  must be inside it (two sensors covering the same kind of part, two sockets' packages, may
  both be: the parts are kinds, not devices);
- a sensor that physically encloses others (a wall meter; psys beside its packages, a Jetson
  module input beside its rails: parts of its own backend it covers and more) declares no
  empty enclosure (`encloses: []`): that would switch every enclosure check off for it;
- `primary_energy.covers` is what its sensors cover (recomputed; for GPU backends, whose
  parts also depend on the device, at least that).
"""

from __future__ import annotations

from phase.results import ResultsFile, SensorInfo
from phase.results.covers import covers_of, sensor_covers
from phase.validate.enclosures import enclosures
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings

# Backends whose sensors' parts also depend on the device (a module, an APU, a card), which
# the file does not record: the parts from name and backend are the least they cover.
_DEVICE_PARTS = frozenset({"nvml", "amdgpu", "amdsmi", "intel_gpu"})


def _parts(info: SensorInfo) -> set[str] | None:
    parts = sensor_covers(info.backend, info.name)
    return set(parts) if parts is not None else None


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    sensors = {s.name: s for s in results.sensors}
    index = {s.name: i for i, s in reversed(list(enumerate(results.sensors)))}
    out: list[Finding] = []

    def block(message: str, name: str | None, path: str) -> None:
        out.append(ctx.finding("covers", "blocking", message, sensor=name, json_path=path))

    pairs = enclosures(results)
    for big, inside in pairs.items():
        outer = _parts(sensors[big])
        for name in inside:
            inner = _parts(sensors[name])
            if outer is None or inner is None or inner <= outer:
                continue
            block(f"{big} covers {sorted(outer)}, so it cannot enclose {name}, which covers "
                  f"{sorted(inner)} ({', '.join(sorted(inner - outer))} outside it)",
                  big, f"$.sensors[{index[big]}].encloses")
    for s in results.sensors:
        members = _physically_inside(s, results.sensors)
        if s.encloses is not None and not pairs.get(s.name) and members:
            block(f"{s.name} ({s.scope}, {s.backend}) declares that it encloses none of the "
                  f"file's sensors, but its reading includes {', '.join(members)}",
                  s.name, f"$.sensors[{index[s.name]}].encloses")
    out += _primary(results, ctx)
    return out


def _physically_inside(big: SensorInfo, sensors: list[SensorInfo]) -> list[str]:
    """The sensors whatever `big` declares must be inside it: everything but other wall
    meters for a wall meter; for another sensor, those of its own backend whose known parts
    it covers and more (psys and the packages; a Jetson module input and its rails). Equal
    parts are not inclusion (two packages both cover cpu and uncore), nor are two backends'
    parts (a GPU's board is not the CPU's)."""
    if big.scope == "wall":
        return [s.name for s in sensors if s.scope != "wall"]
    outer = _parts(big)
    if outer is None:
        return []
    return [s.name for s in sensors if s.backend == big.backend and s.name != big.name
            and (inner := _parts(s)) is not None and inner < outer]


def _primary(results: ResultsFile, ctx: Context) -> list[Finding]:
    primary = results.primary_energy
    if primary is None:
        return []
    backends = {s.name: s.backend for s in results.sensors}
    expected = covers_of(primary.sensors, backends)
    recorded = list(primary.covers)
    device_parts = any(backends.get(n) in _DEVICE_PARTS for n in primary.sensors)
    holds = set(expected) <= set(recorded) if device_parts else recorded == expected
    if holds and ("unknown" in recorded) == ("unknown" in expected):
        return []
    return [ctx.finding(
        "covers", "blocking",
        f"primary_energy.covers is {recorded}, but its sensors ({', '.join(primary.sensors)}) "
        f"cover {expected}" + (" at least" if device_parts else ""),
        json_path="$.primary_energy.covers",
    )]


RULE = Rule(order=17, check=check)
