"""The one small interface every energy backend implements.

A sensor is either a *counter* (joules since some origin; it may wrap at `wrap_j`) or a
*power* reading (watts, possibly smoothed by the hardware over `smoothing_s`). Reads return
floats in J or W, stamped on one process-wide clock (`now()`: unix seconds that never jump,
because they are a fixed offset from the monotonic clock).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from phase.base.errors import PhaseError
from phase.results import Scope, SensorKind
from phase.sensors.core.energy import Series

# Unix time = monotonic time + this offset, fixed at import. Samples, window edges and meter
# timestamps all live on this scale, so an NTP step during a campaign cannot tear a window.
UNIX_OFFSET = time.time() - time.monotonic()


def now() -> float:
    """Seconds since the epoch, monotonic within this process."""
    return UNIX_OFFSET + time.monotonic()


class ReadError(PhaseError):
    """One read failed. The sampler records it as a gap, never as a zero."""

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


@dataclass(frozen=True, slots=True)
class Reading:
    t_unix_s: float  # on the process-wide clock of now()
    value: float  # J for a counter, W for a power sensor


# What a sensor measures (`Sensor.part`), which the primary-energy choice
# (phase.sensors.core.primary) reads. The backends use these names:
#   cpu-package   a RAPL package zone: one CPU socket
#   platform      RAPL psys: the whole platform as the SoC sees it
#   dram          a RAPL dram zone: memory, disjoint from the package
#   gpu           an NVIDIA GPU through NVML
#   compute-rail  a Jetson rail that feeds CPU and/or GPU cores
#   module-input  a Jetson module's input rail (the carrier board is outside it)
#   rail          any other Jetson rail (SoC, memory, IO)
#   apple-cpu, apple-gpu, apple-ane, apple-dram, apple-soc
#   meter         an external meter's trace


# What a backend measures, its scope among the families: CPU packages (RAPL, amd_energy), GPUs
# (NVML, amdgpu, amdsmi, i915/xe), a SoC's rails (Jetson, Apple) or the wall (an external meter).
Measures = Literal["package", "gpu", "soc", "wall"]


@dataclass(frozen=True)
class Declared:
    """What a backend declares about itself, as data: discovery orders backends by it.

    `backend` is the name results files record. `priority`: discovery probes and lists the
    backends highest first, and where two backends that measure the same scope both read one
    device (RAPL and amd_energy read a CPU's same MSRs) the primary-energy choice prefers the
    higher. `after` names backends whose findings the probe reads (amdsmi checks the GPUs
    amdgpu found), which are probed before it whatever their priority.
    """

    backend: str
    measures: Measures
    priority: int
    after: tuple[str, ...] = ()


class Sensor(ABC):
    """A named energy or power source with a declared scope, kind and smoothing.

    Besides what a results file records about it (`SensorInfo`), a sensor says which `part`
    of the machine it measures and, where it has one, the `device` identity (a GPU's UUID)
    and `pci_bus_id`: the primary-energy choice matches them to the device that ran the model.
    `assumed` lists the fields whose values were assumed rather than read; `encloses` is filled
    in by discovery once every sensor is known. `synthetic` sensors (test fixtures, replays of
    a snapshot) are refused by assert_publishable().
    """

    backend: ClassVar[str] = "?"
    # The priority its backend declares (Declared.priority); discovery sets it per sensor from
    # the registration it probed with.
    priority: int = 0
    synthetic: bool = False
    # True when read() returns the time the value applies to (a powermetrics plist's own
    # interval) rather than the time of the read; the sampler then keeps that time.
    self_stamped: ClassVar[bool] = False

    def __init__(
        self,
        name: str,
        *,
        scope: Scope,
        kind: SensorKind,
        smoothing_s: float,
        max_power_w: float | None,
        wrap_j: float | None = None,
        part: str = "meter",
        device: str | None = None,
        assumed: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.scope: Scope = scope
        self.kind: SensorKind = kind
        self.smoothing_s = smoothing_s
        self.max_power_w = max_power_w
        # A counter that wraps returns to 0 after reaching wrap_j; None means it never wraps.
        self.wrap_j = wrap_j
        self.part = part
        self.device = device
        self.pci_bus_id: str | None = None
        self.assumed = list(assumed)
        self.encloses: list[str] | None = None

    @property
    def unit(self) -> Literal["J", "W"]:
        return "J" if self.kind == "counter" else "W"

    @abstractmethod
    def read_value(self) -> float:
        """Read now: J (counter) or W (power). Raises ReadError on any failure."""

    def read(self) -> Reading:
        before = time.monotonic()
        value = self.read_value()
        after = time.monotonic()
        return Reading(UNIX_OFFSET + (before + after) / 2, value)

    def close(self) -> None:  # noqa: B027 - most sensors hold nothing to release
        """Release files or library handles."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self.scope} {self.kind}>"


class PostHocSensor(Sensor):
    """A sensor whose samples were recorded elsewhere (e.g. a meter's file) and are aligned
    to run windows by timestamp afterwards, instead of being read live by the sampler."""

    @abstractmethod
    def series(self) -> Series:
        """All samples recorded so far, on the unix time scale of now()."""


@dataclass
class Probe:
    """What one backend found: its sensors, and the problems that kept others away.

    A backend with no sensors is unavailable; `problems` then says why, in sentences a user
    can act on. A backend may also find some sensors and report problems with the rest.
    """

    backend: str
    sensors: list[Sensor] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Facts a user should know about sensors that were found (MIG mode, an inferred unit).
    notes: list[str] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return bool(self.sensors)
