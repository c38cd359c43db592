"""AMD EPYC/Ryzen energy through the `amd_energy` hwmon driver (Linux 5.8-5.12).

Before the kernel's RAPL powercap zones covered AMD CPUs, AMD's `amd_energy` driver exposed
the same RAPL MSRs as a hwmon device (`/sys/class/hwmon/hwmonN`, `name` = `amd_energy`;
Documentation/hwmon/amd_energy.rst): `energyN_input` in microjoules with `energyN_label`
`EcoreNNN` (one per core) and then `EsocketN` (one per socket). The driver accumulates the
32-bit MSR into a 64-bit count, so the counter does not wrap in practice.

Only the socket counters are read: a socket's counter already includes its cores, so a core
counter added to it would count that core twice. Each socket is a chip-scope `cpu-package`,
summed across sockets for the CPU's energy like RAPL's package zones (phase.sensors.core.primary
takes RAPL's packages where both exist, never both). Since Linux 5.10 the counters are
readable by root only, as RAPL's are (CVE-2020-8694).
"""

from __future__ import annotations

import re
from pathlib import Path

from phase.sensors.core.base import Declared, Probe, Sensor
from phase.sensors.core.fs import REAL_FS, Fs, ValueFile, open_counter

BACKEND = "amd_energy"
# Below RAPL: both read the same MSRs, and RAPL is the kernel's maintained driver.
DECLARED = Declared(BACKEND, measures="package", priority=60)
DEFAULT_ROOT = Path("/sys/class/hwmon")
DRIVER = "amd_energy"
_LABEL = re.compile(r"^energy(\d+)_label$")
_SOCKET = re.compile(r"^Esocket(\d+)$")
_CORE = re.compile(r"^Ecore\d+$")


class AmdSocket(Sensor):
    backend = BACKEND

    def __init__(self, name: str, energy_file: ValueFile) -> None:
        # A counter has no smoothing; how often the driver updates it the sampler measures.
        super().__init__(name, scope="chip", kind="counter", smoothing_s=0.0,
                         max_power_w=None, wrap_j=None, part="cpu-package")
        self.file = energy_file

    def read_value(self) -> float:
        return self.file.read_int() * 1e-6

    def close(self) -> None:
        self.file.close()


def _devices(fs: Fs, root: Path) -> list[Path]:
    return [root / d for d in fs.listdir(root) if fs.read_text(root / d / "name") == DRIVER]


def probe(root: Path = DEFAULT_ROOT, fs: Fs = REAL_FS) -> Probe:
    """The socket counters of every amd_energy device. No device: no sensor and no problem
    (the machine is not an AMD CPU on such a kernel; RAPL says why the CPU is unmeasured)."""
    found = Probe(BACKEND)
    denied: list[Path] = []
    for device in _devices(fs, root):
        sockets = 0
        for entry in fs.listdir(device):
            m = _LABEL.match(entry)
            label = fs.read_text(device / entry) if m else None
            if m is None or label is None or _CORE.match(label):
                continue  # core counters sit inside their socket's: never read with it
            if not (socket := _SOCKET.match(label)):
                found.notes.append(f"{device / entry}: label {label!r} is neither Esocket nor "
                                   "Ecore; left out")
                continue
            sockets += 1
            path = device / f"energy{m.group(1)}_input"
            handle = open_counter(fs, path, label, denied, found.problems)
            if handle is None:
                continue
            found.sensors.append(AmdSocket(f"amd_energy:socket-{socket[1]}",
                                           handle))
        if sockets == 0:
            found.problems.append(f"{device} is an amd_energy device with no Esocket* "
                                  "energy label: no socket counter to read (core counters "
                                  "alone would miss the socket's uncore)")
    found.sensors.sort(key=lambda s: int(s.name.rsplit("-", 1)[1]))
    if denied:
        more = f" (and {len(denied) - 1} more)" if len(denied) > 1 else ""
        found.problems.append(
            f"cannot read {denied[0]}{more}: permission denied. The amd_energy counters have "
            "been readable by root only since Linux 5.10 (CVE-2020-8694): run phase as root "
            f"(sudo), or `sudo chmod o+r {denied[0].parent}/energy*_input` until the next "
            "reboot")
    for s in found.sensors:
        s.encloses = []
    return found
