"""`phase sensors --replay FILE`: discovery and a sampled window against a snapshot.

The recorded answers stand in for the machine: `ReplayFs` for sysfs, `ReplayNvml` for the
pynvml module (its errors are pynvml's own exception classes, built from the recorded NVML
codes), and an `AppleHost` whose zeus monitor and powermetrics stream replay their reads.
Recorded reads play back on the replay's clock (the real one unless a test drives it); past
their end a counter keeps updating at its recorded period and mean rate and a power reading
repeats its recorded values, so a sampled window of any length sees realistic update periods
and edges.

Every sensor of a replay is synthetic: it can never be recorded as a measurement.
"""

from __future__ import annotations

import errno as errno_names
from pathlib import Path
from typing import Any

from phase.base.errors import PhaseError
from phase.results import ResultsError
from phase.sensors.core.base import ReadError
from phase.sensors.core.clock import SYSTEM_CLOCK, Clock
from phase.sensors.core.cuda_map import GpuUse
from phase.sensors.core.fs import parse_int, read_number
from phase.sensors.discovery import Machine
from phase.sensors.replay import ranges, snapshot_schema
from phase.sensors.replay.playback import Playback
from phase.sensors.replay.replay_apple import apple_host
from phase.sensors.replay.replay_nvml import ReplayNvml
from phase.sensors.replay.snapshot import FORMAT, VERSION
from phase.storage.jsonread import read_json

READS = (1, VERSION)  # the snapshot versions this phase replays
# Where `load` keeps why recordings were made unreadable (phase.sensors.replay.ranges).
SCREENED = "screened"


class SnapshotError(PhaseError):
    exit_code = 2


class _ReplayFile:
    def __init__(self, path: Path, playback: Playback | None, text: str | None,
                 read_error: str | None) -> None:
        self.path = path
        self.playback = playback
        self.text = text
        self.read_error = read_error

    def read_int(self) -> int:
        if self.read_error:
            raise ReadError(self.read_error)
        if self.playback is not None:
            try:
                return int(self.playback.value())
            except ReadError as exc:
                raise ReadError(f"{self.path}: {exc}") from None
        return parse_int(self.path, (self.text or "").encode("utf-8"))

    def close(self) -> None:
        pass


def _is_counter(path: str, series: dict[str, Any]) -> bool:
    """A file discovery read as a counter (version 2 marks it), or one named as energy files
    are (RAPL energy_uj, hwmon energyN_input: version 1 has no mark) keeps counting past the
    recording; power, current and voltage files repeat it."""
    name = path.rsplit("/", 1)[-1]
    return bool(series.get("counter")) or name == "energy_uj" or (
        name.startswith("energy") and name.endswith("_input"))


class ReplayFs:
    """Answers exactly what the snapshot recorded; anything else does not exist."""

    def __init__(self, fs: dict[str, Any], origin: float, clock: Clock = SYSTEM_CLOCK) -> None:
        self.kinds: dict[str, str] = fs.get("kinds", {})
        self.dirs: dict[str, list[str]] = fs.get("dirs", {})
        self.files: dict[str, dict[str, Any]] = fs.get("files", {})
        self.series = {p: Playback(s.get("changes", []), _is_counter(p, s), origin,
                                   s.get("error"), self._wrap(p), clock=clock)
                       for p, s in fs.get("series", {}).items()}

    def _wrap(self, path: str) -> int | None:
        """Where a RAPL counter wraps: its zone's recorded max_energy_range_uj, read as the
        rapl backend reads it. Other counters record no range (64-bit: they do not wrap)."""
        if not path.endswith("/energy_uj"):
            return None
        return read_number(self, Path(path).parent / "max_energy_range_uj")

    def is_dir(self, path: Path) -> bool:
        return self.kinds.get(str(path)) == "dir" or str(path) in self.dirs

    def exists(self, path: Path) -> bool:
        return self.kinds.get(str(path), "missing") != "missing" or str(path) in self.files

    def listdir(self, path: Path) -> list[str]:
        return list(self.dirs.get(str(path), []))

    def read_text(self, path: Path) -> str | None:
        entry = self.files.get(str(path))
        if entry is None or "error" in entry or "text" not in entry:
            return None
        return str(entry["text"]).strip()  # as RealFs.read_text: a value file's text is raw

    def open_value(self, path: Path) -> _ReplayFile:
        entry = self.files.get(str(path))
        if entry is None:
            raise FileNotFoundError(errno_names.ENOENT, "No such file or directory", str(path))
        if "error" in entry:
            code = getattr(errno_names, entry["error"], errno_names.EIO)
            raise OSError(code, f"{entry['error']} (recorded)", str(path))
        return _ReplayFile(path, self.series.get(str(path)), entry.get("text"),
                           entry.get("read_error"))


def load(path: Path) -> dict[str, Any]:
    """Read a snapshot file; a bad one is a one-line error (exit 2)."""
    try:
        data = read_json(path)  # as results are read: a FIFO or device is refused, not read
    except ResultsError as exc:
        raise SnapshotError(f"{exc} (not a readable snapshot)") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SnapshotError(f"{path}: $.format: not a phase sensors snapshot (no \"format\": "
                            f"\"{FORMAT}\")")
    if data.get("version") not in READS:
        raise SnapshotError(f"{path}: $.version: snapshot version {data.get('version')!r}; "
                            f"this phase reads versions {', '.join(map(str, READS))} (a newer "
                            "phase took it: replay it with that phase)")
    try:
        checked = snapshot_schema.check(data, path)  # every field's type before any is used
    except ResultsError as exc:
        raise SnapshotError(f"{exc} (not a snapshot phase wrote; take it again with "
                            "`phase sensors --snapshot FILE`)") from None
    # Every raw number within what a machine can read; a recording outside it is unreadable.
    checked[SCREENED] = ranges.screen(checked)
    return checked


def machine(data: dict[str, Any], clock: Clock = SYSTEM_CLOCK
            ) -> tuple[Machine, dict[str, Path]]:
    """The replayed machine and the roots its discovery should use; its recordings play back
    on `clock` (a test's driven clock replays a window without waiting for it; powermetrics'
    stream keeps real time, as its reader is a thread of its own)."""
    origin = clock.monotonic()
    roots = {k: Path(v) for k, v in data.get("roots", {}).items()}
    replayed = Machine(fs=ReplayFs(data.get("fs", {}), origin, clock),
                       nvml=ReplayNvml(data.get("nvml", {}), origin, clock),
                       apple=apple_host(data.get("apple", {}), origin, clock), synthetic=True)
    return replayed, roots


def cuda_gpus(data: dict[str, Any]) -> tuple[GpuUse, ...]:
    """The GPUs CUDA listed on the recorded machine, each with its PCI bus id, as llama.cpp
    logs them: a model there would have used them all. Empty where nothing was recorded
    (version 1, no NVIDIA driver): the map then falls back on CUDA_VISIBLE_DEVICES."""
    return tuple(GpuUse(f"CUDA{d['index']}", d.get("name", ""), d.get("pci_bus_id"))
                 for d in data.get("cuda", {}).get("devices", []))
