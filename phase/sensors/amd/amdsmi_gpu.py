"""AMD GPUs' energy accumulator through amdsmi (ROCm's Python binding), where it imports.

amdsmi is optional: it needs ROCm's libamd_smi.so, which phase does not install. Where it
imports and initialises, `amdsmi_get_energy_count(handle)` gives an accumulator and its
resolution; their product is microjoules since the driver loaded (amdsmi 6.2.1+ names the
accumulator `energy_accumulator`, older ones `power`), as zeus's AMD monitor reads it. It is a
64-bit count, so it does not wrap in practice. Each GPU is named by its PCI bus id
(`amdsmi_get_gpu_device_bdf`), the same id the amdgpu hwmon sensors carry.

The counter is wrong on some GPUs (ROCm/amdsmi issue 38). As zeus does, it is checked once
against the socket power amdsmi reports: over a short wait the counter must advance by
between a tenth and ten times what that power implies, or it is left out with a problem line
(the hwmon power reading of the same GPU still measures it). A GPU drawing under 1 W cannot be
checked this way and is kept, with a note.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Mapping
from typing import Any

from phase.sensors.core.base import Declared, Probe, ReadError, Sensor
from phase.sensors.core.pci import pci_key

BACKEND = "amdsmi"
# After amdgpu: it reads the counters of the GPUs amdgpu's hwmon found, no others.
DECLARED = Declared(BACKEND, measures="gpu", priority=30, after=("amdgpu",))
CHECK_S = 0.3


def load(module: Any | None = None) -> tuple[Any | None, str | None]:
    """(the initialised amdsmi module, None), or (None, why not). `module` is a stand-in."""
    lib: Any = module
    if lib is None:
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # it prints when the .so is missing
                import amdsmi
            lib = amdsmi
        except Exception as exc:  # OSError, KeyError, AttributeError as well as ImportError
            return None, (f"amdsmi does not import ({type(exc).__name__}): ROCm's Python "
                          "binding is optional; AMD GPUs are read through hwmon power instead")
    try:
        lib.amdsmi_init()
    except Exception as exc:
        return None, f"amdsmi did not initialise: {exc}"
    return lib, None


def energy_uj(lib: Any, handle: Any) -> float:
    counts = lib.amdsmi_get_energy_count(handle)
    ticks = counts.get("energy_accumulator", counts.get("power"))
    return float(ticks) * float(counts["counter_resolution"])


def _socket_power_w(lib: Any, handle: Any) -> float | None:
    try:
        info = lib.amdsmi_get_power_info(handle)
    except Exception:
        return None
    for key in ("socket_power", "current_socket_power", "average_socket_power"):
        if isinstance(info.get(key), int | float):
            return float(info[key])
    return None


class AmdsmiEnergy(Sensor):
    backend = BACKEND

    def __init__(self, lib: Any, handle: Any, slot: str, part: str) -> None:
        super().__init__(f"amdsmi:{slot}:energy", scope="chip", kind="counter", smoothing_s=0.0,
                         max_power_w=None, wrap_j=None, part=part, device=slot)
        self.pci_bus_id = slot
        self.lib = lib
        self.handle = handle

    def read_value(self) -> float:
        try:
            return energy_uj(self.lib, self.handle) * 1e-6
        except Exception as exc:
            raise ReadError(f"{self.name}: amdsmi_get_energy_count failed: {exc}") from None


def _checked(lib: Any, gpus: list[tuple[str, Any]], found: Probe) -> list[tuple[str, Any]]:
    """The GPUs whose counter agrees with their reported power (zeus's loose check)."""
    power = {slot: _socket_power_w(lib, h) for slot, h in gpus}
    before = {slot: energy_uj(lib, h) for slot, h in gpus}
    time.sleep(CHECK_S)
    kept = []
    for slot, handle in gpus:
        moved_j = (energy_uj(lib, handle) - before[slot]) * 1e-6
        watts = power[slot]
        if watts is None or watts < 1.0:
            found.notes.append(f"amdsmi GPU {slot}: drawing under 1 W (or no power figure), so "
                               "its energy counter could not be checked against its power")
        elif not 0.1 < moved_j / (watts * CHECK_S) < 10:
            found.problems.append(
                f"amdsmi GPU {slot}: the energy counter moved {moved_j:.3g} J in {CHECK_S} s "
                f"at {watts:.3g} W (expected about {watts * CHECK_S:.3g} J): a known amdsmi "
                "fault on some GPUs (ROCm/amdsmi issue 38); left out, its hwmon power reading "
                "measures it instead")
            continue
        kept.append((slot, handle))
    return kept


def probe(parts: Mapping[tuple[int, int, int, int] | None, str], module: Any | None = None
          ) -> Probe:
    """Energy counters of the AMD GPUs amdgpu's hwmon found (`parts`: PCI key -> part)."""
    found = Probe(BACKEND)
    lib, why = load(module)
    if lib is None:
        found.notes.append(why or "amdsmi is not available")
        return found
    try:
        gpus = []
        for handle in lib.amdsmi_get_processor_handles():
            try:
                slot = str(lib.amdsmi_get_gpu_device_bdf(handle)).lower()
                energy_uj(lib, handle)
            except Exception as exc:
                found.problems.append(f"amdsmi: a GPU's energy counter cannot be read: {exc}")
                continue
            if pci_key(slot) in parts:
                gpus.append((slot, handle))
        for slot, handle in _checked(lib, gpus, found):
            found.sensors.append(AmdsmiEnergy(lib, handle, slot, parts[pci_key(slot)]))
    except Exception as exc:
        found.problems.append(f"amdsmi failed while listing GPUs: {exc}")
    for s in found.sensors:
        s.encloses = []
    return found
