"""Where a machine's CPU time comes from: one source per operating system, one small interface.

* Linux: /proc/stat (busy ticks per core, so only the cores in our affinity count) and
  /proc/self/stat (this process's own utime + stime, all threads); other processes from
  /proc/PID/stat.
* macOS: the Mach host's CPU load ticks (`host_statistics(HOST_CPU_LOAD_INFO)`: user, system,
  idle and nice ticks summed over every core, the figures `top` and psutil read), this
  process's own time from getrusage(2), and other processes from `ps`. macOS has no CPU
  affinity, so every core counts.

Busy is everything but idle (and, on Linux, iowait: a core waiting on I/O could have run us).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import resource
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

# /proc/stat columns after the cpu label: user nice system idle iowait irq softirq steal ...
_BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)
NO_PROC = "no /proc on this system (not Linux): foreign CPU load is not measured here"
NO_SOURCE = ("neither /proc (Linux) nor the Mach host statistics (macOS) are available: "
             "foreign CPU load is not measured here")
# host_cpu_load_info's ticks (mach/machine.h): CPU_STATE_USER, SYSTEM, IDLE, NICE.
_MACH_BUSY = (0, 1, 3)
_MACH_STATES = 4
_HOST_CPU_LOAD_INFO = 3  # mach/host_info.h
# Mach's tick counters are natural_t (32 bits) and wrap: about 16 months of one core at 100 Hz,
# but days on a machine with many cores summed.
_WRAP = 1 << 32


class CpuSource(Protocol):
    """CPU seconds as a LoadProbe needs them. `reason` is None while the source works."""

    reason: str | None
    n_cores: int

    def seconds(self) -> tuple[float, float]:
        """(busy CPU seconds of the cores we may use, this process's own CPU seconds)."""
        ...

    def processes(self, exclude: str) -> dict[str, tuple[float, str]]:
        """Every other process: pid -> (CPU seconds so far, name). Ended ones are skipped."""
        ...


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


class ProcSource:
    """Linux: /proc (or a fixture tree shaped like it)."""

    def __init__(self, root: Path = Path("/proc"), pid: str = "self") -> None:
        self.root = root
        self.pid = pid
        self.cores = _affinity()
        self.reason: str | None = None if (root / "stat").exists() else NO_PROC
        self.n_cores = self._core_count() if self.reason is None else 1

    def _core_count(self) -> int:
        try:
            _, counted = parse_stat_busy((self.root / "stat").read_text(), self.cores)
        except (OSError, ValueError):
            return len(self.cores) if self.cores else os.cpu_count() or 1
        return counted

    def seconds(self) -> tuple[float, float]:
        busy, _ = parse_stat_busy((self.root / "stat").read_text(), self.cores)
        own = parse_pid_cpu_ticks((self.root / self.pid / "stat").read_text())
        return busy / _ticks(), own / _ticks()

    def processes(self, exclude: str) -> dict[str, tuple[float, str]]:
        out: dict[str, tuple[float, str]] = {}
        for entry in os.listdir(self.root):
            if not entry.isdigit() or entry == exclude:
                continue
            try:
                text = (self.root / entry / "stat").read_text()
                name = text[text.index("(") + 1:text.rindex(")")]
                out[entry] = (parse_pid_cpu_ticks(text) / _ticks(), name)
            except (OSError, ValueError, IndexError):
                continue  # a process that ended meanwhile
        return out


def busy_mach_ticks(states: Sequence[int]) -> int:
    """Busy ticks from host_cpu_load_info's four states (user, system, idle, nice)."""
    if len(states) != _MACH_STATES:
        raise ValueError(f"host_cpu_load_info has {_MACH_STATES} states, got {len(states)}")
    return sum(states[i] for i in _MACH_BUSY)


class TickAccumulator:
    """Turns readings of a 32-bit tick counter into a running total that survives its wraps
    (two readings are never a whole wrap apart: a run lasts minutes, a wrap days)."""

    def __init__(self) -> None:
        self._last: int | None = None
        self.total = 0

    def add(self, raw: int) -> int:
        if self._last is not None:
            self.total += (raw - self._last) % _WRAP
        self._last = raw
        return self.total


def _mach_reader() -> Callable[[], list[int]] | None:
    """A function returning host_cpu_load_info's ticks, or None off macOS."""
    if sys.platform != "darwin":
        return None
    path = ctypes.util.find_library("System")
    if path is None:
        return None
    lib = ctypes.CDLL(path)
    lib.mach_host_self.restype = ctypes.c_uint
    host = lib.mach_host_self()

    def read() -> list[int]:
        info = (ctypes.c_uint * _MACH_STATES)()
        count = ctypes.c_uint(_MACH_STATES)
        status = lib.host_statistics(host, _HOST_CPU_LOAD_INFO, info, ctypes.byref(count))
        if status != 0:
            raise OSError(f"host_statistics(HOST_CPU_LOAD_INFO) returned {status}")
        return list(info)

    return read


def own_cpu_seconds() -> float:
    """This process's user + system CPU seconds, all threads (children excluded, as in
    /proc/self/stat's utime + stime)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


_CPU_TIME = re.compile(r"^(?:(?:(\d+)-)?(\d+):)?(\d+):(\d+(?:\.\d+)?)$")


def parse_ps_time(text: str) -> float:
    """Seconds from ps's cumulative CPU time: procps writes [DD-]HH:MM:SS, macOS M:SS.ss
    (minutes may pass 59 there)."""
    match = _CPU_TIME.match(text.strip())
    if match is None:
        raise ValueError(f"not a ps CPU time: {text!r}")
    days, hours, minutes, seconds = match.groups()
    return (int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes) * 60
            + float(seconds))


def parse_ps(text: str, exclude: str) -> dict[str, tuple[float, str]]:
    """`ps -A -o pid=,time=,comm=` output as pid -> (CPU seconds, name)."""
    out: dict[str, tuple[float, str]] = {}
    for line in text.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 3 or not parts[0].isdigit() or parts[0] == exclude:
            continue
        try:
            out[parts[0]] = (parse_ps_time(parts[1]), os.path.basename(parts[2].strip()))
        except ValueError:
            continue
    return out


def ps_processes(exclude: str) -> dict[str, tuple[float, str]]:
    try:
        listing = subprocess.run(["ps", "-A", "-o", "pid=,time=,comm="], capture_output=True,
                                 text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return parse_ps(listing, exclude)


class MachSource:
    """macOS: host CPU ticks over every core, our own time from getrusage, others from ps."""

    def __init__(self, reader: Callable[[], list[int]] | None = None) -> None:
        self._read = reader if reader is not None else _mach_reader()
        self._busy = TickAccumulator()
        self.n_cores = os.cpu_count() or 1
        self.reason: str | None = None if self._read is not None else NO_SOURCE
        if self._read is not None:
            try:
                self._busy.add(busy_mach_ticks(self._read()))
            except (OSError, ValueError) as exc:
                self.reason = f"host CPU ticks unreadable ({exc})"

    def seconds(self) -> tuple[float, float]:
        if self._read is None:
            raise OSError(self.reason)
        return self._busy.add(busy_mach_ticks(self._read())) / _ticks(), own_cpu_seconds()

    def processes(self, exclude: str) -> dict[str, tuple[float, str]]:
        return ps_processes(exclude)


def default_source() -> CpuSource:
    """/proc where there is one, else the Mach host (macOS); elsewhere a source that says why
    it measures nothing."""
    proc = ProcSource()
    if proc.reason is None or sys.platform != "darwin":
        return proc
    return MachSource()
