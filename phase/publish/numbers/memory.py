"""Sentences a memory study's note states, computed from its conditions (never by hand):
which condition used the largest share of the measured bandwidth, and, per thread count and
fill, the formats with fewer bytes per token whose share falls well below the best format's
there: where dequantising costs more time than the bytes it saves, compute binds.

Each sentence is plain text from data; the template escapes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from phase.analysis.figures import memory_value
from phase.analysis.formatting import fmt, pct
from phase.analysis.memory import MemoryView, memory_views
from phase.publish.data.datasets import Dataset

# A format "drops" where its share is under this fraction of the best share at its threads
# and fill: a quarter less bandwidth used, beyond the few percent repeats spread by.
DROP = 0.75


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


def compute_bound(views: Sequence[MemoryView]) -> list[str]:
    """Per thread count and fill: the formats lighter than the best-share one whose share
    drops below DROP of it, or a sentence that none does."""
    out = []
    key = lambda v: (v.threads, v.fill)  # noqa: E731
    known = sorted((v for v in views if _share(v) is not None and _mb(v) is not None), key=key)
    for (threads, fill), group in groupby(known, key=key):
        level = list(group)
        best = max(level, key=lambda v: _share(v) or 0.0)
        best_share, best_mb = _share(best) or 0.0, _mb(best) or 0.0
        drops = sorted((v for v in level if (_mb(v) or 0.0) < best_mb
                        and (_share(v) or 0.0) < DROP * best_share), key=lambda v: _mb(v) or 0)
        where = f"At {threads} thread(s) and a fill of {fill}"
        if drops:
            names = ", ".join(f"{v.label} ({pct(_share(v))})" for v in drops)
            out.append(f"{where}, {best.label} used the largest share ({pct(best_share)}); "
                       f"formats that read fewer bytes fell below {pct(DROP)} of that: "
                       f"{names}. There, dequantising costs more than the bytes it saves: "
                       "compute binds, not memory.")
        else:
            out.append(f"{where}, no format that reads fewer bytes than {best.label} "
                       f"({pct(best_share)}) fell below {pct(DROP)} of its share: tokens/s "
                       "followed the bytes read across the formats.")
    return out


def memory_headline(d: Dataset) -> str | None:
    """A memory study's finding (its file measured bandwidth): the largest share; else None."""
    raw = d.raw
    if raw is None or not raw.bandwidth:
        return None
    return highest_share(memory_views(raw, [r for r in d.summary.rows if r.strategy == "plain"]))
