"""What else used the machine while a run ran: foreign CPU load, from /proc.

    probe = LoadProbe()                 # root=Path("/proc"); a fixture tree in tests
    before = probe.read()
    ... the run ...
    load, reason = probe.foreign_load(before, probe.read())

Foreign load over a window = (busy CPU seconds of the cores this process may use, from
/proc/stat: user+nice+system+irq+softirq+steal) minus (this process's own utime+stime, all
threads, from /proc/self/stat), over (wall seconds x those cores). 0 is a quiet machine; 0.5
on two cores is one other core's worth of work. Only the cores in our affinity count: another
process on a core we cannot run on does not compete with us (per-core lines of /proc/stat).

Linux only: without /proc (macOS) the load is None with the reason (host CPU ticks there are
a follow-up). Other work on an NVIDIA GPU is read by phase.sensors.gpu_activity (utilisation
while this process is idle, and other compute processes); `disturbed` judges both.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

# /proc/stat columns after the cpu label: user nice system idle iowait irq softirq steal ...
# Busy is everything but idle and iowait (a core waiting on I/O could have run us).
_BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)
NO_PROC = "no /proc on this system (not Linux): foreign CPU load is not measured here"


@dataclass(frozen=True)
class Counters:
    """One reading: a monotonic clock, busy CPU seconds of our cores, our own CPU seconds."""

    wall_s: float
    busy_s: float
    own_s: float


def _ticks() -> float:
    return float(os.sysconf("SC_CLK_TCK"))


def _affinity() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def parse_stat_busy(text: str, cores: set[int] | None) -> tuple[int, int]:
    """(busy ticks, cores counted) from /proc/stat: the per-core lines of `cores`, or the
    aggregate line (and every per-core line's count) where `cores` is None or absent."""
    total = 0
    counted = 0
    aggregate: tuple[int, int] | None = None
    n_lines = 0
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        label, *fields = line.split()
        values = [int(v) for v in fields]
        busy = sum(values[i] for i in _BUSY_COLUMNS if i < len(values))
        if label == "cpu":
            aggregate = (busy, 0)
            continue
        n_lines += 1
        if cores is not None and int(label[3:]) in cores:
            total += busy
            counted += 1
    if counted:
        return total, counted
    if aggregate is None:
        raise ValueError("no cpu lines in /proc/stat")
    return aggregate[0], max(n_lines, 1)


def parse_pid_cpu_ticks(text: str) -> int:
    """utime + stime (ticks, all threads) from a /proc/PID/stat line. The command name may
    hold spaces and parentheses, so the fields are counted after its last ')'."""
    fields = text[text.rindex(")") + 2:].split()
    # Fields from 3 (state) on: utime is field 14, stime 15 (proc(5)), so indices 11 and 12.
    return int(fields[11]) + int(fields[12])


class LoadProbe:
    """Reads the counters; `root` is /proc (or a fixture tree shaped like it)."""

    def __init__(self, root: Path = Path("/proc"), pid: str = "self") -> None:
        self.root = root
        self.pid = pid
        self.cores = _affinity()
        self.reason: str | None = None if (root / "stat").exists() else NO_PROC
        self.n_cores = self._core_count() if self.reason is None else 1

    def read(self) -> Counters | None:
        if self.reason is not None:
            return None
        try:
            busy, _ = parse_stat_busy((self.root / "stat").read_text(), self.cores)
            own = parse_pid_cpu_ticks((self.root / self.pid / "stat").read_text())
        except (OSError, ValueError, IndexError) as exc:
            self.reason = f"{self.root}: unreadable CPU counters ({exc})"
            return None
        return Counters(time.monotonic(), busy / _ticks(), own / _ticks())

    def _core_count(self) -> int:
        try:
            _, counted = parse_stat_busy((self.root / "stat").read_text(), self.cores)
        except (OSError, ValueError):
            return len(self.cores) if self.cores else os.cpu_count() or 1
        return counted

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


def _process_ticks(root: Path, own: str) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    for entry in os.listdir(root):
        if not entry.isdigit() or entry == own:
            continue
        try:
            text = (root / entry / "stat").read_text()
            name = text[text.index("(") + 1:text.rindex(")")]
            out[entry] = (parse_pid_cpu_ticks(text), name)
        except (OSError, ValueError, IndexError):
            continue  # a process that ended meanwhile
    return out


def quiet_check(seconds: float, probe: LoadProbe | None = None, top: int = 3) -> QuietCheck:
    """Foreign load over `seconds` of this process sleeping, and who caused it."""
    probe = probe or LoadProbe()
    before = probe.read()
    if before is None:
        return QuietCheck(None, probe.reason, [])
    own = str(os.getpid()) if probe.pid == "self" else probe.pid
    procs = _process_ticks(probe.root, own)
    time.sleep(seconds)
    after_procs = _process_ticks(probe.root, own)
    load, reason = probe.foreign_load(before, probe.read())
    wall = seconds * _ticks()
    busiest = sorted(
        ((ticks - procs[pid][0]) / wall, f"{pid} {name}")
        for pid, (ticks, name) in after_procs.items() if pid in procs
    )[::-1]
    return QuietCheck(load, reason, [b for b in busiest[:top] if b[0] > 0])
