"""Linux RAPL through the powercap sysfs interface (Intel, and AMD on recent kernels).

Each zone directory (`intel-rapl:0`, sub-zones `intel-rapl:0:1`, ...) holds `name`,
`energy_uj` (a counter in microjoules) and `max_energy_range_uj` (where it wraps to 0). Zone
ids are hexadecimal: powercap names each zone `"%s:%x"` (drivers/powercap/powercap_sys.c), so
the eleventh package of a large machine is `intel-rapl:a` and its DRAM `intel-rapl:a:0`.
We keep the zones whose name is `package-N` (chip; one per CPU socket, all of them), `psys`
(board: the whole platform as the SoC sees it, which encloses the packages and the DRAM
zones) or `dram` (module: memory, disjoint from the package). `core`/`uncore` are parts of a
package and are left out. The `intel-rapl-mmio` zones repeat the package counter through
another path and are skipped so no energy is counted twice. AMD CPUs (Zen, Linux 5.11+)
expose the same tree with package and core zones and no power-limit constraints.

Physical bound: `constraint_0_max_power_uw` is the rated TDP (the kernel fills it from the
thermal spec power), not a ceiling: a loaded CPU exceeds it by design (an i9-13900HX reports
55 W there with limits of 135/162/315 W). The bound is the largest power limit or maximum
the zone declares (`constraint_*_power_limit_uw` / `_max_power_uw`: long_term, short_term,
peak_power), marked assumed (a limit is a setting, not a measurement); a zone with none
declares no bound, so the validator's per-scope default applies.
"""

from __future__ import annotations

import re
from pathlib import Path

from phase.results import Scope
from phase.sensors.core.base import Declared, Probe, Sensor
from phase.sensors.core.fs import REAL_FS, Fs, ValueFile, open_counter, read_number

BACKEND = "rapl"
DECLARED = Declared(BACKEND, measures="package", priority=90)
DEFAULT_ROOT = Path("/sys/class/powercap")
# Hexadecimal ids (powercap_sys.c names zones "%s:%x"): a decimal pattern would drop the
# packages from the eleventh on, and the CPU total would silently miss them.
_ZONE_DIR = re.compile(r"^intel-rapl(:[0-9a-f]+)+$")

# Since Linux 5.10 (November 2020, CVE-2020-8694 "Platypus") energy_uj is mode 0400 root.
_PERMISSION_FIX = (
    "energy_uj has been readable by root only since Linux 5.10 (2020, CVE-2020-8694): "
    "run phase as root (sudo), or allow reading until the next reboot with "
    "`sudo chmod o+r {glob}`"
)


def _scope_and_part(zone_name: str) -> tuple[Scope, str] | None:
    if zone_name.startswith("package"):
        return "chip", "cpu-package"
    if zone_name == "psys":
        return "board", "platform"
    if zone_name == "dram":
        return "module", "dram"
    return None


class RaplZone(Sensor):
    backend = BACKEND

    def __init__(self, name: str, scope: Scope, part: str, energy_file: ValueFile,
                 wrap_j: float | None, max_power_w: float | None) -> None:
        # A counter has no smoothing; how coarsely it updates is measured by the sampler.
        super().__init__(name, scope=scope, kind="counter", smoothing_s=0.0,
                         max_power_w=max_power_w, wrap_j=wrap_j, part=part,
                         assumed=("max_power_w",) if max_power_w is not None else ())
        self.file = energy_file

    def read_value(self) -> float:
        return self.file.read_int() * 1e-6

    def close(self) -> None:
        self.file.close()


_CONSTRAINT = re.compile(r"^constraint_\d+_(power_limit|max_power)_uw$")


def _max_power_w(fs: Fs, zone: Path) -> float | None:
    """The largest power limit or maximum any constraint declares; None when none does."""
    values = [read_number(fs, zone / n) for n in fs.listdir(zone) if _CONSTRAINT.match(n)]
    positive = [v for v in values if v]
    return max(positive) * 1e-6 if positive else None


def _zone_key(dirname: str) -> tuple[int, ...]:
    """`intel-rapl:10:0` -> (16, 0): zones in id order, not name order (":10" after ":f")."""
    return tuple(int(part, 16) for part in dirname.split(":")[1:])


def _sensor_name(fs: Fs, zone: Path, zone_name: str, root: Path) -> str:
    parts = zone.name.split(":")
    if len(parts) > 2:  # a sub-zone: qualify it by its parent's name ("package-0/dram")
        parent = fs.read_text(root / ":".join(parts[:2]) / "name") or ":".join(parts[:2])
        return f"rapl:{parent}/{zone_name}"
    return f"rapl:{zone_name}"


def probe(root: Path = DEFAULT_ROOT, fs: Fs = REAL_FS) -> Probe:
    found = Probe(BACKEND)
    if not fs.is_dir(root):
        found.problems.append(
            f"no powercap directory at {root}: this kernel exposes no RAPL here (a virtual "
            "machine or container that hides it, a non-x86 CPU, or the intel_rapl_msr module "
            "not loaded: try `sudo modprobe intel_rapl_msr`)"
        )
        return found
    zones = [root / n for n in sorted((n for n in fs.listdir(root) if _ZONE_DIR.match(n)),
                                      key=_zone_key)]
    if not zones:
        found.problems.append(f"{root} has no intel-rapl:* zones: no RAPL on this CPU or kernel")
        return found
    denied: list[Path] = []
    for zone in zones:
        zone_name = fs.read_text(zone / "name")
        kind = _scope_and_part(zone_name or "")
        if zone_name is None or kind is None:
            continue
        path = zone / "energy_uj"
        energy = open_counter(fs, path, f"zone {zone_name}", denied, found.problems)
        if energy is None:
            continue
        max_range = read_number(fs, zone / "max_energy_range_uj")
        found.sensors.append(
            RaplZone(
                _sensor_name(fs, zone, zone_name, root),
                kind[0],
                kind[1],
                energy,
                wrap_j=max_range * 1e-6 if max_range and max_range > 0 else None,
                max_power_w=_max_power_w(fs, zone),
            )
        )
    _declare_enclosures(found.sensors)
    if denied:
        more = f" (and {len(denied) - 1} more zone files)" if len(denied) > 1 else ""
        fix = _PERMISSION_FIX.format(glob=denied[0] if len(denied) == 1
                                     else f"{root}/intel-rapl:*/energy_uj")
        found.problems.append(f"cannot read {denied[0]}{more}: permission denied. {fix}")
    return found


def _declare_enclosures(sensors: list[Sensor]) -> None:
    """psys encloses every package and every DRAM zone (the platform domain covers the SoC
    and its memory); a package encloses its core/uncore (not recorded) but not dram, which
    is disjoint from it. Declaring only the packages would let a check hold psys against
    the packages alone and take the DRAM's energy for the rest of the board."""
    inside = [s.name for s in sensors if s.part in ("cpu-package", "dram")]
    for s in sensors:
        s.encloses = list(inside) if s.part == "platform" else []
