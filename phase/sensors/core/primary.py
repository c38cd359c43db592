"""Which sensors measure "chip energy": the device that ran the model, summed over its parts.

* Layers offloaded to NVIDIA GPUs: those GPUs' NVML energy counters (a power reading where a
  GPU has no counter), summed. Which NVML GPU each CUDA device is follows
  phase.sensors.core.cuda_map: by PCI bus id where llama.cpp logged one, else through
  CUDA_VISIBLE_DEVICES (GPU or MIG UUIDs, or numbers where CUDA's order is NVML's), and
  refused where it cannot be told. On a Grace module (GH200) that counter covers the Grace
  CPU and its memory too, so nothing is added for the CPU (phase.sensors.nvidia.nvml).
* Layers offloaded through ROCm/HIP, Vulkan or SYCL: the AMD (amdgpu hwmon, or amdsmi's
  counter) and Intel discrete (i915/xe hwmon) GPUs it used, and NVIDIA ones under Vulkan,
  matched by PCI bus id or a safe count rule (phase.sensors.core.gpu_match); an Intel integrated
  GPU has no sensor of its own, and the reason says so.
* A Jetson (integrated GPU or CPU): its compute rail, or the sum of its compute rails where
  the module has no single one (AGX Orin: VDD_GPU_SOC + VDD_CPU_CV).
* Apple: the rail of the unit that did the work (GPU with Metal, else CPU); the SoC total
  where per-unit rails are missing.
* CPU only: RAPL's package zones, summed across sockets (amd_energy's socket counters on AMD
  CPUs under kernels without AMD RAPL powercap, or where RAPL shows fewer sockets than
  amd_energy; never both); on a Grace Hopper, the module counters that hold the Grace.
* Part of the layers offloaded: the GPUs and the CPU packages together.

The choice, its reason and what it covers (phase.results.covers: which parts of the machine,
so that two hosts' figures are compared like for like only where they cover the same) go
into the results file (`ResultsFile.primary_energy`); a user can override it
(`phase measure --energy-sensor NAME[,NAME]`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from phase.base.errors import UsageProblem
from phase.results import PrimaryEnergy, covers_of
from phase.results.covers import CoveredPart
from phase.sensors.core import gpu_match
from phase.sensors.core.base import Sensor
from phase.sensors.core.cuda_map import GpuUse, NoMatch, gpu_sensors, pci_key
from phase.sensors.core.cuda_map import best as _best

__all__ = ["GpuUse", "Placement", "choose_primary", "override_primary", "pci_key"]

@dataclass(frozen=True)
class Placement:
    """Where the model ran: the build's accelerator, how many layers llama.cpp offloaded
    (None: unknown, taken as all) out of how many, and the accelerator devices it used."""

    accelerator: str = "cpu"
    n_gpu_layers_offloaded: int | None = 0
    n_layers: int | None = None
    gpus: tuple[GpuUse, ...] = field(default_factory=tuple)

    @property
    def on_gpu(self) -> bool:
        return self.accelerator != "cpu" and self.n_gpu_layers_offloaded != 0

    @property
    def partial(self) -> bool:
        return (self.on_gpu and self.n_gpu_layers_offloaded is not None
                and self.n_layers is not None and self.n_gpu_layers_offloaded < self.n_layers)

    def layers_text(self) -> str:
        if self.n_gpu_layers_offloaded is None:
            return "all layers offloaded"
        if self.n_gpu_layers_offloaded == 0:
            return "no layers offloaded"
        of = f" of {self.n_layers}" if self.n_layers is not None else ""
        return f"{self.n_gpu_layers_offloaded}{of} layers offloaded"


def _parts(sensors: Sequence[Sensor], *parts: str) -> list[Sensor]:
    return [s for s in sensors if s.part in parts]


def _cpu_choice(sensors: Sequence[Sensor]) -> tuple[list[Sensor], str] | None:
    """The CPU's own sensors: RAPL packages, an Apple CPU rail, or Jetson compute rails."""
    packages = _parts(sensors, "cpu-package")
    rapl = [s for s in packages if s.backend == "rapl"]
    amd = [s for s in packages if s.backend == "amd_energy"]
    # One backend's sockets only: RAPL and amd_energy read the same MSRs, so a kernel that
    # loads both would otherwise count each socket twice.
    if rapl and amd:
        return _rapl_or_amd_energy(rapl, amd)
    for chosen, what in ((rapl, "RAPL package zone"), (amd, "amd_energy socket counter")):
        if len(chosen) > 1:
            return chosen, f"the {what}s of all {len(chosen)} sockets, summed"
        if chosen:
            return chosen, f"the {what}"
    for part, what in (("apple-cpu", "the CPU rail"), ("apple-soc", "the SoC total")):
        best = _best(_parts(sensors, part))
        if best is not None:
            return [best], what
    return None


def _rapl_or_amd_energy(rapl: list[Sensor], amd: list[Sensor]) -> tuple[list[Sensor], str]:
    """Both drivers read an AMD CPU's energy MSRs (Linux 5.11-5.12 can load both): the one
    whose backend declares the higher priority (RAPL, the kernel's maintained interface),
    unless it shows fewer sockets than the other (a kernel that gives several sockets one
    package zone), where only the other counts every socket."""
    if amd[0].priority > rapl[0].priority and len(amd) >= len(rapl):
        summed = (f"the amd_energy socket counters of all {len(amd)} sockets, summed"
                  if len(amd) > 1 else "the amd_energy socket counter")
        return amd, (f"{summed}; RAPL's package zones read the same MSRs, so they are not "
                     "added (amd_energy's backend declares the higher priority here)")
    if len(amd) > len(rapl):
        return amd, (f"the amd_energy socket counters of all {len(amd)} sockets, summed; "
                     f"RAPL shows only {len(rapl)} package zone(s) for them (a kernel that "
                     "registers one zone for several sockets), so it is not used, and "
                     "never added: both read the same MSRs")
    summed = (f"the RAPL package zones of all {len(rapl)} sockets, summed" if len(rapl) > 1
              else "the RAPL package zone")
    return rapl, (f"{summed}; amd_energy's socket counters read the same MSRs, so they are "
                  "not added (RAPL is the kernel's maintained driver; amd_energy was removed "
                  "in Linux 5.13)")


def _jetson_choice(sensors: Sequence[Sensor]) -> tuple[list[Sensor], str] | None:
    rails = _parts(sensors, "compute-rail")
    if not rails:
        return None
    if len(rails) == 1:
        return rails, "the module's compute rail (CPU, GPU and accelerators)"
    return rails, "the module's compute rails, summed (it has no single one)"


def _apple_gpu_choice(sensors: Sequence[Sensor]) -> tuple[list[Sensor], str] | None:
    gpu = _parts(sensors, "apple-gpu")
    counters = [s for s in gpu if s.kind == "counter"]
    if counters:
        return counters, "the GPU rail" + (" (GPU and GPU SRAM, summed)" if len(counters) > 1
                                           else "")
    best = _best(gpu) or _best(_parts(sensors, "apple-soc"))
    if best is None:
        return None
    return [best], "the GPU rail" if best.part == "apple-gpu" else "the SoC total"


def choose_primary(sensors: Sequence[Sensor], placement: Placement,
                   env: Mapping[str, str] | None = None
                   ) -> tuple[PrimaryEnergy | None, str | None]:
    """The automatic choice, or None and why no sensor measures the device."""
    env = os.environ if env is None else env
    where = f"the model ran on {placement.accelerator} ({placement.layers_text()})"
    jetson = _jetson_choice(sensors)
    if jetson is not None:  # the integrated GPU and the CPU share the module's rails
        return _made(jetson[0], "jetson", f"{where}; {jetson[1]}"), None
    if placement.on_gpu and placement.accelerator == "metal":
        apple = _apple_gpu_choice(sensors)
        if apple is None:
            return None, f"{where}, but no Apple GPU or SoC sensor was found"
        return _made(apple[0], "metal", f"{where}; {apple[1]}"), None
    if placement.on_gpu and placement.accelerator in gpu_match.ACCELERATORS:
        return _other_gpu_choice(sensors, placement, env, where)
    cpu = _cpu_choice(sensors) or _grace_cpu_choice(sensors)
    if not placement.on_gpu:
        if cpu is None:
            return None, (f"{where}, but no sensor measures the CPU (no RAPL package "
                          "zone, nor an amd_energy socket counter)")
        return _made(cpu[0], "cpu", f"{where}; {cpu[1]}"), None
    return _cuda_choice(sensors, placement, env, where)


def _cuda_choice(sensors: Sequence[Sensor], placement: Placement, env: Mapping[str, str],
                 where: str) -> tuple[PrimaryEnergy | None, str | None]:
    """CUDA: the NVML sensors of the GPUs it used, plus the CPU where it ran some layers."""
    cpu = _cpu_choice(sensors)
    try:
        gpus, labels = gpu_sensors(sensors, placement.gpus, env)
    except NoMatch as exc:
        return None, f"{where}, but its GPU energy cannot be measured: {exc}"
    what = "energy counter" if all(s.kind == "counter" for s in gpus) else "power reading"
    reason = (f"{where}; the NVML {what} of the GPU it used" if len(gpus) == 1 else
              f"{where}; the NVML {what}s of the {len(gpus)} GPUs it used, summed")
    mig = [s.name for s in gpus if getattr(getattr(s, "gpu", None), "mig_enabled", False)]
    if mig:
        reason += ("; MIG mode is on, so the whole-GPU figure includes the work of other MIG "
                   f"instances ({', '.join(mig)})")
    module = [s for s in gpus if s.part == "gpu-module"]
    if module:
        refused = _grace_blackwell_pair(module)
        if refused:
            return None, f"{where}, but {refused}"
        reason += ("; a Grace module: NVML's energy counter covers the whole module (Grace "
                   "CPU, its LPDDR5X, the GPU and its HBM), so no CPU sensor is added to it")
    device = ", ".join(labels)
    if placement.partial and len(module) == len(gpus):
        # other Grace Hopper modules' CPUs (a Grace Blackwell's sibling GPU shares this Grace)
        rest = {s.device for s in sensors if s.part == "gpu-module" and _arch(s) < _BLACKWELL}
        rest -= {s.device for s in gpus}
        reason += " (the CPU's share of the layers is in it already" + (
            f", as far as its threads ran on these modules' Grace: {len(rest)} other "
            "module(s) here are not in the figure)" if rest else ")")
    elif placement.partial:
        if cpu is None:
            return None, f"{where}: the CPU ran the other layers and no sensor measures it"
        return _made([*gpus, *cpu[0]], f"{device} + cpu",
                     f"{reason}; plus the CPU, which ran the other layers: {cpu[1]}"), None
    return _made(gpus, device, reason), None


_BLACKWELL = 10  # NVML_DEVICE_ARCH_BLACKWELL


def _arch(s: Sensor) -> int:
    return int(getattr(getattr(s, "gpu", None), "architecture", 0) or 0)


def _grace_cpu_choice(sensors: Sequence[Sensor]) -> tuple[list[Sensor], str] | None:
    """A Grace CPU alone: phase reads no sensor of its own (no RAPL on Arm), but each Grace
    Hopper module's energy counter holds it, with the idle GPU and the memory. Not on Grace
    Blackwell, whose counters share a Grace between two GPUs in a way NVML does not show."""
    module = [s for s in sensors if s.part == "gpu-module" and s.kind == "counter"]
    if not module or any(_arch(s) >= _BLACKWELL for s in module):
        return None
    what = (f"the energy counters of all {len(module)} Grace Hopper modules, summed"
            if len(module) > 1 else "the Grace Hopper module's energy counter")
    return module, (f"{what}: the Grace CPU has no counter of its own here, and the module's "
                    "holds it, with the idle GPU, its HBM and the LPDDR5X")


def _grace_blackwell_pair(module: Sequence[Sensor]) -> str | None:
    """Why a sum of Grace Blackwell module counters is refused, or None. One Grace CPU serves
    two Blackwell GPUs there (GB200, GB300), so each GPU's module figure includes that shared
    Grace: summing two would count it twice, and NVML does not say which GPUs share one."""
    blackwell = [s.name for s in module if _arch(s) >= _BLACKWELL]
    if len(blackwell) < 2:
        return None
    return (f"the GPUs it used ({', '.join(blackwell)}) are Grace Blackwell GPUs whose energy "
            "counters each cover a module whose Grace CPU two GPUs share: summing them would "
            "count a Grace twice; run on one GPU, or name the sensors with --energy-sensor")


def _other_gpu_choice(sensors: Sequence[Sensor], placement: Placement, env: Mapping[str, str],
                      where: str) -> tuple[PrimaryEnergy | None, str | None]:
    """ROCm/HIP, Vulkan or SYCL: the AMD/Intel (or, under Vulkan, NVIDIA) GPUs it used."""
    cpu = _cpu_choice(sensors)
    package = cpu[0][0].name if cpu and cpu[0][0].part == "cpu-package" else None
    try:
        gpus, labels, how = gpu_match.choose(sensors, placement.accelerator, placement.gpus,
                                             env, package)
    except gpu_match.NoMatch as exc:
        return None, f"{where}, but its GPU energy cannot be measured: {exc}"
    kinds = {"energy counter" if s.kind == "counter" else "power reading" for s in gpus}
    what = " and ".join(sorted({s.name.split(":", 1)[0] for s in gpus})) + " " + \
        (kinds.pop() if len(kinds) == 1 else "energy counter or power reading")
    reason = (f"{where}; the {what} of the GPU it used ({how})" if len(gpus) == 1 else
              f"{where}; the {what}s of the {len(gpus)} GPUs it used, summed ({how})")
    reason += _dual_die(gpus, labels)
    apu = any(s.part == "apu-soc" for s in gpus)
    if apu:
        reason += "; an APU: its figure is the whole SoC's, CPU cores included"
    device = ", ".join(labels)
    if placement.partial and not apu:
        if cpu is None:
            return None, f"{where}: the CPU ran the other layers and no sensor measures it"
        return _made([*gpus, *cpu[0]], f"{device} + cpu",
                     f"{reason}; plus the CPU, which ran the other layers: {cpu[1]}"), None
    if placement.partial:
        others = _other_apus(sensors, gpus)
        reason += f" (so the CPU's share of the layers is in it already{others})"
    return _made(gpus, device, reason), None


def _other_apus(sensors: Sequence[Sensor], gpus: Sequence[Sensor]) -> str:
    """APU sockets the figure leaves out (an MI300A node has four): CPU threads on their
    cores are not in it."""
    used = {pci_key(s.pci_bus_id) for s in gpus}
    others = {pci_key(s.pci_bus_id) for s in sensors if s.part == "apu-soc"} - used
    return (f", as far as its threads ran on these APUs' cores: {len(others)} other APU "
            "socket(s) here are not in the figure") if others else ""


def _dual_die(gpus: Sequence[Sensor], labels: Sequence[str]) -> str:
    """What MI250/MI250X package figures hold: both dies, whichever llama.cpp used."""
    used = {pci_key(label.rsplit(" ", 1)[-1]) for label in labels}
    pairs: list[str] = []
    idle: list[str] = []
    for s in gpus:
        siblings = getattr(s, "sibling_slots", ())
        if siblings:
            pairs.append(f"{s.pci_bus_id} for {', '.join(siblings)}")
            idle += [str(b) for b in (s.pci_bus_id, *siblings) if pci_key(b) not in used]
    if not pairs:
        return ""
    out = ("; each MI250/MI250X package's power, both dies', is reported on its primary die "
           f"only ({'; '.join(pairs)}): {len(labels)} dies used, {len(gpus)} figure(s), each "
           "package counted once")
    if idle:
        out += f", so die(s) {', '.join(idle)}, which llama.cpp did not use, are in it too"
    return out


def _covers(sensors: Sequence[Sensor], names: Sequence[str]) -> list[CoveredPart]:
    return covers_of(names, {s.name: s.backend for s in sensors},
                     {s.name: s.part for s in sensors})


def _made(sensors: Sequence[Sensor], device: str, reason: str) -> PrimaryEnergy:
    names = [s.name for s in sensors]
    return PrimaryEnergy(sensors=names, device=device, reason=reason, chosen_by="auto",
                         covers=_covers(sensors, names))


def override_primary(sensors: Sequence[Sensor], names: Sequence[str],
                     placement: Placement, env: Mapping[str, str] | None = None) -> PrimaryEnergy:
    """`--energy-sensor NAME[,NAME]`: the named sensors, checked to exist."""
    known = [s.name for s in sensors]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise UsageProblem(f"--energy-sensor {','.join(names)}: no such sensor "
                           f"{', '.join(unknown)}; sensors here: {', '.join(known) or 'none'} "
                           "(see `phase sensors`)")
    if len(set(names)) != len(names):
        raise UsageProblem(f"--energy-sensor {','.join(names)}: a sensor is named twice")
    auto, why = choose_primary(sensors, placement, env)
    automatic = (f"{', '.join(auto.sensors)} ({auto.reason})" if auto is not None
                 else f"none ({why})")
    return PrimaryEnergy(sensors=list(names), device=auto.device if auto else
                         placement.accelerator, chosen_by="override",
                         covers=_covers(sensors, names),
                         reason=f"named with --energy-sensor; the automatic choice was "
                                f"{automatic}")
