"""What a "chip energy" figure covers: a closed vocabulary of parts, derived from sensor names.

Two hosts' chip figures compare like for like only where they cover the same parts: on a
Jetson AGX Orin the compute rails include the SoC (VDD_GPU_SOC), on an Orin NX or Orin Nano
the compute rail (VDD_CPU_GPU_CV) does not. `PrimaryEnergy.covers` records the union of
what its sensors cover; the cross-host page compares them.

The parts (PARTS) and where each backend's sensors fall:

* RAPL `package-N` and amd_energy `socket-N`: one CPU package, its cores and everything else
  on the package ("uncore": caches, memory controller, interconnect, on client parts the
  integrated graphics), not the DRAM (a separate RAPL domain). RAPL `dram` zones: dram.
  RAPL `psys`: the platform as the SoC sees it: package, DRAM and the rest of the board.
  (Intel SDM vol. 3B, "Platform Specific Power Management Support", RAPL domains; the
  kernel's Documentation/power/powercap/powercap.rst.)
* NVML: the GPU "and its associated circuitry (e.g. memory)" (NVML API reference,
  nvmlDeviceGetPowerUsage; nvmlDeviceGetTotalEnergyConsumption counts the same device):
  gpu, gpu-memory and the rest of the GPU's board. On a Grace Hopper or Grace Blackwell
  module (part `gpu-module`) the energy counter is the module's (zeus, ml-energy/zeus#172;
  NVML_POWER_SCOPE_MODULE in nvml.h): the Grace CPU with its uncore, its LPDDR5X (dram),
  the GPU with its HBM, and the module's regulators (board).
* Jetson INA3221 rails, per module (NVIDIA Jetson Linux developer guide, "Jetson power
  monitor" / "Power and performance" tables per module; the same rail names jtop
  (rbonghi/jetson_stats) reads and labels):
  - Orin NX, Orin Nano, Xavier NX: VDD_CPU_GPU_CV feeds CPU, GPU and the CV cluster (DLA,
    PVA); VDD_SOC the SoC; VDD_IN the module's input (everything on the module).
  - AGX Orin: VDD_GPU_SOC feeds GPU and SoC; VDD_CPU_CV the CPU and CV cluster;
    VDDQ_VDD2_1V8AO the DRAM (VDDQ, VDD2) and the 1.8 V always-on domain; VIN_SYS_5V0 the
    5 V system rail (peripherals: not a part of the chip phase can name).
  - AGX Xavier: GPU, CPU, CV, SOC rails by name; VDDRQ the DRAM; SYS5V the 5 V system rail.
  - Nano (JetPack 4): POM_5V_GPU the GPU, POM_5V_CPU the CPU, POM_5V_IN the module input.
  - TX2: VDD_SYS_GPU, VDD_SYS_CPU, VDD_SYS_SOC, VDD_SYS_DDR (DRAM), VDD_IN (module input);
    TX1: VDD_GPU, VDD_CPU, VDD_IN.
* Apple (IOReport via zeus, or powermetrics): the CPU rail covers the CPU clusters only
  (not the fabric and memory controller a RAPL package includes), the GPU rail and GPU
  SRAM the GPU, the ANE the neural engine (counted as cv), DRAM dram; powermetrics'
  "combined" package power is CPU + GPU + ANE.
* AMD GPUs (amdgpu hwmon `power1_average`/`power1_input`, amdsmi's energy accumulator): the
  socket power of the GPU package (kernel drivers/gpu/drm/amd/pm/amdgpu_pm.c); on an APU
  the socket is the whole SoC, CPU cores included (MI300A too). An MI250/MI250X package's
  figure, on its primary die, covers both of its dies: still "gpu". Whether a discrete
  card's socket figure includes its memory differs between generations, so gpu-memory is
  not claimed.
* Intel GPUs (i915/xe hwmon; the kernel's sysfs-driver-intel-{i915,xe}-hwmon ABI docs): the
  package counter (xe `energy2_input`, i915 `energy1_input`) covers the GPU package; xe's
  card counter (`energy1_input`) the whole card, memory and regulators included.
* Anything else (a user's meter, a rail phase does not know): "unknown".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, get_args

from pydantic import Field

from phase.results.base import Strict

CoveredPart = Literal["cpu", "uncore", "gpu", "gpu-memory", "cv", "soc", "dram", "board",
                      "unknown"]
PARTS: tuple[CoveredPart, ...] = get_args(CoveredPart)
# Each part in words, for pages and docs.
PART_WORDS: dict[str, str] = {
    "cpu": "CPU cores",
    "uncore": "the rest of the CPU package (caches, memory controller, interconnect)",
    "gpu": "GPU",
    "gpu-memory": "the GPU's own memory",
    "cv": "vision and neural accelerators (Jetson DLA/PVA, Apple ANE)",
    "soc": "the SoC's shared logic (fabric, memory controller, always-on domains)",
    "dram": "system memory (DRAM)",
    "board": "the rest of the board or module (regulators, IO)",
    "unknown": "parts not recorded",
}

_MODULE = ("cpu", "gpu", "cv", "soc", "dram", "board")
# Jetson rail label -> the parts it feeds (see the module docstring for the sources).
JETSON_RAILS: dict[str, tuple[str, ...]] = {
    "VDD_CPU_GPU_CV": ("cpu", "gpu", "cv"),
    "VDD_GPU_SOC": ("gpu", "soc"),
    "VDD_CPU_CV": ("cpu", "cv"),
    "POM_5V_GPU": ("gpu",), "POM_5V_CPU": ("cpu",),
    "VDD_SYS_GPU": ("gpu",), "VDD_SYS_CPU": ("cpu",),
    "VDD_GPU": ("gpu",), "VDD_CPU": ("cpu",),
    "GPU": ("gpu",), "CPU": ("cpu",), "CV": ("cv",),
    "VDD_SOC": ("soc",), "VDD_SYS_SOC": ("soc",), "SOC": ("soc",),
    "VDD_SYS_DDR": ("dram",), "VDDRQ": ("dram",), "VDDQ_VDD2_1V8AO": ("dram", "soc"),
    "VDD_IN": _MODULE, "POM_5V_IN": _MODULE,
}
_APPLE: dict[str, tuple[str, ...]] = {
    "cpu": ("cpu",), "cpu-power": ("cpu",),
    "gpu": ("gpu",), "gpu-sram": ("gpu",), "gpu-power": ("gpu",),
    "ane": ("cv",), "ane-power": ("cv",),
    "dram": ("dram",),
    "package-power": ("cpu", "gpu", "cv"),
}
_CPU_PACKAGE = ("cpu", "uncore")


def _rapl(zone: str) -> tuple[str, ...] | None:
    zone = zone.rsplit("/", 1)[-1]  # a sub-zone ("package-0/dram") is what its own name says
    if zone.startswith("package"):
        return _CPU_PACKAGE
    if zone.startswith("dram"):
        return ("dram",)
    if zone == "psys":
        return (*_CPU_PACKAGE, "dram", "board")
    return None


def _gpu_vendor(backend: str, name: str, part: str | None) -> tuple[str, ...] | None:
    if backend in ("amdgpu", "amdsmi"):
        return ("cpu", "gpu", "soc") if part == "apu-soc" else ("gpu",)
    if part == "gpu-card" or name.endswith(":card"):
        return ("gpu", "gpu-memory", "board")
    return ("gpu",)


def sensor_covers(backend: str | None, name: str,
                  part: str | None = None) -> tuple[str, ...] | None:
    """The parts one sensor's reading covers; None where phase cannot tell. `part`: the
    sensor's own part where the backend knows it (an AMD APU's socket is the whole SoC)."""
    prefix, _, rest = name.partition(":")
    if backend in ("amdgpu", "amdsmi", "intel_gpu"):
        return _gpu_vendor(backend, name, part)
    if backend == "rapl" or (backend is None and prefix == "rapl"):
        return _rapl(rest)
    if backend == "amd_energy" or (backend is None and prefix == "amd_energy"):
        return _CPU_PACKAGE if rest.startswith("socket") else None
    if backend == "nvml" or (backend is None and prefix == "nvml"):
        if part == "gpu-module":
            return ("cpu", "uncore", "gpu", "gpu-memory", "dram", "board")
        return ("gpu", "gpu-memory", "board")
    if backend == "jetson-ina3221" or (backend is None and prefix == "ina3221"):
        return JETSON_RAILS.get(rest)
    if backend == "apple" or (backend is None and prefix == "apple"):
        return _APPLE.get(rest)
    return None


def covers_of(sensors: Iterable[str], backends: Mapping[str, str],
              parts_of: Mapping[str, str | None] | None = None) -> list[CoveredPart]:
    """The union of what the sensors cover, in PARTS order; ["unknown"] where any sensor's
    parts cannot be told (a figure that is partly unknown is not comparable)."""
    found: set[str] = set()
    for name in sensors:
        parts = sensor_covers(backends.get(name), name, (parts_of or {}).get(name))
        if parts is None:
            return ["unknown"]
        found.update(parts)
    return [p for p in PARTS if p in found] or ["unknown"]


def covers_words(parts: Iterable[str]) -> str:
    return ", ".join(PART_WORDS.get(p, p) for p in parts)


def _unknown_parts() -> list[CoveredPart]:
    return ["unknown"]

class PrimaryEnergy(Strict):
    """Which sensors "chip energy" means in this file: the energy of the device that ran the
    model, as the sum of these sensors' windows (two GPUs, two CPU sockets, two compute
    rails), with why they were chosen."""

    sensors: list[str] = Field(min_length=1)
    device: str
    reason: str
    chosen_by: Literal["auto", "override"]
    # The parts of the machine these sensors' energy covers, in phase.results.covers.PARTS
    # order; ["unknown"] where a sensor's parts cannot be told from its backend and name.
    covers: list[CoveredPart] = Field(default_factory=_unknown_parts, min_length=1)
