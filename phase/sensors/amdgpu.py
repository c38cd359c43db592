"""AMD GPUs through the `amdgpu` driver's hwmon files (ROCm/HIP and Vulkan builds of llama.cpp).

The driver registers one hwmon device per card on the card's PCI device
(`/sys/class/hwmon/hwmonN` with `name` = `amdgpu`, the same directory as
`/sys/class/drm/cardK/device/hwmon/hwmonN`). Its power files, as drivers/gpu/drm/amd/pm/
amdgpu_pm.c documents them (DOC: hwmon, rendered in Documentation/gpu/amdgpu/thermal.rst):

- `power1_average`: average socket power in microwatts, averaged by the SMU firmware over a
  window the driver does not document (assumed 1 s here, and marked so);
- `power1_input`: instantaneous socket power in microwatts (Linux 6.6+, where the firmware
  reports it).

"Not all products support both": the driver hides a file whose sensor the firmware lacks
(RDNA3 cards and MI300 show only `power1_input`, older cards only `power1_average`), and an
older kernel may show `power1_average` yet fail its read (EINVAL, EOPNOTSUPP, or EPERM while
the GPU is suspended): each failure is one problem line, never a sensor. amdgpu's hwmon has
no energy counter; a counter exists only through amdsmi (phase.sensors.amdsmi_gpu), which
needs ROCm's library and is read where it imports.

Both figures are the SoC's ("socket") power; "on APUs this includes the CPU". An APU is told
by `in1_input`, the northbridge voltage the driver shows on APUs only: its sensor's part is
`apu-soc` (CPU and GPU together), a discrete card's `gpu-package`. Each sensor carries the
card's PCI bus id (`device/uevent`'s PCI_SLOT_NAME) to be matched to the device llama.cpp
used. The bound is the largest power cap the card allows (`power1_cap_max`) plus 25% for
transients, assumed.
"""

from __future__ import annotations

from pathlib import Path

from phase.sensors.base import Probe, Sensor
from phase.sensors.fs import REAL_FS, Fs, ValueFile, open_counter
from phase.sensors.pci import hwmon_devices, pci_slot, read_uw_max

BACKEND = "amdgpu"
DRIVER = "amdgpu"
DEFAULT_ROOT = Path("/sys/class/hwmon")
AVERAGED_POWER_S = 1.0
_TRANSIENT_HEADROOM = 1.25
# (file, sensor suffix, smoothing): the least smoothed first, as the primary choice ranks them
_POWER_FILES = (("power1_input", "power", 0.0), ("power1_average", "power-average",
                                                 AVERAGED_POWER_S))


class AmdgpuPower(Sensor):
    backend = BACKEND

    def __init__(self, name: str, power_file: ValueFile, *, slot: str, part: str,
                 smoothing_s: float, bound: float | None) -> None:
        assumed = ("smoothing_s", "max_power_w") if bound else ("smoothing_s",)
        super().__init__(name, scope="chip", kind="power", smoothing_s=smoothing_s,
                         max_power_w=bound, part=part, device=slot, assumed=assumed)
        self.pci_bus_id = slot
        self.file = power_file

    def read_value(self) -> float:
        return self.file.read_int() * 1e-6  # microwatts

    def close(self) -> None:
        self.file.close()


def card_part(fs: Fs, hwmon_dir: Path) -> str:
    """`apu-soc` where the driver shows the APU-only northbridge voltage, else `gpu-package`."""
    return "apu-soc" if "in1_input" in fs.listdir(hwmon_dir) else "gpu-package"


def probe(root: Path = DEFAULT_ROOT, fs: Fs = REAL_FS) -> Probe:
    """Each amdgpu card's power readings. No amdgpu hwmon device: no sensor and no problem
    (there is no AMD GPU here, or its driver is not loaded)."""
    found = Probe(BACKEND)
    denied: list[Path] = []
    for device in hwmon_devices(fs, root, DRIVER):
        slot = pci_slot(fs, device)
        if slot is None:
            found.problems.append(
                f"{device / 'device' / 'uevent'}: no PCI_SLOT_NAME, so this amdgpu card cannot "
                "be matched to the GPU llama.cpp used; left out (is sysfs mounted in full?)")
            continue
        entries = fs.listdir(device)
        present = [f for f in _POWER_FILES if f[0] in entries]
        if not present:
            found.problems.append(
                f"{device}: amdgpu card {slot} shows neither power1_input nor power1_average "
                "(the firmware reports no socket power, or the kernel predates the files); "
                "its energy cannot be measured")
            continue
        bound = read_uw_max(fs, device, ["power1_cap_max"])
        part = card_part(fs, device)
        for filename, suffix, smoothing in present:
            handle = open_counter(fs, device / filename, f"amdgpu card {slot}", denied,
                                  found.problems)
            if handle is not None:
                found.sensors.append(AmdgpuPower(
                    f"amdgpu:{slot}:{suffix}", handle, slot=slot, part=part,
                    smoothing_s=smoothing,
                    bound=bound * _TRANSIENT_HEADROOM if bound else None))
        if part == "apu-soc":
            found.notes.append(f"amdgpu card {slot} is an APU: its power figure is the whole "
                               "SoC's, CPU cores included (amdgpu_pm.c)")
    if denied:
        found.problems.append(f"cannot read {denied[0]}: permission denied; amdgpu's power "
                              "files are normally world-readable: is sysfs mounted read-only "
                              "for this user or container?")
    for s in found.sensors:
        s.encloses = []
    return found
