"""How many tokens the adaptive `ngram` strategy proposes next: a length that grows while its
proposals are kept whole and shrinks after a rejection.

A copy region (an edit task restating its input) rewards long proposals, the first step past
an edit point punishes them, and a fixed length has to split the difference. Hugging Face's
assisted generation adapts the same way (its "heuristic" schedule: +2 after a fully kept
proposal, -1 otherwise). Replaying a campaign's plain outputs through this rule and through
a fixed 4-token cap (bench/ngram_replay.py, priced with a profiled target curve) is how it was
chosen: it pulls ahead where the text copies long runs and stays level with the cap elsewhere
(one host's figures: bench/results/notes-from-docstrings.md).

The rule is a pure function of the steps' outcomes, so the validator replays it from a run's
trace to check every step's proposal against the length in force.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

START = 4  # the first proposal's length: the fixed strategy's old cap
GROW = 2  # after a proposal kept whole
SHRINK = 1  # after a proposal with a rejected token
FLOOR = 2  # a 1-token guess rarely repays the extra verified row


class ProposalLength:
    """The current length (`now`), between min(FLOOR, k_max) and k_max."""

    def __init__(self, k_max: int) -> None:
        if k_max < 1:
            raise ValueError(f"k_max must be >= 1, got {k_max}")
        self.k_max = k_max
        self.floor = min(FLOOR, k_max)
        self.now = min(START, k_max)

    def observe(self, proposed: int, kept: int) -> None:
        """A step proposed `proposed` tokens and kept the first `kept`. Steps without a
        proposal (no match) say nothing about the length."""
        if proposed <= 0:
            return
        if kept >= proposed:
            self.now = min(self.k_max, self.now + GROW)
        else:
            self.now = max(self.floor, self.now - SHRINK)


def lengths(k_max: int, outcomes: Iterable[tuple[int, int]]) -> Iterator[int]:
    """The length in force at each step of a run whose steps had `outcomes`
    ((proposed, kept) per step, in order)."""
    length = ProposalLength(k_max)
    for proposed, kept in outcomes:
        yield length.now
        length.observe(proposed, kept)
