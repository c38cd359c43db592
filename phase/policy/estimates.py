"""Online acceptance estimates for `auto`: per proposer, per position, recent steps weighted most.

For each position i = 1..k_max an estimate counts the steps that tried it (proposed at least
i tokens and had the first i - 1 kept) and the steps that kept it. Counts fade by `decay` at
every step, so the estimate follows the text as it changes (a copied function body, then
new prose), and with no new evidence it drifts back to its prior: a proposer that looked
hopeless a hundred steps ago is tried again once its prior makes it worth trying.

The n-gram proposer's estimates are kept per matched-context length (a 2-token match and a
20-token verbatim match are different evidence) and are fed by shadow scoring: every lookup's
continuation is compared with the tokens that really came, whether or not `auto` proposed it,
so the n-gram estimate never waits for `auto` to gamble on it.
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field

# Matched-context buckets: [1, 2), [2, 3), [3, 4), [4, 6), ... [48, inf).
CONTEXT_EDGES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48)


class PositionEstimate:
    """Faded per-position counts with a prior of `prior` worth `weight` observations.

    Fading is O(1): instead of multiplying every count by `decay` at each step, new
    observations are added with a weight that grows by 1 / decay per step (`scale`), and
    reads divide by it; the counts are brought back to scale 1 now and then.
    """

    __slots__ = ("decay", "kept", "prior", "scale", "tried", "weight")

    def __init__(self, size: int, prior: float, weight: float, decay: float) -> None:
        self.prior, self.weight, self.decay = prior, weight, decay
        self.tried = [0.0] * size
        self.kept = [0.0] * size
        self.scale = 1.0

    def fade(self) -> None:
        self.scale /= self.decay
        if self.scale > 1e100:
            self.tried = [t / self.scale for t in self.tried]
            self.kept = [k / self.scale for k in self.kept]
            self.scale = 1.0

    def observe(self, proposed: int, kept: int) -> None:
        """One proposal of `proposed` tokens whose first `kept` were kept."""
        w = self.scale
        reached = min(proposed, kept + 1, len(self.tried))
        for i in range(reached):
            self.tried[i] += w
        for i in range(min(kept, len(self.kept))):
            self.kept[i] += w

    def rates(self, k: int) -> list[float]:
        p, w, s = self.prior * self.weight, self.weight, self.scale
        return [(self.kept[i] / s + p) / (self.tried[i] / s + w)
                for i in range(min(k, len(self.tried)))]


def context_bucket(context: int) -> int:
    return max(0, bisect.bisect_right(CONTEXT_EDGES, context) - 1)


def ngram_prior(context: int) -> float:
    """What a match of this context length is worth before any evidence: c / (c + 4), i.e.
    one in three for a 2-token match, two in three for 8 tokens, 0.89 for 32. Deliberately
    modest: shadow scoring corrects it within a few steps either way."""
    return context / (context + 4.0)


def ngram_buckets(size: int, decay: float, weight: float = 1.0) -> list[PositionEstimate]:
    """A fresh estimate per matched-context bucket, each at its bucket's prior."""
    return [PositionEstimate(size, ngram_prior(edge), weight, decay) for edge in CONTEXT_EDGES]


@dataclass
class _Pending:
    start: int  # index in the sequence of the first continuation token
    continuation: list[int]
    bucket: int
    checked: int = 0


@dataclass
class NgramEstimates:
    """Per context bucket position estimates, fed by shadow-scoring every lookup."""

    size: int
    decay: float
    weight: float = 1.0
    buckets: list[PositionEstimate] = field(default_factory=list)
    pending: deque[_Pending] = field(default_factory=deque)

    def __post_init__(self) -> None:
        # Buckets handed in are shared with other estimates (auto's Evidence): keep them.
        if not self.buckets:
            self.buckets = ngram_buckets(self.size, self.decay, self.weight)

    def rates(self, context: int, k: int) -> list[float]:
        return self.buckets[context_bucket(context)].rates(k)

    def expect(self, start: int, context: int, continuation: list[int]) -> None:
        """Remember a lookup's guess for the tokens from index `start` on."""
        if continuation:
            self.pending.append(_Pending(start, continuation[:self.size],
                                         context_bucket(context)))

    def score(self, seq: list[int]) -> None:
        """Score every remembered guess against the tokens that have come since."""
        for est in self.buckets:
            est.fade()
        keep: deque[_Pending] = deque()
        for p in self.pending:
            known = min(len(p.continuation), len(seq) - p.start)
            i = p.checked
            while i < known and seq[p.start + i] == p.continuation[i]:
                i += 1
            if i < known or i == len(p.continuation):
                # Settled: a wrong token at i, or the whole guess was right.
                self.buckets[p.bucket].observe(len(p.continuation), i)
            else:
                p.checked = i
                keep.append(p)
        self.pending = keep
