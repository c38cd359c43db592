"""Proposals for sampled decoding that need no model: the interface the sampled loops call
(phase.decode.sampled) and the n-gram proposers, whose proposals are point masses for
rejection sampling. The draft model's sampler is model access (phase.decode.sampled).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from phase.policy.ngram import NgramMatcher, key_lengths
from phase.policy.ngram_length import ProposalLength
from phase.policy.speculative_sampling import Rows


class SampledProposer(Protocol):
    def restart(self, prompt: Sequence[int]) -> None:
        """Start a run on the prompt whose cache `prepare` built."""

    def propose(self, seq: list[int], max_tokens: int,
                rng: np.random.Generator) -> tuple[list[int], Rows | None]:
        """At most max_tokens proposals and their distributions q (None: point masses)."""



class NgramSampler:
    """Prompt-lookup proposals (phase.policy.ngram), point masses for verification."""

    def __init__(self, n_min: int, n_max: int) -> None:
        self.n_min = n_min
        # The greedy NgramProposer's keys: a temperature factor changes only how tokens are
        # drawn, never which earlier occurrence a lookup copies from.
        self.matcher = NgramMatcher(key_lengths(n_min, n_max))

    def restart(self, prompt: Sequence[int]) -> None:
        self.matcher.begin(prompt)

    def propose(self, seq: list[int], max_tokens: int,
                rng: np.random.Generator) -> tuple[list[int], Rows | None]:
        return self.matcher.lookup(seq, max_tokens, self.n_min).continuation, None


class AdaptiveNgramSampler(NgramSampler):
    """A bare `ngram`'s proposals when sampling: the greedy loop's adaptive length
    (phase.policy.ngram_length: from 4, longer while proposals are kept whole, shorter after
    a rejection), so that a temperature factor changes only how tokens are drawn, and the
    consistency rule recomputes the same lengths from the trace. Rejection sampling stays
    exact: the length depends only on the steps already verified."""

    def __init__(self, n_min: int, n_max: int, k_max: int) -> None:
        super().__init__(n_min, n_max)
        self.k_max = k_max
        self.length = ProposalLength(k_max)

    def restart(self, prompt: Sequence[int]) -> None:
        super().restart(prompt)
        self.length = ProposalLength(self.k_max)

    def propose(self, seq: list[int], max_tokens: int,
                rng: np.random.Generator) -> tuple[list[int], Rows | None]:
        return super().propose(seq, min(max_tokens, self.length.now), rng)

    def observe(self, proposed: int, accepted: int) -> None:
        self.length.observe(proposed, accepted)
