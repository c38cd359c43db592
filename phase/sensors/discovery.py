"""Find every sensor this machine offers, and say why each missing backend is missing."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phase.base.errors import PhaseError
from phase.results import UnavailableBackend
from phase.sensors.amd import amdgpu, amdsmi_gpu
from phase.sensors.apple import apple
from phase.sensors.apple.apple import AppleHost
from phase.sensors.core.base import Declared, Probe, Sensor
from phase.sensors.core.fs import REAL_FS, Fs
from phase.sensors.core.pci import pci_key
from phase.sensors.cpu import amd_energy, rapl
from phase.sensors.intel import intel_gpu
from phase.sensors.jetson import jetson
from phase.sensors.meter import meter
from phase.sensors.meter.meter import MeterSpec, parse_meter_spec
from phase.sensors.nvidia import nvml


@dataclass(frozen=True)
class Machine:
    """Where discovery looks: this machine (the defaults) or a replayed snapshot
    (phase.sensors.replay.replay), whose sensors are `synthetic`: never recorded as measurements."""

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


@dataclass(frozen=True)
class Where:
    """What every probe is given: the roots to look under, the machine, the meters named, the
    backends the user turned off, and what the backends probed before it found."""

    rapl_root: Path
    hwmon_root: Path
    iio_root: Path
    machine: Machine
    meters: tuple[MeterSpec, ...]
    found: dict[str, Probe]


@dataclass(frozen=True)
class Registered:
    """A backend as discovery knows it: its declaration, and how to probe it from a Where
    (None: nothing to probe here, and nothing to report either)."""

    declared: Declared
    probe: Callable[[Where], Probe | None]


def _amdsmi(where: Where) -> Probe | None:
    hwmon = where.found.get(amdgpu.BACKEND, Probe(amdgpu.BACKEND))
    amd_parts = {pci_key(s.pci_bus_id): s.part for s in hwmon.sensors}
    if not amd_parts or (where.machine.amdsmi is None and where.machine.synthetic):
        return None
    found = amdsmi_gpu.probe(amd_parts, where.machine.amdsmi)
    # amdsmi's counter on an MI250X primary die covers both dies, as hwmon's figure does
    siblings = {pci_key(s.pci_bus_id): getattr(s, "sibling_slots", ()) for s in hwmon.sensors}
    for s in found.sensors:
        s.sibling_slots = siblings.get(pci_key(s.pci_bus_id), ())  # type: ignore[attr-defined]
    return found


# Every backend phase has, in no particular order: discovery orders them by their declarations.
REGISTERED: frozenset[Registered] = frozenset({
    Registered(rapl.DECLARED, lambda w: rapl.probe(w.rapl_root, w.machine.fs)),
    Registered(amd_energy.DECLARED, lambda w: amd_energy.probe(w.hwmon_root, w.machine.fs)),
    Registered(nvml.DECLARED, lambda w: nvml.probe(w.machine.nvml)),
    Registered(amdgpu.DECLARED, lambda w: amdgpu.probe(w.hwmon_root, w.machine.fs)),
    Registered(amdsmi_gpu.DECLARED, _amdsmi),
    Registered(intel_gpu.DECLARED, lambda w: intel_gpu.probe(w.hwmon_root, w.machine.fs)),
    Registered(jetson.DECLARED,
               lambda w: jetson.probe(w.hwmon_root, w.iio_root, w.machine.fs)),
    Registered(apple.DECLARED, lambda w: apple.probe(w.machine.apple)),
    Registered(meter.DECLARED, lambda w: meter.probe(list(w.meters)) if w.meters else None),
})


def ordered(backends: Iterable[Registered]) -> list[Registered]:
    """Highest declared priority first (ties by name), each after the backends it declares it
    reads; how `backends` was listed plays no part."""
    pending = sorted(backends, key=lambda r: (-r.declared.priority, r.declared.backend))
    names = {r.declared.backend for r in pending}
    out: list[Registered] = []
    while pending:
        done = {r.declared.backend for r in out}
        ready = next((r for r in pending
                      if all(a in done or a not in names for a in r.declared.after)), None)
        if ready is None:
            raise PhaseError("sensor backends declare a cycle of `after`: "
                             f"{', '.join(r.declared.backend for r in pending)}")
        pending.remove(ready)
        out.append(ready)
    return out


def discover(
    rapl_root: Path | str = rapl.DEFAULT_ROOT,
    hwmon_root: Path | str = jetson.DEFAULT_ROOT,
    meters: Sequence[MeterSpec | str] = (),
    *,
    iio_root: Path | str = jetson.DEFAULT_IIO_ROOT,
    nvml_enabled: bool = True,
    apple_enabled: bool = True,
    machine: Machine | None = None,
    backends: Iterable[Registered] = REGISTERED,
) -> Discovery:
    """Probe every backend, in the order their declarations give. A backend that finds nothing
    becomes an UnavailableBackend with its reason; one that finds some sensors but not others
    reports the rest the same way. Every sensor's `encloses` is declared once all are known."""
    machine = machine or Machine()
    specs = tuple(parse_meter_spec(m) if isinstance(m, str) else m for m in meters)
    disabled = {nvml.BACKEND} if not nvml_enabled else set()
    disabled |= {apple.BACKEND} if not apple_enabled else set()
    where = Where(Path(rapl_root), Path(hwmon_root), Path(iio_root), machine, specs, {})
    found = Discovery()
    for backend in ordered(backends):
        name = backend.declared.backend
        p = (Probe(name, problems=["disabled"]) if name in disabled
             else backend.probe(where))
        if p is None:
            continue
        where.found[name] = p
        for s in p.sensors:
            s.priority = backend.declared.priority
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
