"""Where speculative tokens come from, as policy: the proposer interface the greedy loops call,
and the proposers that need no model (n-gram lookup over the text itself). The draft model's
proposer is model access and lives in phase.decode.proposers.

A proposer sees the accepted sequence (prompt + generated so far) and guesses what the target
will say next. Within one run that sequence only ever grows, which the proposers rely on to
keep their state incremental. `begin` runs in the prefill phase, `propose` in decode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from phase.policy.ngram import NgramMatcher, key_lengths
from phase.policy.ngram_length import ProposalLength


class Proposer(Protocol):
    def begin(self, prompt: Sequence[int]) -> None:
        """Start a run (drop all state), given the prompt."""

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        """At most `max_tokens` guesses for the tokens after `seq`; [] for none."""


# A proposer may also have `restart(prompt)`: start another pass over the same prompt right
# after a run, keeping what `begin` computed from the prompt (a draft model's prompt cache),
# so that a repeated decode (Engine.run's min_window_s) does no prefill inside its energy
# window. Without it, the engine calls `begin` again.


class NgramProposer:
    """Prompt-lookup decoding: after the earlier occurrence whose context matches the
    sequence's end for the most tokens, propose what followed it, when that context is at
    least `n_min` tokens (see `ngram.NgramMatcher`; keys of n_min..n_max tokens are indexed).
    """

    def __init__(self, n_min: int, n_max: int) -> None:
        self.n_min, self.n_max = n_min, n_max
        self.matcher = NgramMatcher(key_lengths(n_min, n_max))

    def begin(self, prompt: Sequence[int]) -> None:
        self.matcher.begin(prompt)

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        return self.matcher.lookup(seq, max_tokens, self.n_min).continuation


class AdaptiveNgramProposer(NgramProposer):
    """The n-gram proposer with a length that follows its outcomes (`ngram_length`): up to
    `k_max` tokens while its proposals are kept whole, fewer after rejections."""

    def __init__(self, n_min: int, n_max: int, k_max: int) -> None:
        super().__init__(n_min, n_max)
        self.k_max = k_max
        self.length = ProposalLength(k_max)

    def begin(self, prompt: Sequence[int]) -> None:
        super().begin(prompt)
        self.length = ProposalLength(self.k_max)

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        return super().propose(seq, min(max_tokens, self.length.now))

    def observe(self, proposed: int, accepted: int) -> None:
        self.length.observe(proposed, accepted)
