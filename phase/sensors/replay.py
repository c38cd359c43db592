"""`phase sensors --replay FILE`: discovery and a sampled window against a snapshot.

The recorded answers stand in for the machine: `ReplayFs` for sysfs, `ReplayNvml` for the
pynvml module (its errors are pynvml's own exception classes, built from the recorded NVML
codes), and an `AppleHost` whose zeus monitor and powermetrics stream replay their reads.
Recorded reads play back on this process's clock; past their end a counter keeps updating
at its recorded period and mean rate and a power reading repeats its recorded values, so a
sampled window of any length sees realistic update periods and edges.

Every sensor of a replay is synthetic: it can never be recorded as a measurement.
"""

from __future__ import annotations

import errno as errno_names
import itertools
import plistlib
import statistics
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from phase.errors import PhaseError
from phase.results import ResultsError
from phase.results.jsonread import read_json
from phase.sensors import snapshot_schema
from phase.sensors.apple import AppleHost
from phase.sensors.base import ReadError
from phase.sensors.discovery import Machine
from phase.sensors.snapshot import FORMAT, VERSION


class SnapshotError(PhaseError):
    exit_code = 2


class Playback:
    """A recorded series of (t, value) changes, played back from `origin` (monotonic s)."""

    def __init__(self, changes: Sequence[Sequence[Any]], counter: bool, origin: float,
                 error: str | None = None) -> None:
        self.t = [float(c[0]) for c in changes]
        self.v = [c[1] for c in changes]
        self.counter = counter
        self.origin = origin
        self.error = error
        changed = [self.t[k] for k in range(1, len(self.t)) if self.v[k] != self.v[k - 1]]
        steps = [b - a for a, b in itertools.pairwise(changed)]
        self.period = statistics.median(steps) if steps else 1.0

    def value(self) -> Any:
        if not self.t:
            raise ReadError(self.error or "nothing was recorded")
        x = time.monotonic() - self.origin + self.t[0]
        last_t, last_v = self.t[-1], self.v[-1]
        if x <= last_t or len(self.t) < 2:
            k = max(i for i, t in enumerate(self.t) if t <= max(x, self.t[0]))
            return self.v[k]
        if self.counter and isinstance(last_v, int | float):
            span = last_t - self.t[0]
            rate = (last_v - self.v[0]) / span if span > 0 else 0.0
            ticks = int((x - last_t) / self.period)
            value = last_v + rate * ticks * self.period
            return int(value) if isinstance(last_v, int) else value
        span = last_t - self.t[0]  # a level: repeat the recording
        x = self.t[0] + (x - self.t[0]) % span if span > 0 else self.t[0]
        k = max(i for i, t in enumerate(self.t) if t <= x)
        return self.v[k]


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
            return int(self.playback.value())
        try:
            return int(self.text or "")
        except ValueError:
            raise ReadError(f"{self.path}: not an integer: {self.text!r}") from None

    def close(self) -> None:
        pass


def _is_counter(path: str) -> bool:
    """Energy files (RAPL energy_uj, hwmon energyN_input) keep counting past the recording;
    power, current and voltage files repeat it."""
    name = path.rsplit("/", 1)[-1]
    return name == "energy_uj" or (name.startswith("energy") and name.endswith("_input"))


class ReplayFs:
    """Answers exactly what the snapshot recorded; anything else does not exist."""

    def __init__(self, fs: dict[str, Any], origin: float) -> None:
        self.kinds: dict[str, str] = fs.get("kinds", {})
        self.dirs: dict[str, list[str]] = fs.get("dirs", {})
        self.files: dict[str, dict[str, Any]] = fs.get("files", {})
        self.series = {p: Playback(s.get("changes", []), _is_counter(p), origin,
                                   s.get("error")) for p, s in fs.get("series", {}).items()}

    def is_dir(self, path: Path) -> bool:
        return self.kinds.get(str(path)) == "dir" or str(path) in self.dirs

    def exists(self, path: Path) -> bool:
        return self.kinds.get(str(path), "missing") != "missing" or str(path) in self.files

    def listdir(self, path: Path) -> list[str]:
        return list(self.dirs.get(str(path), []))

    def read_text(self, path: Path) -> str | None:
        entry = self.files.get(str(path))
        return None if entry is None or "error" in entry else entry.get("text")

    def open_value(self, path: Path) -> _ReplayFile:
        entry = self.files.get(str(path))
        if entry is None:
            raise FileNotFoundError(errno_names.ENOENT, "No such file or directory", str(path))
        if "error" in entry:
            code = getattr(errno_names, entry["error"], errno_names.EIO)
            raise OSError(code, f"{entry['error']} (recorded)", str(path))
        return _ReplayFile(path, self.series.get(str(path)), entry.get("text"),
                           entry.get("read_error"))


class ReplayNvml:
    """The part of the pynvml API phase uses, answering from the snapshot."""

    def __init__(self, nvml: dict[str, Any], origin: float) -> None:
        import pynvml

        self._lib = pynvml
        self.NVMLError = pynvml.NVMLError
        self.NVML_SUCCESS = pynvml.NVML_SUCCESS
        for name in dir(pynvml):
            if name.startswith(("NVML_ERROR_", "NVML_FI_", "NVML_DEVICE_")):
                setattr(self, name, getattr(pynvml, name))
        self.data = nvml
        self.gpus = nvml.get("gpus", [])
        self.origin = origin
        self.play: dict[tuple[int, str], Playback] = {}
        for gpu in self.gpus:
            for key in ("energy_mj", "power_mw", "power_instant_mw"):
                rec = gpu.get(key, {})
                self.play[(gpu["index"], key)] = Playback(rec.get("changes", []),
                                                          key == "energy_mj", origin,
                                                          rec.get("error"))

    def _raise(self, rec: dict[str, Any]) -> Any:
        code = rec.get("code")
        if isinstance(code, int):
            raise self.NVMLError(code)
        raise self.NVMLError(self._lib.NVML_ERROR_UNKNOWN)

    def nvmlInit(self) -> None:
        if self.data.get("init_error"):
            code = (self._lib.NVML_ERROR_LIBRARY_NOT_FOUND
                    if "not found" in self.data["init_error"] else self._lib.NVML_ERROR_UNKNOWN)
            raise self.NVMLError(code)

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        if "count_error" in self.data:
            raise self.NVMLError(self._lib.NVML_ERROR_UNKNOWN)
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        rec = self.gpus[index].get("handle")
        if rec is not None:
            self._raise(rec)
        return index

    def _fact(self, handle: int, key: str) -> Any:
        rec = self.gpus[handle].get(key, {"code": self._lib.NVML_ERROR_NOT_SUPPORTED})
        if "value" not in rec:
            self._raise(rec)
        return rec["value"]

    def nvmlDeviceGetName(self, h: int) -> str:
        return str(self._fact(h, "name"))

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return str(self._fact(h, "uuid"))

    def nvmlDeviceGetPciInfo(self, h: int) -> Any:
        return SimpleNamespace(busId=str(self._fact(h, "pci_bus_id")))

    def nvmlDeviceGetArchitecture(self, h: int) -> int:
        return int(self._fact(h, "architecture"))

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        major, minor = self._fact(h, "cuda_cc")
        return int(major), int(minor)

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:
        return list(self._fact(h, "mig_mode"))

    def nvmlDeviceGetPowerManagementLimitConstraints(self, h: int) -> list[int]:
        return list(self._fact(h, "power_limit_constraints_mw"))

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        rec = self.gpus[h].get("utilization_pct", {"value": 0})
        if "value" not in rec:
            self._raise(rec)
        return SimpleNamespace(gpu=int(rec["value"]), memory=0)

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        rec = self.gpus[h].get("compute_pids", {"value": []})
        if "value" not in rec:
            self._raise(rec)
        return [SimpleNamespace(pid=int(p), usedGpuMemory=None) for p in rec["value"]]

    def nvmlSystemGetDriverVersion(self) -> str:
        rec = self.data.get("driver_version", {})
        return str(rec.get("value", "unknown"))

    def _read(self, h: int, key: str) -> int:
        play = self.play[(h, key)]
        if not play.t:
            self._raise(self.gpus[h].get(key, {}))
        return int(play.value())

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        return self._read(h, "energy_mj")

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return self._read(h, "power_mw")

    def nvmlDeviceGetFieldValues(self, h: int, field_ids: list[int]) -> list[Any]:
        play = self.play[(h, "power_instant_mw")]
        if not play.t:
            code = self.gpus[h].get("power_instant_mw", {}).get("code")
            return [SimpleNamespace(nvmlReturn=code or self._lib.NVML_ERROR_NOT_SUPPORTED,
                                    value=SimpleNamespace(uiVal=0))]
        return [SimpleNamespace(nvmlReturn=self.NVML_SUCCESS,
                                value=SimpleNamespace(uiVal=int(play.value())))]


class _ReplayZeus:
    def __init__(self, play: Playback) -> None:
        self.play = play

    def get_cumulative_energy(self) -> Any:
        return SimpleNamespace(**self.play.value())


class _ZeusPlayback(Playback):
    """Each field of zeus's cumulative energy extrapolated like a counter."""

    def value(self) -> Any:
        fields = self.v[0].keys() if self.v else []
        out = {}
        for f in fields:
            single = Playback([[t, v[f]] for t, v in zip(self.t, self.v, strict=True)],
                              True, self.origin)
            out[f] = single.value() if self.v[0][f] is not None else None
        return out


_PM_KEYS = {"apple:package-power": "combined_power", "apple:cpu-power": "cpu_power",
            "apple:gpu-power": "gpu_power", "apple:ane-power": "ane_power"}


def _powermetrics_source(rec: dict[str, Any]) -> Any:
    """Plists rebuilt from the recorded readings, emitted at the recorded interval."""
    interval = float(rec.get("interval_s", 0.1))
    by_time: dict[float, dict[str, float]] = {}
    for r in rec.get("readings", []):
        by_time.setdefault(r["t_s"], {})[_PM_KEYS.get(r["key"], r["key"])] = r["w"] * 1e3
    samples = [by_time[t] for t in sorted(by_time)] or [{}]

    def start(_: float) -> tuple[Iterator[bytes], Any]:
        stopped = [False]

        def chunks() -> Iterator[bytes]:
            k = 0
            while not stopped[0]:
                time.sleep(interval)
                doc = {"elapsed_ns": int(interval * 1e9),
                       "timestamp": datetime.now(UTC).replace(tzinfo=None),
                       "processor": samples[k % len(samples)]}
                k += 1
                yield plistlib.dumps(doc) + b"\0"

        return chunks(), lambda: stopped.__setitem__(0, True)

    return start


def _apple_host(rec: dict[str, Any], origin: float) -> AppleHost:
    zeus = rec.get("zeus", {"installed": False})

    def open_zeus() -> Any:
        if not zeus.get("installed"):
            raise ImportError("zeus-apple-silicon was not installed on the recorded machine")
        if "error" in zeus and not zeus.get("changes"):
            raise RuntimeError(zeus["error"])
        return _ReplayZeus(_ZeusPlayback(zeus.get("changes", []), True, origin))

    return AppleHost(system=rec.get("system", "Linux"), machine=rec.get("machine", ""),
                     zeus=open_zeus, powermetrics_path=rec.get("powermetrics_path"),
                     euid=int(rec.get("euid", -1)),
                     start_powermetrics=_powermetrics_source(rec.get("powermetrics", {})))


def load(path: Path) -> dict[str, Any]:
    """Read a snapshot file; a bad one is a one-line error (exit 2)."""
    try:
        data = read_json(path)  # as results are read: a FIFO or device is refused, not read
    except ResultsError as exc:
        raise SnapshotError(f"{exc} (not a readable snapshot)") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SnapshotError(f"{path}: not a phase sensors snapshot (no \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise SnapshotError(f"{path}: snapshot version {data.get('version')!r}; this phase "
                            f"reads version {VERSION}")
    try:
        return snapshot_schema.check(data, path)  # every field's type before any is used
    except ResultsError as exc:
        raise SnapshotError(f"{exc} (not a snapshot phase wrote; take it again with "
                            "`phase sensors --snapshot FILE`)") from None


def machine(data: dict[str, Any]) -> tuple[Machine, dict[str, Path]]:
    """The replayed machine and the roots its discovery should use."""
    origin = time.monotonic()
    roots = {k: Path(v) for k, v in data.get("roots", {}).items()}
    replayed = Machine(fs=ReplayFs(data.get("fs", {}), origin),
                       nvml=ReplayNvml(data.get("nvml", {}), origin),
                       apple=_apple_host(data.get("apple", {}), origin), synthetic=True)
    return replayed, roots
