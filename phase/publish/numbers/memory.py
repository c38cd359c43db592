"""A fact a memory study's note can state without a rule: which condition used the largest
share of the measured bandwidth. Whether memory binds is its experiment's rule's to say
(phase.analysis.rules.memory, thresholds in experiments/memory_bound.py).

Each sentence is plain text from data; the template escapes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from phase.analysis.figures import memory_value
from phase.analysis.formatting import fmt, pct
from phase.analysis.memory import MemoryView, memory_views
from phase.policy.strategies import is_baseline
from phase.publish.data.datasets import Dataset


def _share(v: MemoryView) -> float | None:
    return memory_value("bandwidth_share", v)


def _mb(v: MemoryView) -> float | None:
    return memory_value("mb_per_token", v)


def highest_share(views: Sequence[MemoryView]) -> str | None:
    known = [v for v in views if _share(v) is not None]
    if not known:
        return None
    best = max(known, key=lambda v: _share(v) or 0.0)
    return (f"The largest share of the measured bandwidth was {pct(_share(best))}, by "
            f"{best.label} at {best.threads} thread(s) and a context fill of {best.fill} "
            f"({fmt(memory_value('effective_gb_s', best))} GB/s effective, "
            f"{fmt(best.row.tokens_per_s)} tokens/s, {fmt(_mb(best))} MB/token).")


def memory_headline(d: Dataset) -> str | None:
    """A memory study's finding (its file measured bandwidth): the largest share; else None."""
    raw = d.raw
    if raw is None or not raw.bandwidth:
        return None
    return highest_share(memory_views(raw, [r for r in d.summary.rows
                                              if is_baseline(r.strategy)]))
