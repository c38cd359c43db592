"""How a GPU is named across llama.cpp, its driver's hwmon files and NVML: the PCI bus id.

llama.cpp logs each device it used with the id its backend reports (`using device ROCm0 (AMD
Instinct MI300X) (0000:0c:00.0) - ... MiB free`); a GPU driver's hwmon directory hangs off
the card's PCI device (`/sys/class/hwmon/hwmonN/device` is the PCI device, whose `uevent`
holds `PCI_SLOT_NAME=0000:0c:00.0`), and NVML reports `00000000:0C:00.0`. The three spell it
differently; `pci_key` reads them all as one tuple, so the match does not depend on any
enumeration order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from phase.sensors.core.fs import Fs


@dataclass(frozen=True)
class GpuUse:
    """One accelerator device llama.cpp used, as it logged it ("CUDA0", "NVIDIA H200",
    "0000:01:00.0")."""

    name: str
    description: str = ""
    pci_bus_id: str | None = None

    @property
    def index(self) -> int | None:
        digits = "".join(c for c in self.name if c.isdigit())
        return int(digits) if digits else None


def pci_key(bus_id: str | None) -> tuple[int, int, int, int] | None:
    """'00000000:01:00.0' (NVML) and '0000:01:00.0' (CUDA, sysfs) -> (0, 1, 0, 0)."""
    if not bus_id:
        return None
    try:
        domain, bus, rest = bus_id.strip().lower().split(":")
        device, function = rest.split(".")
        return int(domain, 16), int(bus, 16), int(device, 16), int(function[:1], 16)
    except ValueError:
        return None


def hwmon_devices(fs: Fs, root: Path, *names: str) -> list[Path]:
    """The hwmon directories under `root` whose `name` is one of `names`, in hwmon order."""
    found = [root / d for d in fs.listdir(root) if fs.read_text(root / d / "name") in names]
    return sorted(found, key=lambda p: (len(p.name), p.name))  # hwmon10 after hwmon9


def _uevent(fs: Fs, hwmon_dir: Path, field: str) -> str | None:
    text = fs.read_text(hwmon_dir / "device" / "uevent") or ""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == field:
            return value.strip()
    return None


def pci_slot(fs: Fs, hwmon_dir: Path) -> str | None:
    """The PCI bus id of the device a hwmon directory belongs to, from the device's uevent
    (`PCI_SLOT_NAME=`); None where the parent is not a PCI device or cannot be read."""
    value = _uevent(fs, hwmon_dir, "PCI_SLOT_NAME")
    return value.lower() if value is not None and pci_key(value) is not None else None


def pci_id(fs: Fs, hwmon_dir: Path) -> str | None:
    """The device's `vendor:device` PCI id (`PCI_ID=1002:74A0` in its uevent), upper case;
    None where it cannot be read. It tells products apart that the driver's files do not."""
    value = _uevent(fs, hwmon_dir, "PCI_ID")
    return value.upper() if value and ":" in value else None


def read_uw_max(fs: Fs, hwmon_dir: Path, names: list[str]) -> float | None:
    """The largest positive value (in W) among the given microwatt limit files; None if none."""
    values = []
    for name in names:
        text = fs.read_text(hwmon_dir / name)
        try:
            values.append(int(text) if text is not None else 0)
        except ValueError:
            continue
    positive = [v for v in values if v > 0]
    return max(positive) * 1e-6 if positive else None
