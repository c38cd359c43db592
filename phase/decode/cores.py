"""How many cores this process may use, counted as llama-bench counts them."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from phase.base.errors import UsageProblem


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



def check_thread_counts(counts: Iterable[int | None], option: str, *,
                        allow_flag: str | None = None, allowed: bool = False) -> list[int]:
    """Refuse thread counts above the CPUs this process may use (exit 2, naming the machine's
    count and the range allowed): more threads than CPUs time-slice one another, so what is
    measured is the scheduler, not the machine. Where the command has a flag that allows them
    (`allow_flag`) and it was given (`allowed`), they are returned for the caller to warn."""
    available = usable_cpus()
    over = sorted({c for c in counts if c is not None and c > available})
    if over and not allowed:
        hint = f" (or {allow_flag} to measure time slicing on purpose)" if allow_flag else ""
        raise UsageProblem(f"{option}: {', '.join(map(str, over))} thread(s) exceed the "
                           f"{available} CPU(s) this process may use; allowed: 1 to "
                           f"{available}{hint}")
    return over
