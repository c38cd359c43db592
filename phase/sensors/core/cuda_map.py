"""Which NVML GPU each CUDA device is: the map phase.sensors.core.primary needs to measure the GPUs
llama.cpp used.

The rules, in the order they are tried:

1. A PCI bus id (llama.cpp logs one per device; a snapshot records CUDA's own list) is
   matched to NVML's: it settles the device whatever the numbering.
2. CUDA_VISIBLE_DEVICES names the devices CUDA sees, in its order: GPU UUIDs (or prefixes),
   MIG instance UUIDs (the GPU holding the instance, from NVML's list of its instances; the
   old `MIG-GPU-<uuid>/<gi>/<ci>` form by its GPU's UUID) or numbers.
3. Numbers (in CUDA_VISIBLE_DEVICES, or CUDA's own when it is unset) are NVML's indices only
   where CUDA numbers GPUs as NVML does: CUDA_DEVICE_ORDER=PCI_BUS_ID, or every GPU of the
   machine the same model (CUDA's default is fastest first, ties in PCI order).
4. A GPU NVML counted but could not read (lost, no permission) may or may not be counted by
   CUDA, so numbers from its index on are refused: a number below it is the same GPU either
   way.

Anything else is refused with the reason (`NoMatch`): a wrong GPU is never silently measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phase.sensors.core.base import Sensor
from phase.sensors.core.pci import GpuUse, pci_key

_COUNTER_FIRST = ("counter", "power")


class NoMatch(Exception):
    """Why the GPUs a model used cannot be told apart from the others (one line)."""


def best(sensors: Sequence[Sensor]) -> Sensor | None:
    """A counter before a power reading, then the least smoothed."""
    ranked = sorted(sensors, key=lambda s: (_COUNTER_FIRST.index(s.kind), s.smoothing_s))
    return ranked[0] if ranked else None


Groups = dict[str, list[Sensor]]


def nvml_by_gpu(sensors: Sequence[Sensor]) -> Groups:
    out: Groups = {}
    for s in sensors:
        if s.part in ("gpu", "gpu-module"):  # a Grace module's counter is its GPU's too
            out.setdefault(s.device or s.name.rsplit(":", 1)[0], []).append(s)
    return out


def _gpu(groups: Groups, g: str) -> object:
    return getattr(groups[g][0], "gpu", None)


def _nvml_index(groups: Groups, g: str) -> int | None:
    return getattr(_gpu(groups, g), "index", None)


def _uuids(groups: Groups) -> str:
    return ", ".join(g for g in groups if g.startswith("GPU-")) or "none (NVML gave no UUID)"


def _first_unread(groups: Groups) -> tuple[int, int] | None:
    """(the first NVML index with no sensor, NVML's GPU count), or None when all were read."""
    count = max((getattr(_gpu(groups, g), "nvml_count", None) or 0 for g in groups), default=0)
    read = {_nvml_index(groups, g) for g in groups}
    missing = [i for i in range(count) if i not in read]
    return (missing[0], count) if missing else None


def _unread_refusal(first: int, count: int, what: str) -> NoMatch:
    return NoMatch(f"NVML counts {count} GPUs but reads none of GPU {first} (see the "
                   "unavailable backends), and CUDA may number the GPUs after it with or "
                   f"without it, so {what} cannot be told with no PCI bus id from llama.cpp; "
                   "name the GPUs by UUID in CUDA_VISIBLE_DEVICES (`nvidia-smi -L`), or the "
                   "sensors with --energy-sensor")


def _visible_entries(visible: str) -> list[str]:
    """CUDA_VISIBLE_DEVICES's entries as CUDA reads them: it stops at the first entry that
    names no device (CUDA's documentation: "0,2,-1,1" shows GPUs 0 and 2), so `-1` and
    Slurm's `NoDevFiles` hide every GPU. Raises NoMatch where that leaves none."""
    entries = [e.strip() for e in visible.split(",")]
    if not any(entries):
        raise NoMatch(f"CUDA_VISIBLE_DEVICES is set but empty ({visible!r}), so CUDA sees no "
                      "GPU and nothing ran on one; unset it, or name the GPUs "
                      "(`nvidia-smi -L` lists them)")
    kept: list[str] = []
    for entry in entries:
        if not (entry.isdigit() or entry.startswith(("GPU-", "MIG-"))):
            break
        kept.append(entry)
    if not kept:
        raise NoMatch(f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU from CUDA: its first "
                      f"entry {entries[0]!r} names no device (CUDA stops there; `-1` is the "
                      "usual way to hide them all, and Slurm sets `NoDevFiles` for a job given "
                      "no GPU), so nothing ran on a GPU; unset it, or name the GPUs")
    return kept


def _mig_owner(groups: Groups, entry: str) -> list[str]:
    """The GPU holding MIG instance `entry` (a UUID, a prefix, or `MIG-GPU-<uuid>/gi/ci`)."""
    if entry.startswith("MIG-GPU-"):
        gpu_uuid = entry[len("MIG-"):].split("/", 1)[0].lower()
        return [g for g in groups if g.lower().startswith(gpu_uuid)]
    listed = {g: getattr(_gpu(groups, g), "mig_uuids", None) for g in groups}
    if all(uuids is None for uuids in listed.values()):
        raise NoMatch(f"CUDA_VISIBLE_DEVICES entry {entry!r} is a MIG instance: NVML reads "
                      "energy per whole GPU, and NVML listed no GPU's MIG instances here, so "
                      "which GPU holds it cannot be told; name that GPU with --energy-sensor "
                      "(`nvidia-smi -L` lists each GPU with its MIG devices)")
    match = [g for g, uuids in listed.items()
             if any(u.lower().startswith(entry.lower()) for u in uuids or ())]
    if len(match) != 1:
        instances = ", ".join(u for uuids in listed.values() for u in uuids or ()) or "none"
        which = "matches no" if not match else f"matches {len(match)} of the"
        raise NoMatch(f"CUDA_VISIBLE_DEVICES entry {entry!r} {which} MIG instances NVML lists "
                      f"here ({instances}); give one from `nvidia-smi -L`")
    return match


def _entry_gpu(groups: Groups, entry: str, by_index: list[str]) -> list[str]:
    """The NVML GPU one CUDA_VISIBLE_DEVICES entry names; NoMatch where none or several."""
    if entry.startswith("MIG-"):
        return _mig_owner(groups, entry)
    if entry.startswith("GPU-"):
        match = [g for g in groups if g.lower().startswith(entry.lower())]
        if len(match) != 1:
            which = "matches no" if not match else f"matches {len(match)} of the"
            raise NoMatch(f"CUDA_VISIBLE_DEVICES entry {entry!r} {which} GPUs NVML reads here "
                          f"({_uuids(groups)}); give a UUID from `nvidia-smi -L`, or a longer "
                          "prefix")
        return match
    # An index counts every GPU the driver has, including one NVML could not open: never
    # slide onto the next GPU that it could.
    match = [g for g in by_index if _nvml_index(groups, g) == int(entry)]
    if not match:
        raise NoMatch(f"CUDA_VISIBLE_DEVICES entry {entry!r} names GPU {entry}, which NVML "
                      "does not read here (see the unavailable backends), so its energy "
                      "cannot be measured")
    unread = _first_unread(groups)
    if unread is not None and int(entry) > unread[0]:
        raise _unread_refusal(*unread, f"which GPU CUDA_VISIBLE_DEVICES entry {entry!r} is")
    return match


Unread = tuple[int, int] | None


def visible_order(groups: Groups, env: Mapping[str, str]) -> tuple[list[str], Unread]:
    """NVML GPUs in the order CUDA numbers them, or NoMatch saying why it cannot be told;
    and, where the list stops short of CUDA's at a GPU NVML could not read, that GPU's index
    and NVML's count."""
    by_index = sorted(groups, key=lambda g: _nvml_index(groups, g) or 0)
    visible = env.get("CUDA_VISIBLE_DEVICES")
    unread = None
    if visible is not None:
        order: list[str] = []
        mig_seen: set[str] = set()
        for entry in _visible_entries(visible):
            match = _entry_gpu(groups, entry, by_index)
            if match[0] in order and not (entry.startswith("MIG-") and match[0] in mig_seen):
                raise NoMatch(f"CUDA_VISIBLE_DEVICES={visible!r} names one GPU twice")
            if entry.startswith("MIG-"):
                mig_seen.add(match[0])  # two instances of one GPU: two CUDA devices, one GPU
            order.append(match[0])
    else:
        order = by_index
        unread = _first_unread(groups)
        if unread is not None:
            order = [g for g in by_index if (_nvml_index(groups, g) or 0) < unread[0]]
    # CUDA numbers every GPU fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID; NVML numbers
    # them in PCI order. The two agree only where all the machine's GPUs are one model
    # (ties go in PCI order), so the models of all of them decide, not only of those chosen:
    # on an H100 + L40S host, CUDA device 1 may be NVML's GPU 0. A list of UUIDs sets the
    # order itself and needs no index.
    by_number = visible is None or any(e.isdigit() for e in _visible_entries(visible))
    models = sorted({str(getattr(_gpu(groups, g), "name", None)) for g in groups})
    if by_number and len(models) > 1 and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        raise NoMatch(f"this machine's GPUs differ ({', '.join(models)}) and llama.cpp gave "
                      "no PCI bus id, so CUDA's device numbers (fastest first) cannot be "
                      "matched to NVML's (PCI order); set CUDA_DEVICE_ORDER=PCI_BUS_ID, or "
                      "name the GPUs by UUID in CUDA_VISIBLE_DEVICES (`nvidia-smi -L`)")
    return order, unread


def gpu_sensors(sensors: Sequence[Sensor], used: Sequence[GpuUse],
                env: Mapping[str, str]) -> tuple[list[Sensor], list[str]]:
    """One sensor per GPU the model used (`used`: as llama.cpp logged them; none logged:
    every GPU CUDA sees), and the device labels; NoMatch where one cannot be told."""
    groups = nvml_by_gpu(sensors)
    if not groups:
        raise NoMatch("NVML found no GPU sensor")
    order: list[str] | None = None
    unread: Unread = None
    if not used:  # nothing logged: every GPU CUDA can see
        order, unread = visible_order(groups, env)
        if unread is not None:
            raise _unread_refusal(*unread, "which GPUs CUDA sees (the model ran on all of them)")
        if not order:  # cannot happen (an unmatched entry raises); never an empty choice
            raise NoMatch("CUDA sees no GPU here")
        used = [GpuUse(f"CUDA{i}") for i in range(len(order))]
    chosen: list[Sensor] = []
    labels: list[str] = []
    for gpu in used:
        key = pci_key(gpu.pci_bus_id)
        match = [g for g, ss in groups.items() if key and pci_key(ss[0].pci_bus_id) == key]
        if key is not None and not match:  # its bus id settles it: no guess by number
            raise NoMatch(f"{gpu.name} ({gpu.description or 'no description'}) is the GPU at "
                          f"PCI {gpu.pci_bus_id}, which NVML does not read here (see the "
                          "unavailable backends), so its energy cannot be measured")
        if not match:
            if order is None:
                order, unread = visible_order(groups, env)
            if gpu.index is not None and gpu.index >= len(order) and unread is not None:
                raise _unread_refusal(*unread, f"which GPU {gpu.name} is")
            if gpu.index is None or gpu.index >= len(order):
                raise NoMatch(f"{gpu.name} ({gpu.description or 'no description'}) matches no "
                              "NVML GPU")
            match = [order[gpu.index]]
        sensor = best(groups[match[0]])
        assert sensor is not None
        if sensor not in chosen:  # two MIG instances of one GPU: its energy counts once
            chosen.append(sensor)
        labels.append(f"cuda:{gpu.index} {sensor.device or sensor.name}")
    return chosen, labels
