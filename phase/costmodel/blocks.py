"""Which blocks of a cost profile other work disturbed: one rule for the profiler that
repeats them and the validation that re-derives them (phase.validate.rules.profile).

A block of passes is disturbed when the foreign load over it reached the load threshold, or
when its passes ran slower than `floor` of the median of its pass size's other blocks that
load left alone (a spinning thread pool loses speed to load too small or too short for the
counters to show; the issue's hog made a one-token pass 6.9x slower). A pass's cost is the
median of its undisturbed blocks, so `auto` never chooses from a disturbed one; only where
every block of a size was disturbed (the retries spent) does it rest on them, said so.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def load_disturbed(load: float | None, threshold: float | None) -> bool:
    return threshold is not None and load is not None and load >= threshold


def disturbed_blocks(block_ms: Sequence[float], block_load: Sequence[float | None],
                     threshold: float | None, floor: float | None) -> list[bool]:
    """Per block: disturbed by load, or slower than `floor` x its other blocks' median
    (those load left alone); None for a threshold or floor: no such test."""
    loads = list(block_load) or [None] * len(block_ms)
    by_load = [load_disturbed(v, threshold) for v in loads]
    out = []
    for i, ms in enumerate(block_ms):
        others = [m for j, m in enumerate(block_ms) if j != i and not by_load[j]]
        slow = (floor is not None and bool(others) and ms > 0
                and statistics.median(others) / ms < floor)
        out.append(by_load[i] or slow)
    return out


def clean(values: Sequence[float], disturbed: Sequence[bool]) -> list[float]:
    """The values of the undisturbed blocks; all of them where every block was disturbed
    (a cost must come from somewhere; the profile says which passes rest on such blocks)."""
    kept = [v for v, bad in zip(values, disturbed, strict=True) if not bad]
    return kept or list(values)
