"""Find every sensor this machine offers, and say why each missing backend is missing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phase.base.errors import PhaseError
from phase.results import UnavailableBackend
from phase.sensors import (
    amd_energy,
    amdgpu,
    amdsmi_gpu,
    apple,
    intel_gpu,
    jetson,
    meter,
    nvml,
    rapl,
)
from phase.sensors.apple import AppleHost
from phase.sensors.base import Probe, Sensor
from phase.sensors.fs import REAL_FS, Fs
from phase.sensors.meter import MeterSpec, parse_meter_spec
from phase.sensors.pci import pci_key


@dataclass(frozen=True)
class Machine:
    """Where discovery looks: this machine (the defaults) or a replayed snapshot
    (phase.sensors.replay), whose sensors are `synthetic`: never recorded as measurements."""

    fs: Fs = REAL_FS
    nvml: Any | None = None  # a stand-in for the pynvml module; None imports pynvml
    apple: AppleHost | None = None
    synthetic: bool = False
    # A stand-in for the amdsmi module; None imports it, where amdgpu finds an AMD GPU. A
    # replay never reads amdsmi (a snapshot records sysfs and NVML, not ROCm's library).
    amdsmi: Any | None = None


@dataclass
class Discovery:
    sensors: list[Sensor] = field(default_factory=list)
    unavailable: list[UnavailableBackend] = field(default_factory=list)
    # Facts about sensors that were found (MIG mode, a meter's inferred time unit...).
    notes: list[str] = field(default_factory=list)

    def close(self) -> None:
        for sensor in self.sensors:
            sensor.close()


def discover(
    rapl_root: Path | str = rapl.DEFAULT_ROOT,
    hwmon_root: Path | str = jetson.DEFAULT_ROOT,
    meters: Sequence[MeterSpec | str] = (),
    *,
    iio_root: Path | str = jetson.DEFAULT_IIO_ROOT,
    nvml_enabled: bool = True,
    apple_enabled: bool = True,
    machine: Machine | None = None,
) -> Discovery:
    """Probe every backend. A backend that finds nothing becomes an UnavailableBackend with
    its reason; one that finds some sensors but not others reports the rest the same way.
    Every sensor's `encloses` is declared once all are known."""
    machine = machine or Machine()
    specs = [parse_meter_spec(m) if isinstance(m, str) else m for m in meters]
    probes: list[Probe] = [rapl.probe(Path(rapl_root), machine.fs)]
    probes.append(nvml.probe(machine.nvml) if nvml_enabled
                  else Probe(nvml.BACKEND, problems=["disabled"]))
    probes.append(jetson.probe(Path(hwmon_root), Path(iio_root), machine.fs))
    probes.append(amd_energy.probe(Path(hwmon_root), machine.fs))
    probes.append(amdgpu.probe(Path(hwmon_root), machine.fs))
    probes.append(intel_gpu.probe(Path(hwmon_root), machine.fs))
    amd_parts = {pci_key(s.pci_bus_id): s.part for s in probes[-2].sensors}
    if amd_parts and (machine.amdsmi is not None or not machine.synthetic):
        probes.append(amdsmi_gpu.probe(amd_parts, machine.amdsmi))
        # amdsmi's counter on an MI250X primary die covers both dies, as hwmon's figure does
        siblings = {pci_key(s.pci_bus_id): getattr(s, "sibling_slots", ())
                    for s in probes[-3].sensors}
        for s in probes[-1].sensors:
            s.sibling_slots = siblings.get(pci_key(s.pci_bus_id), ())  # type: ignore[attr-defined]
    probes.append(apple.probe(machine.apple) if apple_enabled
                  else Probe(apple.BACKEND, problems=["disabled"]))
    if specs:
        probes.append(meter.probe(specs))
    found = Discovery()
    for p in probes:
        found.sensors.extend(p.sensors)
        found.notes.extend(p.notes)
        found.unavailable.extend(UnavailableBackend(backend=p.backend, reason=r)
                                 for r in p.problems)
    names = [s.name for s in found.sensors]
    if len(set(names)) != len(names):
        found.close()
        raise PhaseError(f"two sensors share a name: {names} (two meter files with one stem?)")
    meter.declare_enclosures(found.sensors)
    for s in found.sensors:
        if s.encloses is None:
            s.encloses = []
        if machine.synthetic:
            s.synthetic = True
    return found


def assert_publishable(sensors: Iterable[Sensor]) -> None:
    """Refuse sensors that are test fixtures or replays: they must never reach a results
    file as measurements."""
    fake = [s.name for s in sensors if s.synthetic]
    if fake:
        raise PhaseError(
            f"refusing to record synthetic sensor(s) {', '.join(fake)} as measurements: "
            "they exist for tests and replays only"
        )
