"""Linux RAPL through the powercap sysfs interface (Intel, and AMD on recent kernels).

Each zone directory (`intel-rapl:0`, sub-zones `intel-rapl:0:1`, ...) holds `name`,
`energy_uj` (a counter in microjoules) and `max_energy_range_uj` (where it wraps to 0).
We keep the zones whose name is `package-N` (chip), `psys` (board: the whole platform as
the SoC sees it) or `dram` (module). `core`/`uncore` are parts of a package and are left
out. The `intel-rapl-mmio` zones repeat the package counter through another path and are
skipped so no energy is counted twice.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

from phase.results import Scope
from phase.sensors.base import Probe, ReadError, Sensor, SysfsFile, read_number, read_text

BACKEND = "rapl"
DEFAULT_ROOT = Path("/sys/class/powercap")
_ZONE_DIR = re.compile(r"^intel-rapl:\d+(:\d+)*$")

# Since Linux 5.10 (November 2020, CVE-2020-8694 "Platypus") energy_uj is mode 0400 root.
_PERMISSION_FIX = (
    "energy_uj has been readable by root only since Linux 5.10 (2020, CVE-2020-8694): "
    "run phase as root (sudo), or allow reading until the next reboot with "
    "`sudo chmod o+r {glob}`"
)


def _scope(zone_name: str) -> Scope | None:
    if zone_name.startswith("package"):
        return "chip"
    if zone_name == "psys":
        return "board"
    if zone_name == "dram":
        return "module"
    return None


class RaplZone(Sensor):
    backend = BACKEND

    def __init__(self, name: str, scope: Scope, energy_file: SysfsFile, wrap_j: float | None,
                 max_power_w: float | None) -> None:
        # A counter has no smoothing: the edges of a window are read exactly.
        super().__init__(name, scope=scope, kind="counter", smoothing_s=0.0,
                         max_power_w=max_power_w, wrap_j=wrap_j)
        self.file = energy_file

    def read_value(self) -> float:
        return self.file.read_int() * 1e-6

    def close(self) -> None:
        self.file.close()


def _max_power_w(zone: Path) -> float | None:
    """The largest constraint_*_max_power_uw the zone declares; None when it declares none."""
    values = [read_number(p) for p in zone.glob("constraint_*_max_power_uw")]
    positive = [v for v in values if v]
    return max(positive) * 1e-6 if positive else None


def _sensor_name(zone: Path, zone_name: str, root: Path) -> str:
    parts = zone.name.split(":")
    if len(parts) > 2:  # a sub-zone: qualify it by its parent's name ("package-0/dram")
        parent = read_text(root / ":".join(parts[:2]) / "name") or ":".join(parts[:2])
        return f"rapl:{parent}/{zone_name}"
    return f"rapl:{zone_name}"


def probe(root: Path = DEFAULT_ROOT) -> Probe:
    found = Probe(BACKEND)
    if not root.is_dir():
        found.problems.append(
            f"no powercap directory at {root}: this kernel exposes no RAPL here (a virtual "
            "machine or container that hides it, a non-x86 CPU, or the intel_rapl_msr module "
            "not loaded: try `sudo modprobe intel_rapl_msr`)"
        )
        return found
    zones = sorted(p for p in root.iterdir() if _ZONE_DIR.match(p.name))
    if not zones:
        found.problems.append(f"{root} has no intel-rapl:* zones: no RAPL on this CPU or kernel")
        return found
    denied: list[Path] = []
    for zone in zones:
        zone_name = read_text(zone / "name")
        scope = _scope(zone_name or "")
        if zone_name is None or scope is None:
            continue
        path = zone / "energy_uj"
        try:
            energy = SysfsFile(path)
        except PermissionError:
            denied.append(path)
            continue
        except OSError as exc:
            found.problems.append(f"{path}: cannot open: {exc.strerror or exc}")
            continue
        try:
            energy.read_int()  # an open can succeed where a read fails (EISDIR, EACCES, EIO)
        except ReadError as exc:
            energy.close()
            if exc.errno in (errno.EACCES, errno.EPERM):
                denied.append(path)
            else:
                found.problems.append(f"{exc} (zone {zone_name})")
            continue
        max_range = read_number(zone / "max_energy_range_uj")
        found.sensors.append(
            RaplZone(
                _sensor_name(zone, zone_name, root),
                scope,
                energy,
                wrap_j=max_range * 1e-6 if max_range else None,
                max_power_w=_max_power_w(zone),
            )
        )
    if denied:
        more = f" (and {len(denied) - 1} more zone files)" if len(denied) > 1 else ""
        fix = _PERMISSION_FIX.format(glob=denied[0] if len(denied) == 1
                                     else f"{root}/intel-rapl:*/energy_uj")
        found.problems.append(f"cannot read {denied[0]}{more}: permission denied. {fix}")
    return found
