"""NVIDIA GPUs through NVML (the nvidia-ml-py binding, module `pynvml`).

Per GPU, up to three sensors:
- `nvml:<i>:energy` — nvmlDeviceGetTotalEnergyConsumption, mJ since the driver loaded
  (Volta and newer), a counter at chip scope; 64-bit, so it does not wrap in practice.
- `nvml:<i>:power` — nvmlDeviceGetPowerUsage, mW. Recent GPUs report a ~1 s average, so it
  is declared with a 1.0 s smoothing time constant (a lagged reading).
- `nvml:<i>:power-instant` — the NVML_FI_DEV_POWER_INSTANT field, where the binding and
  the driver have it. NVML documents it only as "instantaneous"; we declare no smoothing.

The physical bound is the GPU's largest settable power limit plus 25% for transients
(NVML caps average power at the limit; short peaks can exceed it).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from phase.sensors.base import Probe, ReadError, Sensor

BACKEND = "nvml"
POWER_SMOOTHING_S = 1.0
_TRANSIENT_HEADROOM = 1.25


class _Session:
    """One nvmlInit for all of this process's NVML sensors; shut down when the last closes."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        self.users = 0
        self.lock = threading.Lock()

    def acquire(self) -> None:
        with self.lock:
            self.users += 1

    def release(self) -> None:
        with self.lock:
            self.users -= 1
            if self.users == 0:
                with contextlib.suppress(self.nvml.NVMLError):
                    self.nvml.nvmlShutdown()


class _NvmlSensor(Sensor):
    backend = BACKEND

    def __init__(self, session: _Session, handle: Any, name: str, **kw: Any) -> None:
        super().__init__(name, scope="chip", **kw)
        self.session = session
        self.nvml = session.nvml
        self.handle = handle
        session.acquire()
        self._open = True

    def close(self) -> None:
        if self._open:
            self._open = False
            self.session.release()


class NvmlEnergy(_NvmlSensor):
    def __init__(self, session: _Session, handle: Any, index: int, max_power_w: float | None):
        super().__init__(session, handle, f"nvml:{index}:energy", kind="counter",
                         smoothing_s=0.0, max_power_w=max_power_w)

    def read_value(self) -> float:
        try:
            return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) * 1e-3
        except self.nvml.NVMLError as exc:
            raise ReadError(f"{self.name}: {exc}") from None


class NvmlPower(_NvmlSensor):
    def __init__(self, session: _Session, handle: Any, index: int, max_power_w: float | None):
        super().__init__(session, handle, f"nvml:{index}:power", kind="power",
                         smoothing_s=POWER_SMOOTHING_S, max_power_w=max_power_w)

    def read_value(self) -> float:
        try:
            return self.nvml.nvmlDeviceGetPowerUsage(self.handle) * 1e-3
        except self.nvml.NVMLError as exc:
            raise ReadError(f"{self.name}: {exc}") from None


class NvmlInstantPower(_NvmlSensor):
    def __init__(self, session: _Session, handle: Any, index: int, max_power_w: float | None,
                 field_id: int) -> None:
        super().__init__(session, handle, f"nvml:{index}:power-instant", kind="power",
                         smoothing_s=0.0, max_power_w=max_power_w)
        self.field_id = field_id

    def read_value(self) -> float:
        try:
            value = self.nvml.nvmlDeviceGetFieldValues(self.handle, [self.field_id])[0]
        except self.nvml.NVMLError as exc:
            raise ReadError(f"{self.name}: {exc}") from None
        if value.nvmlReturn != self.nvml.NVML_SUCCESS:
            raise ReadError(f"{self.name}: NVML field read returned {value.nvmlReturn}")
        return value.value.uiVal * 1e-3  # mW


def _max_power_w(nvml: Any, handle: Any) -> float | None:
    try:
        _, max_limit_mw = nvml.nvmlDeviceGetPowerManagementLimitConstraints(handle)
    except nvml.NVMLError:
        return None
    return max_limit_mw * 1e-3 * _TRANSIENT_HEADROOM if max_limit_mw else None


def _instant_field_works(nvml: Any, handle: Any, field_id: int) -> bool:
    try:
        value = nvml.nvmlDeviceGetFieldValues(handle, [field_id])[0]
    except nvml.NVMLError:
        return False
    return bool(value.nvmlReturn == nvml.NVML_SUCCESS)


def _init() -> tuple[Any, str | None]:
    """The one place phase opens NVML: (the pynvml module, None) after nvmlInit, or (None,
    why not). Every successful call needs one nvmlShutdown (NVML counts them)."""
    try:
        import pynvml as nvml
    except ImportError:
        return None, "nvidia-ml-py is not installed: `pip install nvidia-ml-py`"
    try:
        nvml.nvmlInit()
    except nvml.NVMLError_LibraryNotFound:
        return None, (
            "no NVIDIA driver here (libnvidia-ml.so.1 not found): no NVIDIA GPU, or the driver "
            "is not installed or not visible in this container"
        )
    except nvml.NVMLError as exc:
        return None, f"NVML did not start: {exc} (is the NVIDIA driver loaded?)"
    return nvml, None


def gpu_names() -> list[str]:
    """GPU names, for provenance; an empty list where NVML cannot start (no NVIDIA GPU)."""
    nvml, _ = _init()
    if nvml is None:
        return []
    try:
        names = []
        for i in range(nvml.nvmlDeviceGetCount()):
            name = nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(i))
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        return names
    except nvml.NVMLError:
        return []
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def gpu_driver_version() -> str | None:
    """The NVIDIA driver version, for a host's identity; None where NVML cannot start."""
    nvml, _ = _init()
    if nvml is None:
        return None
    try:
        version = nvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except nvml.NVMLError:
        return None
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def probe() -> Probe:
    found = Probe(BACKEND)
    nvml, problem = _init()
    if nvml is None:
        found.problems.append(problem or "NVML did not start")
        return found
    session = _Session(nvml)
    session.acquire()  # held until probing ends, so a GPU with no sensors cannot shut NVML
    try:
        count = nvml.nvmlDeviceGetCount()
        if count == 0:
            found.problems.append("the NVIDIA driver is loaded but reports no GPU")
        for index in range(count):
            _probe_gpu(nvml, session, index, found)
    except nvml.NVMLError as exc:
        found.problems.append(f"NVML failed while listing GPUs: {exc}")
    finally:
        session.release()
    return found


def _probe_gpu(nvml: Any, session: _Session, index: int, found: Probe) -> None:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    try:
        label = f"GPU {index} ({nvml.nvmlDeviceGetName(handle)})"
    except nvml.NVMLError:
        label = f"GPU {index}"
    bound = _max_power_w(nvml, handle)
    sensors: list[Sensor] = []
    try:
        nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        sensors.append(NvmlEnergy(session, handle, index, bound))
    except nvml.NVMLError as exc:
        found.problems.append(f"{label}: no total-energy counter ({exc}; it needs Volta or newer)")
    try:
        nvml.nvmlDeviceGetPowerUsage(handle)
        sensors.append(NvmlPower(session, handle, index, bound))
    except nvml.NVMLError as exc:
        found.problems.append(f"{label}: no power reading ({exc})")
    field_id = getattr(nvml, "NVML_FI_DEV_POWER_INSTANT", None)
    if field_id is not None and _instant_field_works(nvml, handle, field_id):
        sensors.append(NvmlInstantPower(session, handle, index, bound, field_id))
    found.sensors.extend(sensors)
