"""What else runs on the GPUs a campaign measures: NVML's utilisation and compute processes.

Read once per run, after the idle window (this process has launched no kernel for the
campaign's cooldown plus idle seconds, longer than NVML's utilisation sample period of 1/6 to
1 s), so the utilisation is other work's: a neighbour's kernels share the SMs and the power
the chip counter reads. Compute processes are counted besides this one: in a container, NVML
reports host pids, so this process's own pid may be absent; one process (this one's context)
is then taken as ours and the reason says so.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from phase.sensors.core.base import Sensor
from phase.sensors.nvidia.nvml import BACKEND


@dataclass(frozen=True)
class GpuActivity:
    busy: float | None  # the largest utilisation among our GPUs, 0..1
    other_processes: int | None  # compute processes on them that are not this one
    reason: str | None  # why a figure is missing, or how "ours" was told apart


def _handles(sensors: Sequence[Sensor]) -> list[tuple[Any, Any]]:
    """(pynvml module, device handle) of each distinct GPU the NVML sensors read."""
    out: list[tuple[Any, Any]] = []
    seen: set[int] = set()
    for s in sensors:
        handle = getattr(s, "handle", None)
        lib = getattr(s, "nvml", None)
        if s.backend != BACKEND or lib is None or id(handle) in seen:
            continue
        seen.add(id(handle))
        out.append((lib, handle))
    return out


def gpu_activity(sensors: Sequence[Sensor], own_pid: int | None = None) -> GpuActivity | None:
    """Other work on the GPUs behind these sensors; None where none of them is an NVIDIA GPU
    (nothing to say, and nothing the results file should claim)."""
    gpus = _handles(sensors)
    if not gpus:
        return None
    own = os.getpid() if own_pid is None else own_pid
    busy: list[float] = []
    others, problems = 0, []
    hidden = False
    for lib, handle in gpus:
        try:
            busy.append(int(lib.nvmlDeviceGetUtilizationRates(handle).gpu) / 100.0)
        except (lib.NVMLError, AttributeError) as exc:
            problems.append(f"utilisation: {exc}")
        try:
            pids = [int(p.pid) for p in lib.nvmlDeviceGetComputeRunningProcesses(handle)]
        except (lib.NVMLError, AttributeError) as exc:
            problems.append(f"processes: {exc}")
            continue
        if own in pids:
            others += len(pids) - 1
        else:
            # Our pid is not NVML's (a container's pid namespace): one context is ours.
            hidden = hidden or bool(pids)
            others += max(len(pids) - 1, 0)
    reason = "; ".join(problems) or None
    if hidden:
        reason = (f"{reason}; " if reason else "") + (
            "this process's pid is not among NVML's (another pid namespace): one compute "
            "process per GPU is taken as this one")
    return GpuActivity(max(busy) if busy else None,
                       others if not any(p.startswith("processes") for p in problems)
                       else None, reason)


def describe(activity: GpuActivity | None) -> str | None:
    """A line for the quiet-machine check, or None when the GPUs are idle and alone."""
    if activity is None:
        return None
    parts = []
    if activity.busy is not None and activity.busy > 0:
        parts.append(f"GPU utilisation {activity.busy:.0%} while this process was idle")
    if activity.other_processes:
        parts.append(f"{activity.other_processes} other compute process(es) on the GPU")
    return "; ".join(parts) or None
