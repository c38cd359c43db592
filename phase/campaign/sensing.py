"""Which sensors a campaign reads: discovery from the command line's options, and the
adapter between a sampler window and the decode callbacks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from phase.base.errors import UsageProblem
from phase.results import PrimaryEnergy, SensorTrace, SensorWindow, UnavailableBackend
from phase.sensors import Discovery, Window, discover
from phase.sensors.core.primary import GpuUse, Placement, choose_primary, override_primary
from phase.sensors.cpu import rapl
from phase.sensors.jetson import jetson
from phase.sensors.meter import meter

if TYPE_CHECKING:  # a type only: the decode package loads llama.cpp, `phase sensors` need not
    from phase.decode import ModelPlacement


@dataclass(frozen=True)
class SensorOptions:
    """`use` False records no sensor at all (say so in the file); `meters` are FILE:SCOPE:TAU
    specs of external meter traces; the roots point discovery at other sysfs trees;
    `energy_sensors` overrides the automatic primary-energy choice (--energy-sensor)."""

    use: bool = True
    meters: tuple[str, ...] = ()
    rapl_root: str = str(rapl.DEFAULT_ROOT)
    hwmon_root: str = str(jetson.DEFAULT_ROOT)
    iio_root: str = str(jetson.DEFAULT_IIO_ROOT)
    energy_sensors: tuple[str, ...] = ()


def discover_sensors(options: SensorOptions) -> Discovery:
    """Every sensor the options allow. A meter the user named explicitly is not optional:
    one that cannot be read is bad input (exit 2) before anything is written."""
    if not options.use:
        if options.energy_sensors:
            raise UsageProblem("--energy-sensor names a sensor, but --no-sensor reads none")
        return Discovery(unavailable=[
            UnavailableBackend(backend="all", reason="sensors disabled with --no-sensor")
        ])
    found = discover(rapl_root=options.rapl_root, hwmon_root=options.hwmon_root,
                     iio_root=options.iio_root, meters=list(options.meters))
    problems = [u.reason for u in found.unavailable if u.backend == meter.BACKEND]
    if options.meters and problems:
        found.close()
        raise UsageProblem(f"--meter: {'; '.join(problems)}")
    known = {s.name for s in found.sensors}
    unknown = [n for n in options.energy_sensors if n not in known]
    if unknown:  # before any model loads
        found.close()
        raise UsageProblem(f"--energy-sensor: no sensor named {', '.join(unknown)} here; found: "
                           f"{', '.join(sorted(known)) or 'none'} (see `phase sensors`)")
    return found


def primary_energy(found: Discovery, engine_placement: ModelPlacement,
                   energy_sensors: Sequence[str] = ()) -> tuple[PrimaryEnergy | None, str | None]:
    """The primary energy sensors for where the engine put the model (or the override)."""
    placement = Placement(
        accelerator=engine_placement.accelerator,
        n_gpu_layers_offloaded=engine_placement.n_gpu_layers_offloaded,
        n_layers=engine_placement.n_layers,
        gpus=tuple(GpuUse(d.name, d.description, d.pci_bus_id)
                   for d in engine_placement.devices),
    )
    if energy_sensors:
        return override_primary(found.sensors, energy_sensors, placement), None
    choice, why = choose_primary(found.sensors, placement)
    if choice is None and found.unavailable:
        why = f"{why} ({'; '.join(f'{u.backend}: {u.reason}' for u in found.unavailable)})"
    return choice, why


class WindowCallbacks:
    """Adapts a sampler window (or its absence: no sensors) to the decode callbacks."""

    def __init__(self, window: Window | None) -> None:
        self.window = window
        self.stopped = False

    def start(self) -> None:
        if self.window is not None:
            self.window.start()

    def stop(self) -> None:
        """Close the window; a second call (the run's failure path after the decode's own
        end callback) does nothing."""
        if self.window is not None and not self.stopped:
            self.stopped = True
            self.window.stop()

    def outcome(self) -> tuple[list[SensorWindow], list[SensorTrace]]:
        if self.window is None:
            return [], []
        windows, traces = self.window.result()
        return list(windows), list(traces)
