"""Reading a logits row: how near the greedy choice was to a tie."""

from __future__ import annotations

import numpy as np


def top2_gap(row: np.ndarray) -> float:
    """Best minus second-best logit of a row (0.0 for a tie). The best entry is masked in place
    for one max() and restored, so no copy of the row (a vocabulary's worth) is made."""
    best = int(row.argmax())
    top = float(row[best])
    row[best] = -np.inf
    second = float(row.max())
    row[best] = top
    return top - second
