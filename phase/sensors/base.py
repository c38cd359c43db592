"""The one small interface every energy backend implements.

A sensor is either a *counter* (joules since some origin; it may wrap at `wrap_j`) or a
*power* reading (watts, possibly smoothed by the hardware over `smoothing_s`). Reads return
floats in J or W, stamped on one process-wide clock (`now()`: unix seconds that never jump,
because they are a fixed offset from the monotonic clock).
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from phase.errors import PhaseError
from phase.results import Scope, SensorKind
from phase.sensors.energy import Series

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


class Sensor(ABC):
    """A named energy or power source with a declared scope, kind and smoothing."""

    backend: ClassVar[str] = "?"
    # True only for test fixtures; assert_publishable() refuses to publish such a sensor.
    synthetic: ClassVar[bool] = False

    def __init__(
        self,
        name: str,
        *,
        scope: Scope,
        kind: SensorKind,
        smoothing_s: float,
        max_power_w: float | None,
        wrap_j: float | None = None,
    ) -> None:
        self.name = name
        self.scope: Scope = scope
        self.kind: SensorKind = kind
        self.smoothing_s = smoothing_s
        self.max_power_w = max_power_w
        # A counter that wraps returns to 0 after reaching wrap_j; None means it never wraps.
        self.wrap_j = wrap_j

    @property
    def unit(self) -> str:
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

    @property
    def available(self) -> bool:
        return bool(self.sensors)


class SysfsFile:
    """A pre-opened sysfs attribute, re-read with pread(offset 0): no open/close per sample."""

    __slots__ = ("fd", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def read_int(self) -> int:
        if self.fd is None:
            raise ReadError(f"{self.path}: file already closed")
        try:
            data = os.pread(self.fd, 64, 0)
        except OSError as exc:
            raise ReadError(f"{self.path}: {exc.strerror or exc}", errno=exc.errno) from None
        try:
            return int(data)
        except ValueError:
            raise ReadError(f"{self.path}: not an integer: {data[:32]!r}") from None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def read_text(path: Path) -> str | None:
    """A small sysfs text attribute, stripped; None when it is missing or unreadable."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def read_number(path: Path) -> int | None:
    text = read_text(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
