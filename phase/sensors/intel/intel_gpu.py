"""Intel discrete GPUs through the `i915` and `xe` drivers' hwmon energy counters (SYCL and
Vulkan builds of llama.cpp on Arc, Battlemage, Data Center GPU Flex/Max).

Both drivers register hwmon on discrete cards only (`if (!IS_DGFX(...)) return;` in
i915_hwmon.c and xe_hwmon.c): an integrated GPU has no hwmon at all, and its energy is inside
the CPU package's RAPL counter. What the counters are, from the kernel's ABI documents:

- i915 (Documentation/ABI/testing/sysfs-driver-intel-i915-hwmon): `energy1_input`, "energy
  input of device" in microjoules, Linux 6.2+; on DG2 (Arc A-series) it is the package
  energy register. `i915_gtN` hwmon devices (one per GT of a multi-tile card) hold the GTs'
  shares of the same energy and are left out, so nothing is counted twice.
- xe (sysfs-driver-intel-xe-hwmon): since Linux 6.8 channel 1 is the card and channel 2 the
  package: `energy1_input` "card energy", `energy2_input` "package energy". xe_hwmon.c has a
  card counter on Battlemage only (DG2 and PVC have the package one alone). The **package**
  counter is the chip figure: it is the GPU die and what shares its package, like a RAPL
  package or NVML's GPU figure, while the card adds its memory, voltage regulators and fans.
  The card counter is recorded at board scope, declared to enclose the package. An xe kernel
  before 6.8 (6.5-6.7) had one channel, `energy1_input`, which read the package register:
  where `energy1_input` is the only counter it is taken as the package, and a note says so.

Wrap: the hardware register is 32 bits in units of 2^-N J (N from PACKAGE_POWER_SKU_UNIT,
typically 14: it wraps after 262144 J, about 4.4 minutes at 1000 W). Both drivers fold it into
a 64-bit accumulator on every read and count one wrap between two reads, so the file itself
never wraps and `wrap_j` is None; a reader that leaves minutes between reads could miss a
wrap, which the sampler's 20 Hz reads never do. A drop in the value (the driver reloaded) is
then a read problem, not energy. The bound is the card's largest declared power limit
(`powerN_rated_max`, `_max`, `_cap`, `_crit`, microwatts) plus 25% for transients, assumed.
"""

from __future__ import annotations

from pathlib import Path

from phase.results import Scope
from phase.sensors.core.base import Declared, Probe, Sensor
from phase.sensors.core.fs import REAL_FS, Fs, ValueFile, open_counter
from phase.sensors.core.pci import hwmon_devices, pci_slot, read_uw_max

BACKEND = "intel_gpu"
DECLARED = Declared(BACKEND, measures="gpu", priority=40)
DRIVERS = ("i915", "xe")
DEFAULT_ROOT = Path("/sys/class/hwmon")
_TRANSIENT_HEADROOM = 1.25
_LIMITS = ("rated_max", "max", "cap", "crit")


class IntelGpuEnergy(Sensor):
    backend = BACKEND

    def __init__(self, name: str, energy_file: ValueFile, *, slot: str, scope: Scope,
                 part: str, bound: float | None) -> None:
        super().__init__(name, scope=scope, kind="counter", smoothing_s=0.0, max_power_w=bound,
                         wrap_j=None, part=part, device=slot,
                         assumed=("max_power_w",) if bound else ())
        self.pci_bus_id = slot
        self.file = energy_file

    def read_value(self) -> float:
        return self.file.read_int() * 1e-6  # microjoules

    def close(self) -> None:
        self.file.close()


def _channels(driver: str, entries: list[str]) -> list[tuple[int, Scope, str, str]]:
    """(channel, scope, part, what) of each energy counter this device shows."""
    if driver == "i915":
        return [(1, "chip", "gpu-package", "energy")] if "energy1_input" in entries else []
    out: list[tuple[int, Scope, str, str]] = []
    if "energy2_input" in entries:
        out.append((2, "chip", "gpu-package", "package"))
        if "energy1_input" in entries:
            out.append((1, "board", "gpu-card", "card"))
    elif "energy1_input" in entries:
        out.append((1, "chip", "gpu-package", "package (one-channel xe)"))
    return out


def _bound(fs: Fs, device: Path, channel: int) -> float | None:
    watts = read_uw_max(fs, device, [f"power{channel}_{limit}" for limit in _LIMITS])
    return watts * _TRANSIENT_HEADROOM if watts else None


def probe(root: Path = DEFAULT_ROOT, fs: Fs = REAL_FS) -> Probe:
    """Each discrete Intel GPU's energy counters. No i915/xe hwmon device: no sensor and no
    problem (no discrete Intel GPU; an integrated one never has hwmon)."""
    found = Probe(BACKEND)
    denied: list[Path] = []
    for device in hwmon_devices(fs, root, *DRIVERS):
        driver = fs.read_text(device / "name") or "?"
        slot = pci_slot(fs, device)
        if slot is None:
            found.problems.append(
                f"{device / 'device' / 'uevent'}: no PCI_SLOT_NAME, so this {driver} card cannot "
                "be matched to the GPU llama.cpp used; left out")
            continue
        channels = _channels(driver, fs.listdir(device))
        if not channels:
            found.problems.append(
                f"{device}: {driver} card {slot} has no energyN_input (the driver exposes it "
                f"on Linux {'6.2' if driver == 'i915' else '6.5'}+ and on some cards only); "
                "its energy cannot be measured")
            continue
        made: list[IntelGpuEnergy] = []
        for channel, scope, part, what in channels:
            handle = open_counter(fs, device / f"energy{channel}_input",
                                  f"{driver} card {slot} {what} energy", denied, found.problems)
            if handle is not None:
                made.append(IntelGpuEnergy(f"{driver}:{slot}:{what.split()[0]}", handle,
                                           slot=slot, scope=scope, part=part,
                                           bound=_bound(fs, device, channel)))
        if driver == "xe" and [c[3] for c in channels] == ["package (one-channel xe)"]:
            found.notes.append(f"xe card {slot} shows energy1_input only: read as the package "
                               "counter, as xe kernels before 6.8 exposed it")
        package = [s.name for s in made if s.part == "gpu-package"]
        for s in made:
            s.encloses = package if s.part == "gpu-card" else []
        found.sensors.extend(made)
    if denied:
        found.problems.append(
            f"cannot read {denied[0]}: permission denied for this user (i915 makes it "
            "world-readable; a container or a udev rule may not): run phase as root (sudo), or "
            f"`sudo chmod o+r {denied[0]}` until the next reboot")
    return found
