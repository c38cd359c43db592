"""`phase sensors --snapshot FILE`: what phase reads to discover sensors, in one JSON file.

A user attaches it to a bug report; `phase sensors --replay FILE` (phase.sensors.replay.replay)
runs discovery and a sampled window against it, and tests use snapshots as fixtures. It
holds, with no host name and nothing that is not about power:

* `fs`: every sysfs path discovery looked at (powercap, hwmon, IIO): directory listings, each
  file's text as the kernel gave it (a replay parses it with the live parser) or the error
  reading it (`EACCES` ...) and its mode, and for the counters and rails a second of reads at
  ~1 kHz (only the changes, with their times; `counter` where discovery read it as one);
* `nvml`: per GPU, each fact phase asks NVML (name, UUID, PCI bus id, architecture, compute
  capability, MIG mode and MIG instance UUIDs, power limits) as a value or an NVML error
  code, and a second of energy-counter and power reads; an error on one GPU is recorded and
  the others still read;
* `cuda`: CUDA's own device list (number, PCI bus id, name;
  phase.sensors.nvidia.cuda_devices), which settles CUDA's numbering against NVML's in a replay;
* `apple`: the platform, whether zeus-apple-silicon opened IOReport and its cumulative reads
  over a few seconds, or powermetrics' raw output (its plists as printed, with arrival times)
  and the readings phase parsed from it;
* `build` and `env`: the llama.cpp build's accelerator and the variables that hide or order
  GPUs (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, HIP_/ROCR_VISIBLE_DEVICES,
  GGML_VK_VISIBLE_DEVICES, ONEAPI_DEVICE_SELECTOR), which the primary-energy choice needs.

The hwmon part covers the GPU drivers too: each amdgpu/i915/xe hwmon directory's files, its
`device/uevent` (the card's PCI bus id) and a second of its power or energy reads. amdsmi
(ROCm's library) is not recorded: a replay reads AMD GPUs through hwmon only.

docs/snapshots.md describes the format and its versions.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno as errno_names
import os
import platform
import stat
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from phase import __version__
from phase.sensors.amd import amdgpu
from phase.sensors.apple import apple
from phase.sensors.apple.apple import AppleHost
from phase.sensors.core.base import ReadError
from phase.sensors.core.fs import REAL_FS, SysfsFile, ValueFile
from phase.sensors.cpu import amd_energy, rapl
from phase.sensors.intel import intel_gpu
from phase.sensors.jetson import jetson
from phase.sensors.nvidia import cuda_devices, nvml

FORMAT = "phase-sensors-snapshot"
VERSION = 2
# Powermetrics output kept: enough plists for a replay to loop over, never a runaway file.
_MAX_RAW_CHUNKS = 200
ENV_KEYS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "HIP_VISIBLE_DEVICES",
            "ROCR_VISIBLE_DEVICES", "GGML_VK_VISIBLE_DEVICES", "ONEAPI_DEVICE_SELECTOR")


def _errname(exc: OSError) -> str:
    return errno_names.errorcode.get(exc.errno or 0, str(exc.errno))


def _mode(path: Path) -> str | None:
    try:
        return f"{stat.S_IMODE(os.stat(path).st_mode):04o}"
    except OSError:
        return None


class RecordingFs:
    """The real filesystem, remembering every answer it gave."""

    def __init__(self) -> None:
        self.kinds: dict[str, str] = {}  # path -> dir | file | missing
        self.dirs: dict[str, list[str]] = {}
        self.files: dict[str, dict[str, Any]] = {}
        self.opened: dict[str, ValueFile] = {}

    def _kind(self, path: Path) -> str:
        kind = "dir" if path.is_dir() else "file" if path.exists() else "missing"
        self.kinds[str(path)] = kind
        return kind

    def is_dir(self, path: Path) -> bool:
        return self._kind(path) == "dir"

    def exists(self, path: Path) -> bool:
        return self._kind(path) != "missing"

    def listdir(self, path: Path) -> list[str]:
        names = REAL_FS.listdir(path)
        self.dirs[str(path)] = names
        return names

    def read_text(self, path: Path) -> str | None:
        entry: dict[str, Any] = {"mode": _mode(path)}
        try:
            entry["text"] = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError as exc:
            entry["error"] = _errname(exc)
        self.files[str(path)] = entry
        return entry.get("text")

    def open_value(self, path: Path) -> ValueFile:
        entry: dict[str, Any] = {"mode": _mode(path)}
        self.files[str(path)] = entry
        try:
            handle = SysfsFile(path)
        except OSError as exc:
            entry["error"] = _errname(exc)
            raise
        try:
            data = handle.read_bytes()
        except ReadError as exc:
            entry["read_error"] = str(exc)
        else:
            # The text as read, not the number: a replay parses it as a live read would
            # (a file a live read cannot parse stays one a replay cannot).
            entry["text"] = data.decode("utf-8", errors="replace")
        self.opened[str(path)] = handle
        return handle


def _changes(read: Callable[[], Any], seconds: float, hz: float = 1000.0) -> dict[str, Any]:
    """Poll `read` for `seconds`: the first value, then each change, with times (s) from the
    first read; the first error ends the recording."""
    return _changes_together({"": read}, seconds, hz)[""]


def _changes_together(reads: Mapping[str, Callable[[], Any]], seconds: float,
                      hz: float = 1000.0) -> dict[str, dict[str, Any]]:
    """`_changes` of each read, all polled in one loop over the same `seconds` (one after
    another, a machine's dozens of sysfs files took that many seconds)."""
    out: dict[str, list[list[Any]]] = {key: [] for key in reads}
    errors: dict[str, dict[str, Any]] = {}
    last: dict[str, Any] = {key: object() for key in reads}
    start = time.monotonic()
    while (now := time.monotonic()) - start < seconds and len(errors) < len(reads):
        for key, read in reads.items():
            if key in errors:
                continue
            try:
                value = read()
            except Exception as exc:
                errors[key] = {"changes": out[key], "error": str(exc),
                               "code": getattr(exc, "value", None)}
                continue
            if value != last[key]:
                out[key].append([round(now - start, 6), value])
                last[key] = value
        time.sleep(1.0 / hz)
    end = round(time.monotonic() - start, 6)
    for key, changes in out.items():
        if changes and key not in errors:
            changes.append([end, last[key]])  # the span that was watched
    return {key: errors.get(key, {"changes": out[key]}) for key in reads}


def _record_fs(roots: Mapping[str, Path], seconds: float) -> dict[str, Any]:
    fs = RecordingFs()
    found = [rapl.probe(roots["rapl"], fs), jetson.probe(roots["hwmon"], roots["iio"], fs),
             amd_energy.probe(roots["hwmon"], fs), amdgpu.probe(roots["hwmon"], fs),
             intel_gpu.probe(roots["hwmon"], fs)]
    # A file discovery read as a counter plays back as one (counting on, wrapping at its
    # range), whatever its name.
    counters = {str(getattr(getattr(s, "file", None), "path", "")) for p in found
                for s in p.sensors if s.kind == "counter"}
    readable = {path: handle.read_int for path, handle in fs.opened.items()
                if "error" not in fs.files.get(path, {}) and "read_error" not in fs.files[path]}
    series = _changes_together(readable, seconds)
    for path in series.keys() & counters:
        series[path]["counter"] = True
    for probe in found:
        for sensor in probe.sensors:
            sensor.close()
    for handle in fs.opened.values():
        handle.close()
    return {"kinds": fs.kinds, "dirs": fs.dirs, "files": fs.files, "series": series}


def _nvml_value(lib: Any, fn: str, *args: Any) -> dict[str, Any]:
    try:
        value = getattr(lib, fn)(*args)
    except AttributeError:
        return {"error": "the binding has no " + fn}
    except lib.NVMLError as exc:
        return {"code": getattr(exc, "value", None), "error": str(exc)}
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    if hasattr(value, "busId"):
        value = value.busId.decode() if isinstance(value.busId, bytes) else str(value.busId)
    if isinstance(value, tuple):
        value = list(value)
    return {"value": value}


def _record_gpu(lib: Any, index: int, seconds: float) -> dict[str, Any]:
    gpu: dict[str, Any] = {"index": index}
    try:
        handle = lib.nvmlDeviceGetHandleByIndex(index)
    except lib.NVMLError as exc:
        gpu["handle"] = {"code": getattr(exc, "value", None), "error": str(exc)}
        return gpu
    for key, fn in (("name", "nvmlDeviceGetName"), ("uuid", "nvmlDeviceGetUUID"),
                    ("pci_bus_id", "nvmlDeviceGetPciInfo"),
                    ("architecture", "nvmlDeviceGetArchitecture"),
                    ("cuda_cc", "nvmlDeviceGetCudaComputeCapability"),
                    ("mig_mode", "nvmlDeviceGetMigMode"),
                    ("power_limit_constraints_mw", "nvmlDeviceGetPowerManagementLimitConstraints"),
                    ("enforced_power_limit_mw", "nvmlDeviceGetEnforcedPowerLimit")):
        gpu[key] = _nvml_value(lib, fn, handle)
    util = _nvml_value(lib, "nvmlDeviceGetUtilizationRates", handle)
    gpu["mig_devices"] = _record_mig(lib, handle)
    gpu["c2c_mode"] = _record_c2c(lib, handle)
    gpu["utilization_pct"] = ({"value": int(util["value"].gpu)} if "value" in util else util)
    procs = _nvml_value(lib, "nvmlDeviceGetComputeRunningProcesses", handle)
    gpu["compute_pids"] = ({"value": [int(p.pid) for p in procs["value"]]} if "value" in procs
                           else procs)
    gpu["energy_mj"] = _changes(lambda: int(lib.nvmlDeviceGetTotalEnergyConsumption(handle)),
                                seconds)
    gpu["power_mw"] = _changes(lambda: int(lib.nvmlDeviceGetPowerUsage(handle)), seconds, 200)
    field_id = getattr(lib, "NVML_FI_DEV_POWER_INSTANT", None)

    def instant() -> int:
        value = lib.nvmlDeviceGetFieldValues(handle, [field_id])[0]
        if value.nvmlReturn != lib.NVML_SUCCESS:
            raise lib.NVMLError(value.nvmlReturn)
        return int(value.value.uiVal)

    gpu["power_instant_mw"] = (_changes(instant, seconds, 200) if field_id is not None
                               else {"changes": [], "error": "no such field in the binding"})
    return gpu


def _record_c2c(lib: Any, handle: Any) -> dict[str, Any]:
    """Whether NVLink-C2C joins the GPU to a Grace CPU (its energy counter is the module's)."""
    c2c = _nvml_value(lib, "nvmlDeviceGetC2cModeInfoV", handle)
    if "value" not in c2c:
        return c2c
    enabled = getattr(c2c["value"], "isC2cEnabled", None)
    return {"value": int(enabled)} if enabled is not None else {"error": "no isC2cEnabled"}


def _record_mig(lib: Any, handle: Any) -> dict[str, Any]:
    """The UUIDs of the GPU's MIG instances (nvml.mig_uuids reads them so), or why not."""
    slots = _nvml_value(lib, "nvmlDeviceGetMaxMigDeviceCount", handle)
    if "value" not in slots:
        return slots
    uuids = []
    for slot in range(int(slots["value"])):
        try:
            instance = lib.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except (lib.NVMLError, AttributeError):
            continue  # an empty slot (NVML_ERROR_NOT_FOUND), as nvml.mig_uuids skips it
        uuid = _nvml_value(lib, "nvmlDeviceGetUUID", instance)
        if "value" in uuid:
            uuids.append(uuid["value"])
    return {"value": uuids}


def _record_nvml(module: Any | None, seconds: float) -> dict[str, Any]:
    lib, problem = nvml.load(module)
    if lib is None:
        return {"init_error": problem}
    try:
        out: dict[str, Any] = {"driver_version": _nvml_value(lib, "nvmlSystemGetDriverVersion")}
        try:
            count = lib.nvmlDeviceGetCount()
        except lib.NVMLError as exc:
            return {**out, "count_error": str(exc)}
        out["gpus"] = [_record_gpu(lib, i, seconds) for i in range(count)]
        return out
    finally:
        with contextlib.suppress(lib.NVMLError):
            lib.nvmlShutdown()


def _record_apple(host: AppleHost, seconds: float) -> dict[str, Any]:
    out: dict[str, Any] = {"system": host.system, "machine": host.machine,
                           "powermetrics_path": host.powermetrics_path, "euid": host.euid}
    if host.system != "Darwin":
        return out
    try:
        monitor = host.zeus()
    except ImportError:
        out["zeus"] = {"installed": False}
    except Exception as exc:
        out["zeus"] = {"installed": True, "error": str(exc)}
    else:
        fields = ("cpu_total_mj", "gpu_mj", "gpu_sram_mj", "ane_mj", "dram_mj")

        def sample() -> dict[str, Any]:
            e = monitor.get_cumulative_energy()
            return {f: getattr(e, f, None) for f in fields}

        # IOReport may publish only every ~2 s: watch long enough to see a few batches.
        out["zeus"] = {"installed": True, **_changes(sample, max(seconds, 5.0), 200)}
        return out
    if host.powermetrics_path and host.euid == 0:
        out["powermetrics"] = _record_powermetrics(host, seconds)
    return out


def _record_powermetrics(host: AppleHost, seconds: float) -> dict[str, Any]:
    """powermetrics' output as it printed it (chunks with their arrival times, ending at a
    plist's end where it can) and the readings phase's parser took from it."""
    raw: list[list[Any]] = []
    start = time.monotonic()
    deadline = start + max(seconds, host.record_s)

    def recording(interval_s: float) -> tuple[apple.Source, Any]:
        source, stop = host.start_powermetrics(interval_s)

        def chunks() -> apple.Source:
            for chunk in source:
                whole = bool(raw) and raw[-1][1].endswith("\0")
                if len(raw) < _MAX_RAW_CHUNKS and (time.monotonic() < deadline or not whole):
                    raw.append([round(time.monotonic() - start, 6),
                                chunk.decode("utf-8", errors="replace")])
                yield chunk

        return chunks(), stop

    stream = apple.PowermetricsStream(dataclasses.replace(host, start_powermetrics=recording))
    docs: list[dict[str, Any]] = []
    seen: set[tuple[str, float]] = set()  # the keys of one plist share its time
    while time.monotonic() < deadline:
        for name, reading in list(stream.latest.items()):
            if (name, reading.t_unix_s) not in seen:
                seen.add((name, reading.t_unix_s))
                docs.append({"t_s": reading.t_unix_s, "key": name, "w": reading.value})
        time.sleep(stream.interval_s / 4)
    stream.release()
    out: dict[str, Any] = {"interval_s": stream.interval_s, "readings": docs, "raw": raw}
    if stream.error:
        out["error"] = stream.error
    return out


def take(roots: Mapping[str, Path], build: Mapping[str, Any], *, seconds: float = 1.0,
         env: Mapping[str, str] | None = None, nvml_module: Any | None = None,
         apple_host: AppleHost | None = None) -> dict[str, Any]:
    """Record this machine's sensor interfaces (blocks a few seconds: reads are timed)."""
    env = os.environ if env is None else env
    return {
        "format": FORMAT,
        "version": VERSION,
        "phase_version": __version__,
        "taken": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": {"system": platform.system(), "machine": platform.machine(),
                 "release": platform.release(), "cpu_model": _cpu_model(),
                 "device_tree_model": REAL_FS.read_text(Path("/proc/device-tree/model"))},
        "build": dict(build),
        "env": {k: env[k] for k in ENV_KEYS if k in env},
        "roots": {k: str(v) for k, v in roots.items()},
        "fs": _record_fs(roots, seconds),
        "nvml": _record_nvml(nvml_module, seconds),
        "cuda": cuda_devices.read(),
        "apple": _record_apple(apple_host or AppleHost(), seconds),
    }


def _cpu_model() -> str | None:
    text = REAL_FS.read_text(Path("/proc/cpuinfo")) or ""
    for line in text.splitlines():
        if line.startswith(("model name", "Model", "Hardware")):
            return line.split(":", 1)[1].strip()
    return platform.processor() or None


def default_roots() -> dict[str, Path]:
    return {"rapl": rapl.DEFAULT_ROOT, "hwmon": jetson.DEFAULT_ROOT,
            "iio": jetson.DEFAULT_IIO_ROOT}
