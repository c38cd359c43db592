"""How many cores this process may use, counted as llama-bench counts them."""

from __future__ import annotations

import os
from pathlib import Path


def usable_cpus() -> int:
    """Logical CPUs this process may run on (SMT siblings each counted)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def physical_cores() -> int:
    """Cores this process may use, counting SMT siblings once (like llama-bench's default).

    llama.cpp's token generation is memory-bound; a second hyper-thread on the same core adds
    contention, not bandwidth, which is why llama-bench defaults to physical cores.
    """
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)
    groups: set[str] = set()
    for cpu in cpus:
        path = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list")
        try:
            groups.add(path.read_text().strip())
        except OSError:
            return max(1, len(cpus))
    return max(1, len(groups))
