"""Find every sensor this machine offers, and say why each missing backend is missing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from phase.errors import PhaseError
from phase.results import UnavailableBackend
from phase.sensors import apple, jetson, meter, nvml, rapl
from phase.sensors.base import Probe, Sensor
from phase.sensors.meter import MeterSpec, parse_meter_spec


@dataclass
class Discovery:
    sensors: list[Sensor] = field(default_factory=list)
    unavailable: list[UnavailableBackend] = field(default_factory=list)

    def close(self) -> None:
        for sensor in self.sensors:
            sensor.close()


def discover(
    rapl_root: Path | str = rapl.DEFAULT_ROOT,
    hwmon_root: Path | str = jetson.DEFAULT_ROOT,
    meters: Sequence[MeterSpec | str] = (),
    *,
    nvml_enabled: bool = True,
    apple_enabled: bool = True,
) -> Discovery:
    """Probe every backend. A backend that finds nothing becomes an UnavailableBackend with
    its reason; one that finds some sensors but not others reports the rest the same way."""
    specs = [parse_meter_spec(m) if isinstance(m, str) else m for m in meters]
    probes: list[Probe] = [rapl.probe(Path(rapl_root))]
    probes.append(nvml.probe() if nvml_enabled else Probe(nvml.BACKEND, problems=["disabled"]))
    probes.append(jetson.probe(Path(hwmon_root)))
    probes.append(apple.probe() if apple_enabled else Probe(apple.BACKEND, problems=["disabled"]))
    if specs:
        probes.append(meter.probe(specs))
    found = Discovery()
    for p in probes:
        found.sensors.extend(p.sensors)
        found.unavailable.extend(UnavailableBackend(backend=p.backend, reason=r)
                                 for r in p.problems)
    names = [s.name for s in found.sensors]
    if len(set(names)) != len(names):
        found.close()
        raise PhaseError(f"two sensors share a name: {names} (two meter files with one stem?)")
    return found


def assert_publishable(sensors: Iterable[Sensor]) -> None:
    """Refuse sensors that are test fixtures: they must never reach a results file."""
    fake = [s.name for s in sensors if s.synthetic]
    if fake:
        raise PhaseError(
            f"refusing to record synthetic sensor(s) {', '.join(fake)} as measurements: "
            "they exist for tests only"
        )
