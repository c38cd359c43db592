"""CUDA's own numbering of this machine's GPUs, for a snapshot: per CUDA device number, its
PCI bus id and name, as the CUDA driver API (libcuda, which every NVIDIA driver installs)
reports them to this process.

CUDA applies CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER when it starts (cuInit), so the list
is the one llama.cpp would see when started from the same environment: a replay maps each
CUDA number to an NVML GPU by bus id (phase.sensors.core.cuda_map, rule 1) exactly as on the
recorded machine, with no guess about CUDA's order. Read through ctypes: no CUDA toolkit or
Python binding is needed, and cuInit creates no context (it allocates no GPU memory).
"""

from __future__ import annotations

import ctypes
from typing import Any

LIBRARY = "libcuda.so.1"
_CUDA_SUCCESS = 0


def read(library: str = LIBRARY) -> dict[str, Any]:
    """{"devices": [{"index", "pci_bus_id", "name"}, ...]} in CUDA's order, or {"error": why,
    "code": CUresult} where the driver cannot be loaded or started."""
    try:
        lib = ctypes.CDLL(library)
    except OSError as exc:
        return {"error": f"{library} could not be loaded ({exc}): no NVIDIA driver here"}
    try:
        return _devices(lib)
    except AttributeError as exc:  # a library without the driver API's entry points
        return {"error": f"{library} lacks the CUDA driver API: {exc}"}


def _check(what: str, rc: int) -> dict[str, Any] | None:
    return None if rc == _CUDA_SUCCESS else {"error": f"{what} returned CUresult {rc}",
                                             "code": int(rc)}


def _devices(lib: Any) -> dict[str, Any]:
    failed = _check("cuInit", lib.cuInit(0))
    if failed:
        return failed
    count = ctypes.c_int(0)
    failed = _check("cuDeviceGetCount", lib.cuDeviceGetCount(ctypes.byref(count)))
    if failed:
        return failed
    devices: list[dict[str, Any]] = []
    for index in range(count.value):
        device = ctypes.c_int(0)
        bus = ctypes.create_string_buffer(64)
        name = ctypes.create_string_buffer(256)
        failed = (_check("cuDeviceGet", lib.cuDeviceGet(ctypes.byref(device), index))
                  or _check("cuDeviceGetPCIBusId", lib.cuDeviceGetPCIBusId(bus, 64, device))
                  or _check("cuDeviceGetName", lib.cuDeviceGetName(name, 256, device)))
        if failed:
            return {**failed, "devices": devices}
        devices.append({"index": index, "pci_bus_id": bus.value.decode(errors="replace"),
                        "name": name.value.decode(errors="replace")})
    return {"devices": devices}
