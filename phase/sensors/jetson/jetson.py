"""NVIDIA Jetson power rails from the on-module INA3221 monitors.

Two drivers expose them:

* JetPack 5 and later: the mainline hwmon driver. Each `hwmonN` whose `name` is `ina3221`
  has up to three channels: `in{i}_label` (the rail), `in{i}_input` (bus voltage, mV) and
  `curr{i}_input` (current, mA); power = V x I. Unused channels are labelled `NC`.
* JetPack 4 (original Nano, TX1/TX2, Xavier on JP4): NVIDIA's `ina3221x` IIO driver under
  `/sys/bus/iio/devices/iio:deviceN`, with `rail_name_{i}` and `in_power{i}_input` (mW).

What a rail measures depends on the module, and its label says which (NVIDIA Jetson Linux
developer guide, "Jetson power monitor"; the same tables jtop reads):

| module | module input (scope module) | compute rails (scope chip) | other rails (module) |
|---|---|---|---|
| Orin NX / Orin Nano, Xavier NX | VDD_IN | VDD_CPU_GPU_CV | VDD_SOC |
| AGX Orin | (none measured) | VDD_GPU_SOC, VDD_CPU_CV | VIN_SYS_5V0 (5 V system), VDDQ_VDD2_1V8AO |
| AGX Xavier | (none measured) | GPU, CPU, CV | SOC, VDDRQ, SYS5V |
| Nano (JP4) | POM_5V_IN | POM_5V_GPU, POM_5V_CPU | |
| TX2 (JP4) | VDD_IN | VDD_SYS_GPU, VDD_SYS_CPU | VDD_SYS_SOC, VDD_SYS_DDR, VDD_4V0_WIFI |

The module input excludes the carrier board, so it is `module`, not `board`, and it encloses
every other rail of the module. Where a module has no single compute rail, the primary energy
figure is the sum of its compute rails (phase.sensors.core.primary).

Smoothing: the INA3221 averages S conversions of each enabled channel before it updates, so
one reading spans the hwmon driver's `update_interval` (ms; = channels x S x (bus + shunt
conversion time)). We declare that whole window as the smoothing time constant: a boxcar of
width W lags a step by W/2 on average, so the lag rule rejects short windows a little early
rather than accept them late. Where the driver does not expose it (the IIO driver never
does) we assume the chip's power-on default, 3 channels x 1 sample x (1.1 + 1.1) ms = 6.6 ms,
and mark the smoothing as assumed.
"""

from __future__ import annotations

import re
from pathlib import Path

from phase.results import Scope
from phase.sensors.core.base import Declared, Probe, ReadError, Sensor
from phase.sensors.core.fs import REAL_FS, Fs, ValueFile, open_checked, read_number

BACKEND = "jetson-ina3221"
DECLARED = Declared(BACKEND, measures="soc", priority=70)
DEFAULT_ROOT = Path("/sys/class/hwmon")
DEFAULT_IIO_ROOT = Path("/sys/bus/iio/devices")
DEFAULT_UPDATE_INTERVAL_S = 3 * 1 * (1.1e-3 + 1.1e-3)
MODULE_INPUT_RAILS = frozenset({"VDD_IN", "POM_5V_IN"})
COMPUTE_RAILS = frozenset({
    "VDD_CPU_GPU_CV", "VDD_GPU_SOC", "VDD_CPU_CV", "POM_5V_GPU", "POM_5V_CPU",
    "VDD_SYS_GPU", "VDD_SYS_CPU", "VDD_GPU", "VDD_CPU", "GPU", "CPU", "CV",
})
OTHER_RAILS = frozenset({
    "VDD_SOC", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO", "SOC", "VDDRQ", "SYS5V", "VDD_SYS_SOC",
    "VDD_SYS_DDR", "VDD_4V0_WIFI",
})
# The INA3221 measures at most 163.84 mV across the shunt and 26 V on the bus.
_MAX_SHUNT_V = 0.16384
_MAX_BUS_V = 26.0
_IIO_RAIL = re.compile(r"^rail_name_(\d+)$")


def rail_scope_and_part(label: str) -> tuple[Scope, str]:
    if label in MODULE_INPUT_RAILS:
        return "module", "module-input"
    if label in COMPUTE_RAILS:
        return "chip", "compute-rail"
    return "module", "rail"


class JetsonRail(Sensor):
    """One rail's power in W: V x I (hwmon, mV x mA) or the driver's own power (IIO, mW)."""

    backend = BACKEND

    def __init__(self, label: str, files: list[ValueFile], scale: float, smoothing_s: float,
                 max_power_w: float | None, *, assumed: tuple[str, ...] = ()) -> None:
        scope, part = rail_scope_and_part(label)
        super().__init__(f"ina3221:{label}", scope=scope, kind="power", smoothing_s=smoothing_s,
                         max_power_w=max_power_w, part=part, assumed=assumed)
        self.label = label
        self.files = files
        self.scale = scale

    def read_value(self) -> float:
        value = float(self.scale)
        for f in self.files:
            value *= f.read_int()
        return value

    def close(self) -> None:
        for f in self.files:
            f.close()


def _attribute_dir(fs: Fs, hwmon: Path) -> Path:
    """Older kernels keep the attributes under hwmonN/device/ instead of hwmonN/."""
    if fs.exists(hwmon / "in1_input") or not fs.exists(hwmon / "device" / "in1_input"):
        return hwmon
    return hwmon / "device"


def _max_power_w(fs: Fs, attrs: Path, channel: int) -> float | None:
    micro_ohm = read_number(fs, attrs / f"shunt{channel}_resistor")
    if not micro_ohm:
        return None
    return _MAX_BUS_V * _MAX_SHUNT_V / (micro_ohm * 1e-6)


def _open_files(fs: Fs, paths: list[Path], label: str, found: Probe) -> list[ValueFile] | None:
    files: list[ValueFile] = []
    for path in paths:
        try:
            files.append(open_checked(fs, path))
        except (OSError, ReadError) as exc:
            for f in files:
                f.close()
            why = f"cannot read {path}: {exc.strerror or exc}" if isinstance(exc, OSError) \
                else str(exc)
            found.problems.append(f"rail {label}: {why}")
            return None
    return files


def _hwmon_rails(fs: Fs, root: Path, found: Probe) -> int:
    """Rails of every hwmon ina3221; returns how many monitors there were."""
    monitors = []
    for name in fs.listdir(root):
        hwmon = root / name
        kind = fs.read_text(hwmon / "name") or fs.read_text(hwmon / "device" / "name")
        if kind is not None and kind.startswith("ina3221"):
            monitors.append(_attribute_dir(fs, hwmon))
    for attrs in monitors:
        interval_ms = read_number(fs, attrs / "update_interval")
        smoothing_s = interval_ms * 1e-3 if interval_ms else DEFAULT_UPDATE_INTERVAL_S
        assumed = () if interval_ms else ("smoothing_s",)
        for channel in (1, 2, 3):
            label = fs.read_text(attrs / f"in{channel}_label")
            if not label or label == "NC" or fs.read_text(attrs / f"in{channel}_enable") == "0":
                continue
            paths = [attrs / f"in{channel}_input", attrs / f"curr{channel}_input"]
            files = _open_files(fs, paths, label, found)
            if files is not None:  # mV x mA = microwatts
                found.sensors.append(JetsonRail(label, files, 1e-6, smoothing_s,
                                                _max_power_w(fs, attrs, channel),
                                                assumed=assumed))
    return len(monitors)


def _iio_rails(fs: Fs, root: Path, found: Probe) -> int:
    """Rails of every JetPack 4 `ina3221x` IIO device; returns how many devices there were."""
    devices = [root / n for n in fs.listdir(root)
               if (fs.read_text(root / n / "name") or "").startswith("ina3221")]
    for device in devices:
        for entry in fs.listdir(device):
            match = _IIO_RAIL.match(entry)
            label = fs.read_text(device / entry) if match else None
            if not match or not label or label == "NC":
                continue
            files = _open_files(fs, [device / f"in_power{match.group(1)}_input"], label, found)
            if files is not None:  # mW
                found.sensors.append(JetsonRail(label, files, 1e-3, DEFAULT_UPDATE_INTERVAL_S,
                                                None, assumed=("smoothing_s",)))
    return len(devices)


def probe(root: Path = DEFAULT_ROOT, iio_root: Path = DEFAULT_IIO_ROOT,
          fs: Fs = REAL_FS) -> Probe:
    found = Probe(BACKEND)
    monitors = _hwmon_rails(fs, root, found) if fs.is_dir(root) else 0
    monitors += _iio_rails(fs, iio_root, found) if fs.is_dir(iio_root) else 0
    if monitors == 0:
        found.problems.append(
            f"no INA3221 power monitor: none under {root} (hwmon driver, JetPack 5 and later) "
            f"nor {iio_root} (ina3221x IIO driver, JetPack 4); Jetson modules have one, this "
            "machine does not"
        )
        return found
    if not found.sensors and not found.problems:
        found.problems.append(f"the INA3221 monitors under {root} / {iio_root} have no "
                              "labelled, enabled rails")
    _declare(found)
    return found


def _declare(found: Probe) -> None:
    """A module input encloses every other rail; other rails enclose nothing."""
    names = [s.name for s in found.sensors]
    for s in found.sensors:
        s.encloses = [n for n in names if n != s.name] if s.part == "module-input" else []
        label = s.name.removeprefix("ina3221:")
        if label not in MODULE_INPUT_RAILS | COMPUTE_RAILS | OTHER_RAILS:
            found.notes.append(f"{s.name}: not a rail phase knows; recorded as scope module, "
                               "enclosing nothing")
