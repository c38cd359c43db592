"""NVIDIA GPUs through NVML (the nvidia-ml-py binding, module `pynvml`).

Per GPU, up to three sensors, named by the GPU's UUID (`nvml:GPU-8f3c2a1b:...`, the first 8
hex digits; all of it in `SensorInfo.device`). NVML's index order need not match CUDA's and
may change across reboots; the UUID does not, so a resumed campaign cannot silently read
another GPU under the same name.

- `...:energy` — nvmlDeviceGetTotalEnergyConsumption, mJ since the driver loaded (Volta and
  newer): a counter at chip scope, 64-bit, so it does not wrap in practice. It updates every
  20-100 ms; the sampler measures how often and handles the window edges.
- `...:power` — nvmlDeviceGetPowerUsage, mW. NVML documents it as averaged over 1 s on
  Ampere (except GA100) and newer, and instantaneous on GA100 and older: the declared
  smoothing follows the architecture (GA100 = Ampere with compute capability 8.0) and is
  marked assumed, since NVML does not report it.
- `...:power-instant` — the NVML_FI_DEV_POWER_INSTANT field, where the binding and driver
  have it; documented only as "instantaneous", so its zero smoothing is assumed too.

The physical bound is the GPU's largest settable power limit plus 25% for transients (NVML
caps average power at the limit; short peaks exceed it): assumed, not read.

On a Grace Hopper (GH200) or Grace Blackwell module, where the GPU is joined to a Grace CPU
by NVLink-C2C (nvmlDeviceGetC2cModeInfoV says so; the name "GH200"/"GB200"/"GB300" where the
driver lacks the call), the energy counter is the whole module's: Grace CPU, its LPDDR5X,
the GPU and its HBM, and the regulators between (zeus, ml-energy/zeus#172, reads it so; the
power readings stay at NVML's default GPU scope, which is why zeus asks for
NVML_POWER_SCOPE_MODULE explicitly). That counter's part is `gpu-module`, so what a chip
figure covers (phase.results.covers) and the primary choice (no CPU sensor added on top)
follow from it.

Errors are per GPU: a GPU that cannot be opened (no permission, lost from the bus) is reported
and the others are still read. A GPU in MIG mode is read as a whole, including other
instances' work, and the probe says so.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any

from phase.sensors.core.base import Declared, Probe, ReadError, Sensor

BACKEND = "nvml"
DECLARED = Declared(BACKEND, measures="gpu", priority=80)
AVERAGED_POWER_S = 1.0
_TRANSIENT_HEADROOM = 1.25
_AMPERE = 7  # NVML_DEVICE_ARCH_AMPERE
_GRACE_NAMES = ("GH200", "GB200", "GB300")
_ARCH_NAMES = {2: "Kepler", 3: "Maxwell", 4: "Pascal", 5: "Volta", 6: "Turing", 7: "Ampere",
               8: "Ada", 9: "Hopper", 10: "Blackwell"}


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


@dataclass
class Gpu:
    """What NVML told us about one GPU (None: NVML could not say)."""

    index: int
    handle: Any
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    architecture: int | None = None
    compute_capability: tuple[int, int] | None = None
    mig_enabled: bool | None = None
    # The UUIDs of its MIG instances (CUDA_VISIBLE_DEVICES may name one); None: not listed.
    mig_uuids: tuple[str, ...] | None = None
    max_limit_mw: int | None = None
    # NVLink-C2C to a Grace CPU (GH200, GB200): None where NVML cannot say.
    c2c: bool | None = None
    # How many GPUs NVML counted, this one and any it could not open: CUDA's numbers past an
    # unopened GPU cannot be matched to NVML's (phase.sensors.core.primary).
    nvml_count: int | None = None

    @property
    def label(self) -> str:
        return f"GPU {self.index} ({self.name})" if self.name else f"GPU {self.index}"

    @property
    def grace_module(self) -> bool:
        """Joined to a Grace CPU, so its energy counter covers the whole module."""
        if self.c2c is not None:
            return self.c2c
        return any(k in (self.name or "") for k in _GRACE_NAMES)

    @property
    def arch_name(self) -> str:
        return _ARCH_NAMES.get(self.architecture or -1, "unknown architecture")


class _NvmlSensor(Sensor):
    backend = BACKEND

    def __init__(self, session: _Session, gpu: Gpu, name: str, **kw: Any) -> None:
        super().__init__(name, scope="chip", part="gpu", device=gpu.uuid, **kw)
        self.session = session
        self.nvml = session.nvml
        self.handle = gpu.handle
        self.gpu = gpu
        self.pci_bus_id = gpu.pci_bus_id
        session.acquire()
        self._open = True

    def close(self) -> None:
        if self._open:
            self._open = False
            self.session.release()


class NvmlEnergy(_NvmlSensor):
    def __init__(self, session: _Session, gpu: Gpu, base: str, bound: float | None) -> None:
        super().__init__(session, gpu, f"{base}:energy", kind="counter", smoothing_s=0.0,
                         max_power_w=bound, assumed=("max_power_w",) if bound else ())
        if gpu.grace_module:  # the module's counter: Grace CPU and memory included
            self.part = "gpu-module"
            self.max_power_w = None  # the GPU's power limit does not bound the module
            self.assumed = []

    def read_value(self) -> float:
        try:
            return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) * 1e-3
        except self.nvml.NVMLError as exc:
            raise ReadError(f"{self.name}: {exc}") from None


class NvmlPower(_NvmlSensor):
    def __init__(self, session: _Session, gpu: Gpu, base: str, bound: float | None) -> None:
        assumed = ("smoothing_s", "max_power_w") if bound else ("smoothing_s",)
        super().__init__(session, gpu, f"{base}:power", kind="power",
                         smoothing_s=power_smoothing_s(gpu), max_power_w=bound, assumed=assumed)

    def read_value(self) -> float:
        try:
            return self.nvml.nvmlDeviceGetPowerUsage(self.handle) * 1e-3
        except self.nvml.NVMLError as exc:
            raise ReadError(f"{self.name}: {exc}") from None


class NvmlInstantPower(_NvmlSensor):
    def __init__(self, session: _Session, gpu: Gpu, base: str, bound: float | None,
                 field_id: int) -> None:
        assumed = ("smoothing_s", "max_power_w") if bound else ("smoothing_s",)
        super().__init__(session, gpu, f"{base}:power-instant", kind="power", smoothing_s=0.0,
                         max_power_w=bound, assumed=assumed)
        self.field_id = field_id

    def read_value(self) -> float:
        try:
            value = self.nvml.nvmlDeviceGetFieldValues(self.handle, [self.field_id])[0]
        except self.nvml.NVMLError as exc:
            raise ReadError(f"{self.name}: {exc}") from None
        if value.nvmlReturn != self.nvml.NVML_SUCCESS:
            raise ReadError(f"{self.name}: NVML field read returned {value.nvmlReturn}")
        return value.value.uiVal * 1e-3  # mW


def power_smoothing_s(gpu: Gpu) -> float:
    """nvmlDeviceGetPowerUsage's averaging by architecture, as NVML documents it."""
    if gpu.architecture is None or gpu.architecture > 100:  # unknown: assume the average
        return AVERAGED_POWER_S
    if gpu.architecture < _AMPERE:
        return 0.0
    ga100 = gpu.compute_capability == (8, 0) or (
        gpu.architecture == _AMPERE and gpu.compute_capability is None
        and any(k in (gpu.name or "") for k in ("A100", "A30")))
    return 0.0 if gpu.architecture == _AMPERE and ga100 else AVERAGED_POWER_S


def describe(nvml: Any, exc: Exception) -> str:
    """An NVML error in words a user can act on (permission and lost GPUs named as such)."""
    value = getattr(exc, "value", None)
    if value == getattr(nvml, "NVML_ERROR_NO_PERMISSION", -1):
        return ("permission denied (NVML_ERROR_NO_PERMISSION): this user may not query it; "
                "run as a user in the GPU's group or as root")
    if value == getattr(nvml, "NVML_ERROR_GPU_IS_LOST", -1):
        return ("the GPU is lost (NVML_ERROR_GPU_IS_LOST): it fell off the bus or needs a "
                "reset; see nvidia-smi and dmesg")
    if value == getattr(nvml, "NVML_ERROR_NOT_SUPPORTED", -1):
        return "not supported by this GPU or driver (NVML_ERROR_NOT_SUPPORTED)"
    return f"NVML error: {exc}"


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _ask(nvml: Any, fn: str, *args: Any) -> Any:
    """One NVML query; None when it fails or the binding lacks the function."""
    try:
        return getattr(nvml, fn)(*args)
    except (nvml.NVMLError, AttributeError):
        return None


def gpu_facts(nvml: Any, index: int, handle: Any) -> Gpu:
    gpu = Gpu(index, handle)
    name = _ask(nvml, "nvmlDeviceGetName", handle)
    gpu.name = _text(name) if name is not None else None
    uuid = _ask(nvml, "nvmlDeviceGetUUID", handle)
    gpu.uuid = _text(uuid) if uuid is not None else None
    pci = _ask(nvml, "nvmlDeviceGetPciInfo", handle)
    gpu.pci_bus_id = _text(pci.busId) if pci is not None else None
    gpu.architecture = _ask(nvml, "nvmlDeviceGetArchitecture", handle)
    cc = _ask(nvml, "nvmlDeviceGetCudaComputeCapability", handle)
    gpu.compute_capability = (int(cc[0]), int(cc[1])) if cc is not None else None
    mig = _ask(nvml, "nvmlDeviceGetMigMode", handle)
    gpu.mig_enabled = bool(mig[0]) if mig is not None else None
    if gpu.mig_enabled:
        gpu.mig_uuids = mig_uuids(nvml, handle)
    c2c = _ask(nvml, "nvmlDeviceGetC2cModeInfoV", handle)
    enabled = getattr(c2c, "isC2cEnabled", None)  # a binding's struct; None: cannot say
    gpu.c2c = bool(enabled) if enabled is not None else None
    limits = _ask(nvml, "nvmlDeviceGetPowerManagementLimitConstraints", handle)
    gpu.max_limit_mw = int(limits[1]) if limits is not None and limits[1] else None
    return gpu


def mig_uuids(nvml: Any, handle: Any) -> tuple[str, ...] | None:
    """The UUIDs of a MIG-mode GPU's instances (`MIG-...`), in NVML's slot order; None where
    NVML or the binding cannot list them. An empty slot raises NVML_ERROR_NOT_FOUND."""
    slots = _ask(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle)
    if slots is None or not hasattr(nvml, "nvmlDeviceGetMigDeviceHandleByIndex"):
        return None
    out = []
    for slot in range(int(slots)):
        instance = _ask(nvml, "nvmlDeviceGetMigDeviceHandleByIndex", handle, slot)
        uuid = _ask(nvml, "nvmlDeviceGetUUID", instance) if instance is not None else None
        if uuid is not None:
            out.append(_text(uuid))
    return tuple(out)


def load(module: Any | None = None) -> tuple[Any, str | None]:
    """The one place phase opens NVML: (the pynvml module, None) after nvmlInit, or (None,
    why not). Every successful call needs one nvmlShutdown (NVML counts them). `module` is a
    stand-in for pynvml (a snapshot replay)."""
    nvml: Any = module
    if nvml is None:
        try:
            import pynvml
        except ImportError:
            return None, "nvidia-ml-py is not installed: `pip install nvidia-ml-py`"
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        if getattr(exc, "value", None) == getattr(nvml, "NVML_ERROR_LIBRARY_NOT_FOUND", -1):
            return None, ("no NVIDIA driver here (libnvidia-ml.so.1 not found): no NVIDIA GPU, "
                          "or the driver is not installed or not visible in this container")
        return None, f"NVML did not start: {exc} (is the NVIDIA driver loaded?)"
    return nvml, None


def gpu_names(module: Any | None = None) -> list[str]:
    """GPU names, for provenance; an empty list where NVML cannot start (no NVIDIA GPU)."""
    nvml, _ = load(module)
    if nvml is None:
        return []
    try:
        names = []
        for i in range(nvml.nvmlDeviceGetCount()):
            with contextlib.suppress(nvml.NVMLError):
                names.append(_text(nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(i))))
        return names
    except nvml.NVMLError:
        return []
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def gpu_driver_version(module: Any | None = None) -> str | None:
    """The NVIDIA driver version, for a host's identity; None where NVML cannot start."""
    nvml, _ = load(module)
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


def probe(module: Any | None = None) -> Probe:
    found = Probe(BACKEND)
    nvml, problem = load(module)
    if nvml is None:
        found.problems.append(problem or "NVML did not start")
        return found
    session = _Session(nvml)
    session.acquire()  # held until probing ends, so a GPU with no sensors cannot shut NVML
    try:
        count = nvml.nvmlDeviceGetCount()
        if count == 0:
            found.problems.append("the NVIDIA driver is loaded but reports no GPU")
        gpus = []
        for index in range(count):
            try:
                gpus.append(gpu_facts(nvml, index, nvml.nvmlDeviceGetHandleByIndex(index)))
            except nvml.NVMLError as exc:  # this GPU only: the others are still read
                found.problems.append(f"GPU {index}: cannot open it: {describe(nvml, exc)}")
        for gpu in gpus:
            gpu.nvml_count = count
            _probe_gpu(nvml, session, gpu, _base_name(gpu, gpus), found)
    except nvml.NVMLError as exc:
        found.problems.append(f"NVML failed while listing GPUs: {describe(nvml, exc)}")
    finally:
        session.release()
    for s in found.sensors:
        s.encloses = []
    return found


def _base_name(gpu: Gpu, gpus: list[Gpu]) -> str:
    """`nvml:GPU-8f3c2a1b`: the UUID's first 8 hex digits, all of it if two GPUs share them."""
    if not gpu.uuid:
        return f"nvml:{gpu.index}"
    short = gpu.uuid[:12]
    clash = sum(1 for g in gpus if g.uuid and g.uuid[:12] == short) > 1
    return f"nvml:{gpu.uuid if clash else short}"


def _probe_gpu(nvml: Any, session: _Session, gpu: Gpu, base: str, found: Probe) -> None:
    label = gpu.label
    if gpu.uuid is None:
        found.notes.append(f"{label}: NVML gave no UUID, so its sensors are named by index "
                           f"({base}), which can change across reboots")
    if gpu.mig_enabled:
        found.notes.append(
            f"{label}: MIG mode is on: its energy counter and power readings cover the whole "
            "GPU, including the work of every other MIG instance on it")
    if gpu.grace_module:
        found.notes.append(
            f"{label}: joined to a Grace CPU (NVLink-C2C): its energy counter covers the whole "
            "module (Grace CPU, its memory, the GPU and its HBM); its power readings the GPU")
    bound = gpu.max_limit_mw * 1e-3 * _TRANSIENT_HEADROOM if gpu.max_limit_mw else None
    try:
        nvml.nvmlDeviceGetTotalEnergyConsumption(gpu.handle)
        found.sensors.append(NvmlEnergy(session, gpu, base, bound))
    except nvml.NVMLError as exc:
        hint = (f"; the counter needs Volta or newer, this is {gpu.arch_name}"
                if getattr(exc, "value", None) == getattr(nvml, "NVML_ERROR_NOT_SUPPORTED", -1)
                else "")
        found.problems.append(f"{label}: no total-energy counter: {describe(nvml, exc)}{hint}")
    try:
        nvml.nvmlDeviceGetPowerUsage(gpu.handle)
        found.sensors.append(NvmlPower(session, gpu, base, bound))
    except nvml.NVMLError as exc:
        found.problems.append(f"{label}: no power reading: {describe(nvml, exc)}")
    field_id = getattr(nvml, "NVML_FI_DEV_POWER_INSTANT", None)
    if field_id is not None and _instant_field_works(nvml, gpu.handle, field_id):
        found.sensors.append(NvmlInstantPower(session, gpu, base, bound, field_id))


def _instant_field_works(nvml: Any, handle: Any, field_id: int) -> bool:
    try:
        value = nvml.nvmlDeviceGetFieldValues(handle, [field_id])[0]
    except nvml.NVMLError:
        return False
    return bool(value.nvmlReturn == nvml.NVML_SUCCESS)
