"""NVIDIA Jetson power rails from the INA3221 monitors, through the mainline hwmon driver.

Each `hwmonN` whose `name` is `ina3221` has up to three channels: `in{i}_label` (the rail),
`in{i}_input` (bus voltage, mV) and `curr{i}_input` (current, mA). Power = V x I.

Scope by rail label: the module's input rail (`VDD_IN` on Orin, `POM_5V_IN` on Nano,
`VIN_SYS_5V0` on Xavier NX) is *board*; `VDD_CPU_GPU_CV` (CPU + GPU + accelerators) is
*chip*; every other rail (SoC, DDR, ...) is *module*.

Smoothing: the INA3221 averages S conversions of each enabled channel before it updates,
so one reading spans the driver's `update_interval` (ms; = channels x S x (bus + shunt
conversion time)). We declare that whole window as the smoothing time constant. A boxcar
of width W lags a step by W/2 on average, so this is deliberately conservative: the lag
rule will reject short windows a little early rather than accept them a little late.
Where the driver does not expose `update_interval` we assume the chip's power-on default:
3 channels x 1 sample x (1.1 ms + 1.1 ms) = 6.6 ms.
"""

from __future__ import annotations

from pathlib import Path

from phase.results import Scope
from phase.sensors.base import Probe, ReadError, Sensor, SysfsFile, read_number, read_text

BACKEND = "jetson-ina3221"
DEFAULT_ROOT = Path("/sys/class/hwmon")
DEFAULT_UPDATE_INTERVAL_S = 3 * 1 * (1.1e-3 + 1.1e-3)
_BOARD_RAILS = {"VDD_IN", "POM_5V_IN", "VIN_SYS_5V0"}
_CHIP_RAILS = {"VDD_CPU_GPU_CV"}
# The INA3221 measures at most 163.84 mV across the shunt and 26 V on the bus.
_MAX_SHUNT_V = 0.16384
_MAX_BUS_V = 26.0


def rail_scope(label: str) -> Scope:
    if label in _BOARD_RAILS:
        return "board"
    if label in _CHIP_RAILS:
        return "chip"
    return "module"


class Ina3221Rail(Sensor):
    backend = BACKEND

    def __init__(self, label: str, volts: SysfsFile, amps: SysfsFile, smoothing_s: float,
                 max_power_w: float | None) -> None:
        super().__init__(f"ina3221:{label}", scope=rail_scope(label), kind="power",
                         smoothing_s=smoothing_s, max_power_w=max_power_w)
        self.volts = volts
        self.amps = amps

    def read_value(self) -> float:
        # mV x mA = microwatts
        return self.volts.read_int() * self.amps.read_int() * 1e-6

    def close(self) -> None:
        self.volts.close()
        self.amps.close()


def _attribute_dir(hwmon: Path) -> Path:
    """Older kernels keep the attributes under hwmonN/device/ instead of hwmonN/."""
    if (hwmon / "in1_input").exists() or not (hwmon / "device" / "in1_input").exists():
        return hwmon
    return hwmon / "device"


def _max_power_w(attrs: Path, channel: int) -> float | None:
    micro_ohm = read_number(attrs / f"shunt{channel}_resistor")
    if not micro_ohm:
        return None
    return _MAX_BUS_V * _MAX_SHUNT_V / (micro_ohm * 1e-6)


def probe(root: Path = DEFAULT_ROOT) -> Probe:
    found = Probe(BACKEND)
    if not root.is_dir():
        found.problems.append(
            f"no hwmon directory at {root}, so no INA3221 power monitor (Jetson boards have one)"
        )
        return found
    monitors = []
    for hwmon in sorted(root.iterdir()):
        name = read_text(hwmon / "name") or read_text(hwmon / "device" / "name")
        if name is not None and name.startswith("ina3221"):
            monitors.append(_attribute_dir(hwmon))
    if not monitors:
        found.problems.append(
            f"no INA3221 power monitor under {root} (Jetson boards have one; this machine "
            "does not look like a Jetson)"
        )
        return found
    for attrs in monitors:
        interval_ms = read_number(attrs / "update_interval")
        smoothing_s = interval_ms * 1e-3 if interval_ms else DEFAULT_UPDATE_INTERVAL_S
        for channel in (1, 2, 3):
            label = read_text(attrs / f"in{channel}_label")
            if not label or label == "NC" or read_text(attrs / f"in{channel}_enable") == "0":
                continue
            rail = _open_rail(attrs, channel, label, smoothing_s, found)
            if rail is not None:
                found.sensors.append(rail)
    if not found.sensors and not found.problems:
        found.problems.append(f"INA3221 monitors under {root} have no labelled, enabled rails")
    return found


def _open_rail(attrs: Path, channel: int, label: str, smoothing_s: float,
               found: Probe) -> Ina3221Rail | None:
    files: list[SysfsFile] = []
    for path in (attrs / f"in{channel}_input", attrs / f"curr{channel}_input"):
        try:
            files.append(SysfsFile(path))
            files[-1].read_int()
        except (OSError, ReadError) as exc:
            for f in files:
                f.close()
            if isinstance(exc, OSError):
                found.problems.append(f"rail {label}: cannot read {path}: {exc.strerror or exc}")
            else:
                found.problems.append(f"rail {label}: {exc}")
            return None
    return Ina3221Rail(label, files[0], files[1], smoothing_s, _max_power_w(attrs, channel))
