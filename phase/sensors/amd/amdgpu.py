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
no energy counter; a counter exists only through amdsmi (phase.sensors.amd.amdsmi_gpu), which
needs ROCm's library and is read where it imports.

Both figures are the SoC's ("socket") power; "on APUs this includes the CPU". An APU is told
by `in1_input`, the northbridge voltage the driver shows on APUs only, except on the
multi-die parts (GC 9.4.3 and later: MI300A) where it hides that file on APUs too
(hwmon_attributes_visible: "only APUs other than gc 9,4,3 have vddnb"): MI300A is told by
its PCI id instead (1002:74A0; the MI300X, 74A1, is a discrete card). An APU sensor's part
is `apu-soc` (CPU and GPU together), a discrete card's `gpu-package`. Each sensor carries
the card's PCI bus id (`device/uevent`'s PCI_SLOT_NAME) to be matched to the device
llama.cpp used. The bound is the largest power cap the card allows (`power1_cap_max`) plus
25% for transients, assumed.

The MI250 and MI250X (PCI id 1002:740C, "Aldebaran") are two dies (GCDs) in one package, and
each die is its own amdgpu device. The firmware reports power for the package on the
primary die only: on the secondary die the driver shows the power and the power cap as 0
(aldebaran_ppt.c: "Valid power data is available only from primary die"; zeus's AMD
backend reads it so). The secondary die therefore gets no sensor; the primary die's sensor
covers both dies and carries the secondary's PCI bus id in `sibling_slots`, so a model on
either die is measured by the package figure, counted once. Dies are paired in PCI order
(each secondary with the primary just before it), the order amdsmi and ROCm number them in,
as zeus pairs them by index.
"""

from __future__ import annotations

from pathlib import Path

from phase.sensors.core.base import Declared, Probe, Sensor
from phase.sensors.core.fs import REAL_FS, Fs, ValueFile, open_counter
from phase.sensors.core.pci import hwmon_devices, pci_id, pci_key, pci_slot, read_uw_max

BACKEND = "amdgpu"
DECLARED = Declared(BACKEND, measures="gpu", priority=50)
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
        self.dual_die = False
        # The PCI bus ids of the other dies whose power this figure includes (an MI250X's
        # secondary die); a model on one of them is measured by this sensor.
        self.sibling_slots: tuple[str, ...] = ()

    def read_value(self) -> float:
        return self.file.read_int() * 1e-6  # microwatts

    def close(self) -> None:
        self.file.close()


APU_PCI_IDS = {"1002:74A0": "MI300A"}
DUAL_DIE_PCI_IDS = {"1002:740C": "MI250/MI250X"}


def card_part(fs: Fs, hwmon_dir: Path) -> str:
    """`apu-soc` where the driver shows the APU-only northbridge voltage, or the PCI id is
    an APU's whose driver hides it (MI300A); else `gpu-package`."""
    if "in1_input" in fs.listdir(hwmon_dir) or pci_id(fs, hwmon_dir) in APU_PCI_IDS:
        return "apu-soc"
    return "gpu-package"


def _secondary_die(fs: Fs, device: Path, present: list[tuple[str, str, float]]) -> bool:
    """A dual-die package's secondary die: the driver shows its power cap and power as 0."""
    if pci_id(fs, device) not in DUAL_DIE_PCI_IDS:
        return False
    cap = read_uw_max(fs, device, ["power1_cap_max"])
    readings = [fs.read_text(device / f[0]) for f in present]
    return cap is None and all(r is not None and r.strip() == "0" for r in readings)


def _card(fs: Fs, device: Path, slot: str, found: Probe, denied: list[Path]) -> bool:
    """The sensors of one card with a PCI slot (problems and notes go to `found`); True where
    it is a secondary die, which has no figure of its own."""
    entries = fs.listdir(device)
    present = [f for f in _POWER_FILES if f[0] in entries]
    if not present:
        found.problems.append(
            f"{device}: amdgpu card {slot} shows neither power1_input nor power1_average "
            "(the firmware reports no socket power, or the kernel predates the files); "
            "its energy cannot be measured")
        return False
    if _secondary_die(fs, device, present):
        return True
    bound = read_uw_max(fs, device, ["power1_cap_max"])
    part = card_part(fs, device)
    for filename, suffix, smoothing in present:
        handle = open_counter(fs, device / filename, f"amdgpu card {slot}", denied,
                              found.problems)
        if handle is not None:
            sensor = AmdgpuPower(f"amdgpu:{slot}:{suffix}", handle, slot=slot, part=part,
                                 smoothing_s=smoothing,
                                 bound=bound * _TRANSIENT_HEADROOM if bound else None)
            sensor.dual_die = pci_id(fs, device) in DUAL_DIE_PCI_IDS
            found.sensors.append(sensor)
    if part == "apu-soc":
        found.notes.append(f"amdgpu card {slot} is an APU: its power figure is the whole "
                           "SoC's, CPU cores included (amdgpu_pm.c)")
    return False


def _pair_dies(found: Probe, secondaries: list[str]) -> None:
    """Give each secondary die to the primary die just before it in PCI order."""
    primaries = {s.pci_bus_id for s in found.sensors
                 if isinstance(s, AmdgpuPower) and s.dual_die}
    dies = sorted([*primaries, *secondaries], key=lambda b: pci_key(b) or (0, 0, 0, 0))
    for k, slot in enumerate(dies):
        if slot not in secondaries:
            continue
        before = dies[k - 1] if k else None
        if before is None or before not in primaries:
            found.problems.append(
                f"amdgpu card {slot} is the secondary die of a dual-die MI250/MI250X, which "
                "reports no power of its own (0 W), and no primary die with the package's "
                "figure precedes it in PCI order: its energy cannot be measured")
            continue
        primaries.discard(before)  # one secondary per package
        for s in found.sensors:
            if isinstance(s, AmdgpuPower) and s.pci_bus_id == before:
                s.sibling_slots = (slot,)
        found.notes.append(
            f"amdgpu cards {before} and {slot} are the two dies of one MI250/MI250X package: "
            f"the driver reports the package's power (both dies) on {before} only and 0 W on "
            f"{slot} (aldebaran_ppt.c), so {before}'s figure stands for both")


def probe(root: Path = DEFAULT_ROOT, fs: Fs = REAL_FS) -> Probe:
    """Each amdgpu card's power readings. No amdgpu hwmon device: no sensor and no problem
    (there is no AMD GPU here, or its driver is not loaded)."""
    found = Probe(BACKEND)
    denied: list[Path] = []
    secondaries: list[str] = []
    for device in hwmon_devices(fs, root, DRIVER):
        slot = pci_slot(fs, device)
        if slot is None:
            found.problems.append(
                f"{device / 'device' / 'uevent'}: no PCI_SLOT_NAME, so this amdgpu card cannot "
                "be matched to the GPU llama.cpp used; left out (is sysfs mounted in full?)")
            continue
        if _card(fs, device, slot, found, denied):
            secondaries.append(slot)
    _pair_dies(found, secondaries)
    if denied:
        found.problems.append(f"cannot read {denied[0]}: permission denied; amdgpu's power "
                              "files are normally world-readable: is sysfs mounted read-only "
                              "for this user or container?")
    for s in found.sensors:
        s.encloses = []
    return found
