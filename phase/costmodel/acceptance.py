"""Acceptance: how many tokens a step yields, from i.i.d. acceptance or by position.

A step that proposes k tokens yields its accepted prefix plus the target's own next token.
If proposal i is kept with probability a_i given that proposals 1..i-1 were kept, the step
yields on average 1 + sum over i of a_1·…·a_i tokens. With one rate α for every position
(Leviathan et al. 2023, "Fast inference from transformers via speculative decoding") that is
(1 - α^(k+1)) / (1 - α). Measured runs give a_i directly: position i was tried in every step
that proposed at least i tokens and kept the first i - 1, and kept in every step that kept i.
Where a_i falls or rises with i, the measured rates, not one α, predict the step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from phase.results import Step


def iid_expected_tokens(alpha: float, k: int) -> float:
    """Tokens per step with k proposals, each kept with probability α independently."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be within [0, 1], got {alpha}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if alpha == 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def expected_tokens(rates: Sequence[float]) -> float:
    """Tokens per step when proposal i is kept with conditional probability rates[i-1]."""
    total, reach = 1.0, 1.0
    for a in rates:
        reach *= a
        total += reach
    return total


@dataclass(frozen=True)
class PositionRates:
    """Per position i = 1..n: steps that tried it, and steps that kept it."""

    tried: tuple[int, ...]
    kept: tuple[int, ...]

    def rate(self, i: int, fallback: float) -> float:
        """a_i, or `fallback` where position i was never tried."""
        if i < 1 or i > len(self.tried) or self.tried[i - 1] == 0:
            return fallback
        return self.kept[i - 1] / self.tried[i - 1]

    def rates(self, k: int) -> list[float]:
        """a_1..a_k; an untried position takes the pooled rate of the tried ones."""
        pooled = self.alpha
        fallback = pooled if pooled is not None else 0.0
        return [self.rate(i, fallback) for i in range(1, k + 1)]

    @property
    def alpha(self) -> float | None:
        """The i.i.d. estimate: kept over tried, pooled over positions (None: none tried)."""
        tried = sum(self.tried)
        return sum(self.kept) / tried if tried else None

    @property
    def steps(self) -> int:
        return self.tried[0] if self.tried else 0


def position_rates(steps: Iterable[Step]) -> PositionRates:
    """a_i counted over the steps that proposed anything."""
    tried: list[int] = []
    kept: list[int] = []
    for s in steps:
        if s.proposed == 0:
            continue
        reached = min(s.proposed, s.accepted + 1)
        while len(tried) < s.proposed:
            tried.append(0)
            kept.append(0)
        for i in range(reached):
            tried[i] += 1
        for i in range(s.accepted):
            kept[i] += 1
    return PositionRates(tuple(tried), tuple(kept))


def merge(rates: Iterable[PositionRates]) -> PositionRates:
    tried: list[int] = []
    kept: list[int] = []
    for r in rates:
        while len(tried) < len(r.tried):
            tried.append(0)
            kept.append(0)
        for i, (t, k) in enumerate(zip(r.tried, r.kept, strict=True)):
            tried[i] += t
            kept[i] += k
    return PositionRates(tuple(tried), tuple(kept))
