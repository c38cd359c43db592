"""The GPU sensors of a model that ran on ROCm/HIP, Vulkan or SYCL: AMD and Intel GPUs (and
NVIDIA ones under Vulkan), matched to the devices llama.cpp used.

llama.cpp names them "ROCm0", "Vulkan0", "SYCL0" and, where its backend knows it, logs each
one's PCI bus id; every GPU sensor here carries its card's (amdgpu and i915/xe from the
hwmon device's PCI parent, amdsmi from its BDF, NVML from its PCI info), so a logged id
settles the match whatever order any library enumerates in. Where llama.cpp logged no id
(SYCL, older Vulkan builds) the safe rule is a count: the devices it used of one vendor (told
by the description llama.cpp logged: "AMD", "Radeon", "Intel", "NVIDIA") are taken as all of
that vendor's measurable GPUs only when the two numbers are equal, since a sum over all of
them needs no order; otherwise the choice is refused, with the fix. ROCm devices are AMD's and
SYCL devices Intel's whatever their description says.

Per GPU the best sensor is taken: chip scope before board (an xe card's package counter, not
its card counter), a counter before a power reading (amdsmi's accumulator before hwmon
power), then the least smoothed. An Intel integrated GPU has no sensor of its own (i915 and
xe give hwmon to discrete cards only): the reason says so and names the CPU package counter
that holds it. The two dies of an MI250/MI250X share one figure, on the primary die: a
model on either die is measured by it, and on both it is counted once. An AMD APU's figure
is the whole SoC's, CPU included, so with part of the layers on the CPU nothing is added
for the CPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phase.sensors.core.base import Sensor
from phase.sensors.core.pci import GpuUse, pci_key

ACCELERATORS = ("rocm", "vulkan", "sycl")
_VENDOR_OF_BACKEND = {"amdgpu": "amd", "amdsmi": "amd", "intel_gpu": "intel", "nvml": "nvidia"}
_VENDORS_OF = {"rocm": ("amd",), "sycl": ("intel",), "vulkan": ("amd", "intel", "nvidia")}
_WORDS = {"amd": ("amd", "radeon", "instinct"), "intel": ("intel",),
          "nvidia": ("nvidia", "geforce", "quadro", "tesla")}
_NAMES = {"amd": "AMD", "intel": "Intel", "nvidia": "NVIDIA"}
_RANK_KIND = ("counter", "power")
# Variables that hide or reorder devices for each backend: with them set and no PCI id
# logged, "every GPU of the vendor" may not be what llama.cpp saw.
_VISIBILITY = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
               "GGML_VK_VISIBLE_DEVICES", "ONEAPI_DEVICE_SELECTOR")
_IGPU_SLOT = (0, 0, 2, 0)  # Intel's integrated GPU is always 0000:00:02.0


class NoMatch(Exception):
    """Why no sensor measures the GPU(s) the model ran on, in a sentence."""


Key = tuple[int, int, int, int]


def _cards(sensors: Sequence[Sensor], accelerator: str) -> dict[Key, list[Sensor]]:
    """Each measurable GPU of the backend's vendors: its PCI key -> its sensors."""
    vendors = _VENDORS_OF[accelerator]
    out: dict[Key, list[Sensor]] = {}
    for s in sensors:
        if _VENDOR_OF_BACKEND.get(s.backend) not in vendors:
            continue
        # A dual-die package's figure stands for its secondary die too (phase.sensors.amd.amdgpu)
        for bus_id in (s.pci_bus_id, *getattr(s, "sibling_slots", ())):
            key = pci_key(bus_id)
            if key is not None:
                out.setdefault(key, []).append(s)
    return out


def _bus_id(sensors: list[Sensor], key: Key) -> str:
    """The PCI bus id, as its driver spells it, of the GPU `key` (a die a sibling covers)."""
    ids = [b for s in sensors for b in (s.pci_bus_id, *getattr(s, "sibling_slots", ()))]
    return next((b for b in ids if b and pci_key(b) == key), str(sensors[0].pci_bus_id))


def best(sensors: Sequence[Sensor]) -> Sensor:
    return sorted(sensors, key=lambda s: (s.scope != "chip", _RANK_KIND.index(s.kind),
                                          s.smoothing_s))[0]


def _vendor(gpu: GpuUse, accelerator: str) -> str | None:
    if accelerator == "rocm":
        return "amd"
    if accelerator == "sycl":
        return "intel"
    text = gpu.description.lower()
    named = [v for v, words in _WORDS.items() if any(w in text for w in words)]
    return named[0] if len(named) == 1 else None


def _vendor_of(ss: list[Sensor]) -> str:
    return _VENDOR_OF_BACKEND[ss[0].backend]


def _missing(gpu: GpuUse, accelerator: str, rapl_package: str | None) -> str:
    """Why a device llama.cpp used has no sensor, with the nearest figure where one exists."""
    said = f"{gpu.name} ({gpu.description or 'no description'}"
    said += f", {gpu.pci_bus_id})" if gpu.pci_bus_id else ")"
    if _vendor(gpu, accelerator) == "intel" and (
            gpu.pci_bus_id is None or pci_key(gpu.pci_bus_id) == _IGPU_SLOT
            or "integrated" in gpu.description.lower()):
        where = (f"`--energy-sensor {rapl_package}` measures it with the CPU cores"
                 if rapl_package else "no CPU package counter was found either")
        return (f"{said} has no energy sensor: an Intel integrated GPU has no hwmon energy "
                "counter (i915 and xe register hwmon for discrete cards only); it sits in the "
                f"CPU package, so {where}")
    return (f"{said} matches no measurable GPU here (see the unavailable backends: amdgpu "
            "for AMD cards, intel_gpu for Intel discrete cards, nvml for NVIDIA)")


def _by_count(pending: list[GpuUse], cards: dict[Key, list[Sensor]], accelerator: str,
              env: Mapping[str, str]) -> list[Key]:
    """The GPUs llama.cpp gave no id for, where the vendor counts make it certain."""
    chosen: list[Key] = []
    for vendor in sorted({_vendor(g, accelerator) or "?" for g in pending}):
        used = [g for g in pending if (_vendor(g, accelerator) or "?") == vendor]
        free = [k for k, ss in cards.items() if vendor in ("?", _vendor_of(ss))]
        what = _NAMES.get(vendor, "measurable")
        if len(used) != len(free):
            raise NoMatch(
                f"llama.cpp logged no PCI bus id for {', '.join(g.name for g in used)} and "
                f"used {len(used)} {what} GPU(s), while {len(free)} {what} GPU(s) are "
                "measurable here, so which is which cannot be told; name the sensor(s) with "
                "--energy-sensor (`phase sensors` lists each with its PCI bus id)")
        hiding = [v for v in _VISIBILITY if v in env]
        if len(free) > 1 and hiding:
            raise NoMatch(f"llama.cpp logged no PCI bus id and {', '.join(hiding)} is set, so "
                          f"the {len(free)} {what} GPUs it may have seen cannot be told apart; "
                          "name the sensor(s) with --energy-sensor")
        chosen += free
    return chosen


def choose(sensors: Sequence[Sensor], accelerator: str, gpus: Sequence[GpuUse],
           env: Mapping[str, str], rapl_package: str | None = None
           ) -> tuple[list[Sensor], list[str], str]:
    """(one sensor per GPU used, device labels, how they were matched), or NoMatch."""
    cards = _cards(sensors, accelerator)
    used = list(gpus)
    every = "every"
    if not used:  # nothing logged (a survey): every measurable GPU of the backend's vendors
        if any(ss[0].part != "apu-soc" for ss in cards.values()):
            # llama.cpp adds an integrated GPU only where it finds no other device
            # (llama_model_load_from_file_impl), so an APU's SoC figure is left out here
            every = "every discrete" if len(cards) > 1 else every
            cards = {k: ss for k, ss in cards.items() if ss[0].part != "apu-soc"}
        used = [GpuUse(f"{accelerator}{i}") for i in range(len(cards))]
        if not cards:
            raise NoMatch(f"no {'/'.join(_NAMES[v] for v in _VENDORS_OF[accelerator])} GPU "
                          "sensor was found")
    keys: list[Key] = []
    pending: list[GpuUse] = []
    for gpu in used:
        key = pci_key(gpu.pci_bus_id)
        if key is None:
            pending.append(gpu)
        elif key in cards:
            keys.append(key)
        else:
            raise NoMatch(_missing(gpu, accelerator, rapl_package))
    if pending:
        if not any(k not in keys for k in cards):
            raise NoMatch(_missing(pending[0], accelerator, rapl_package))
        keys += _by_count(pending, {k: v for k, v in cards.items() if k not in keys},
                          accelerator, env)
    if len(set(keys)) != len(keys):
        raise NoMatch("llama.cpp logged one PCI bus id for two devices")
    for k in keys:
        if all(s.scope != "chip" for s in cards[k]):
            raise NoMatch(f"GPU {cards[k][0].pci_bus_id} has only a board-scope sensor "
                          f"({', '.join(s.name for s in cards[k])}: the card with its memory, "
                          "regulators and fans), not its chip's: see why its package counter "
                          "is unavailable, or name the card sensor with --energy-sensor")
    chosen: list[Sensor] = []
    for k in keys:  # two dies of one package share one figure: it is counted once
        pick = best(cards[k])
        if all(pick is not c for c in chosen):
            chosen.append(pick)
    labels = [f"{accelerator}:{i} {_bus_id(cards[k], k)}" for i, k in enumerate(keys)]
    vendors = "/".join(sorted({_NAMES[_vendor_of(cards[k])] for k in keys}))
    how = ("matched by the PCI bus id llama.cpp logged" if not pending
           else f"{every} {vendors} GPU here, as llama.cpp uses them all by default" if not gpus
           else f"every {vendors} GPU here, as many as llama.cpp used (it logged no PCI bus id)")
    return chosen, labels, how
