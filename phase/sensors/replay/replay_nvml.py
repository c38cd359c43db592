"""The part of the pynvml API phase uses, answering from a snapshot's `nvml` section
(phase.sensors.replay.replay): its errors are pynvml's own exception classes, built from the
recorded NVML codes, and its energy and power reads play the recorded series back."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from phase.sensors.core.base import ReadError
from phase.sensors.core.clock import SYSTEM_CLOCK, Clock
from phase.sensors.replay.playback import Playback


@dataclass(frozen=True)
class _MigHandle:
    """A MIG instance of GPU `gpu`: all a replay knows of it is its UUID."""

    gpu: int
    uuid: str


class ReplayNvml:
    """The part of the pynvml API phase uses, answering from the snapshot."""

    def __init__(self, nvml: dict[str, Any], origin: float, clock: Clock = SYSTEM_CLOCK) -> None:
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
                                                          rec.get("error"), clock=clock)

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

    def nvmlDeviceGetUUID(self, h: int | _MigHandle) -> str:
        if isinstance(h, _MigHandle):
            return h.uuid
        return str(self._fact(h, "uuid"))

    def nvmlDeviceGetMaxMigDeviceCount(self, h: int) -> int:
        # Snapshots before version 2 did not list MIG instances: NVML "cannot say", so a
        # MIG UUID in CUDA_VISIBLE_DEVICES is refused as it was when they were taken.
        return len(self._fact(h, "mig_devices"))

    def nvmlDeviceGetMigDeviceHandleByIndex(self, h: int, slot: int) -> _MigHandle:
        uuids = self._fact(h, "mig_devices")
        if slot >= len(uuids):
            raise self.NVMLError(self._lib.NVML_ERROR_NOT_FOUND)
        return _MigHandle(h, str(uuids[slot]))

    def nvmlDeviceGetPciInfo(self, h: int) -> Any:
        return SimpleNamespace(busId=str(self._fact(h, "pci_bus_id")))

    def nvmlDeviceGetArchitecture(self, h: int) -> int:
        return int(self._fact(h, "architecture"))

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        major, minor = self._fact(h, "cuda_cc")
        return int(major), int(minor)

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:
        return list(self._fact(h, "mig_mode"))

    def nvmlDeviceGetC2cModeInfoV(self, h: int) -> Any:
        # Absent from snapshots taken before phase recorded it: NVML "cannot say", and the
        # GPU's name decides (phase.sensors.nvidia.nvml.Gpu.grace_module).
        return SimpleNamespace(isC2cEnabled=int(self._fact(h, "c2c_mode")))

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
        try:
            return int(play.value())
        except ReadError:  # nothing recorded, or the recording ended in this NVML error
            return int(self._raise(self.gpus[h].get(key, {})))

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        return self._read(h, "energy_mj")

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return self._read(h, "power_mw")

    def nvmlDeviceGetFieldValues(self, h: int, field_ids: list[int]) -> list[Any]:
        play = self.play[(h, "power_instant_mw")]
        try:
            value = int(play.value())
        except ReadError:  # nothing recorded, or the recording ended in this field error
            code = self.gpus[h].get("power_instant_mw", {}).get("code")
            return [SimpleNamespace(nvmlReturn=code or self._lib.NVML_ERROR_NOT_SUPPORTED,
                                    value=SimpleNamespace(uiVal=0))]
        return [SimpleNamespace(nvmlReturn=self.NVML_SUCCESS, value=SimpleNamespace(uiVal=value))]
