"""What else used the machine while a run ran: foreign CPU load.

    probe = LoadProbe()                 # this machine; LoadProbe(root=fixture) in tests
    before = probe.read()
    ... the run ...
    load, reason = probe.foreign_load(before, probe.read())

Foreign load over a window = (busy CPU seconds of the cores this process may use) minus (this
process's own CPU seconds, all threads), over (wall seconds x those cores). 0 is a quiet
machine; 0.5 on two cores is one other core's worth of work. On Linux only the cores in our
affinity count: another process on a core we cannot run on does not compete with us. Where
the counters come from, per operating system (/proc on Linux, the Mach host's CPU ticks on
macOS), is phase.campaign.cpu_counters; elsewhere the load is None with the reason.

Other work on an NVIDIA GPU is read by phase.sensors.nvidia.gpu_activity (utilisation while this
process is idle, and other compute processes); `disturbed` judges both.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from phase.campaign.cpu_counters import NO_PROC, CpuSource, ProcSource, default_source

__all__ = ["NO_PROC", "Counters", "LoadProbe", "QuietCheck", "quiet_check"]


@dataclass(frozen=True)
class Counters:
    """One reading: a monotonic clock, busy CPU seconds of our cores, our own CPU seconds."""

    wall_s: float
    busy_s: float
    own_s: float


class LoadProbe:
    """Reads the counters of `source` (this machine's by default; `root`: a /proc-shaped
    fixture tree)."""

    def __init__(self, root: Path | None = None, pid: str = "self",
                 source: CpuSource | None = None) -> None:
        if source is None:
            source = ProcSource(root, pid) if root is not None else default_source()
        self.source = source
        self.pid = pid
        self.reason: str | None = source.reason
        self.n_cores = source.n_cores

    def read(self) -> Counters | None:
        if self.reason is not None:
            return None
        try:
            busy, own = self.source.seconds()
        except (OSError, ValueError, IndexError) as exc:
            self.reason = f"unreadable CPU counters ({exc})"
            return None
        return Counters(time.monotonic(), busy, own)

    def foreign_load(self, before: Counters | None,
                     after: Counters | None) -> tuple[float | None, str | None]:
        """Other work as a fraction of our cores' capacity over the window, or None and why."""
        if before is None or after is None:
            return None, self.reason or NO_PROC
        wall = after.wall_s - before.wall_s
        if wall <= 0:
            return None, "the window has no duration"
        foreign = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
        # Tick rounding can make a quiet window slightly negative: that is no load.
        return max(foreign, 0.0) / (wall * self.n_cores), None


# --- the quiet-machine check before a campaign (pyperf's `system show` is the model) -------


@dataclass(frozen=True)
class QuietCheck:
    load: float | None
    reason: str | None
    # The busiest other processes over the sample: (cores' worth of CPU, "pid name").
    busiest: list[tuple[float, str]]

    def warning(self, threshold: float | None) -> str | None:
        """A line saying the machine is busy, or None when it is quiet enough."""
        if self.load is None:
            return f"quiet-machine check skipped: {self.reason}"
        if threshold is None or self.load < threshold:
            return None
        who = ", ".join(f"{name} ({cores:.2f} cores)" for cores, name in self.busiest)
        return (f"the machine is busy before the campaign: {self.load:.0%} of this process's "
                f"cores used by other work (disturbed above {threshold:.0%}); busiest: "
                f"{who or 'not found'}. Runs overlapping such work are re-run.")


def quiet_check(seconds: float, probe: LoadProbe | None = None, top: int = 3) -> QuietCheck:
    """Foreign load over `seconds` of this process sleeping, and who caused it."""
    probe = probe or LoadProbe()
    before = probe.read()
    if before is None:
        return QuietCheck(None, probe.reason, [])
    own = str(os.getpid()) if probe.pid == "self" else probe.pid
    procs = probe.source.processes(own)
    time.sleep(seconds)
    after_procs = probe.source.processes(own)
    load, reason = probe.foreign_load(before, probe.read())
    busiest = sorted(
        ((cpu_s - procs[pid][0]) / seconds, f"{pid} {name}")
        for pid, (cpu_s, name) in after_procs.items() if pid in procs
    )[::-1]
    return QuietCheck(load, reason, [b for b in busiest[:top] if b[0] > 0])
