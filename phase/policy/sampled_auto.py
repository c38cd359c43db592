"""`auto` when sampling: the greedy `auto`'s choice (phase.policy.auto: none, n-gram or draft,
and k, from the cost profile and online acceptance estimates) with sampled proposals and the
same exact verification as the fixed strategies (rejection sampling; an n-gram proposal is a
point mass, a draft proposal a draw from q with its rows).

Why exactness survives the choice: the proposer and k are decided from what has already been
emitted (the sequence, the estimates of earlier steps) before the step draws anything, so every
step is a rejection-sampling step of some fixed proposal distribution, which emits exactly p.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from phase.costmodel import CostTable
from phase.policy.auto import AutoProposer, Decision, Evidence
from phase.policy.speculative_sampling import Rows
from phase.policy.step_prices import StepPrices
from phase.policy.strategies import Proposing, proposing_of


class SampledDrafter(Protocol):
    """The sampled draft (phase.decode.sampled.DraftSampler) as auto uses it: its prompt
    cache built and kept, and k draws from q with their rows."""

    def prepare(self, prompt: Sequence[int]) -> None: ...

    def restart(self, prompt: Sequence[int]) -> None: ...

    def propose(self, seq: list[int], max_tokens: int,
                rng: np.random.Generator) -> tuple[list[int], Rows | None]: ...


class _DraftForAuto:
    """The sampled draft behind AutoProposer's greedy draft interface: `propose(seq, k)`
    draws with the step's generator and keeps the q rows for verification."""

    def __init__(self, sampler: SampledDrafter) -> None:
        self.sampler = sampler
        self.rng: np.random.Generator = np.random.default_rng(0)
        self.rows: Rows | None = None

    def begin(self, prompt: Sequence[int]) -> None:
        self.sampler.prepare(prompt)

    def restart(self, prompt: Sequence[int]) -> None:
        self.sampler.restart(prompt)

    def propose(self, seq: list[int], k: int) -> list[int]:
        tokens, self.rows = self.sampler.propose(seq, k, self.rng)
        return tokens


class SampledAuto:
    """A SampledProposer (phase.policy.sampled_proposers) deciding per step as the greedy
    `auto` does; `decisions` holds one Decision per step of the current run."""

    def __init__(self, table: CostTable, draft: SampledDrafter | None, k_max: int,
                 evidence: Evidence | None = None) -> None:
        """`evidence`: acceptance estimates shared with other requests' autos (serving)."""
        self._draft = _DraftForAuto(draft) if draft is not None else None
        self.auto = AutoProposer(table, self._draft, k_max=k_max, mirrors=False,
                                 evidence=evidence)

    @property
    def decisions(self) -> list[Decision]:
        return self.auto.decisions

    def restart(self, prompt: Sequence[int]) -> None:
        self.auto.restart(prompt)

    def at_batch(self, requests: int, carried: int, prices: StepPrices | None = None) -> None:
        """The batch the next choice is priced in (AutoProposer.at_batch)."""
        self.auto.at_batch(requests, carried, prices)

    def propose(self, seq: list[int], max_tokens: int,
                rng: np.random.Generator) -> tuple[list[int], Rows | None]:
        if self._draft is not None:
            self._draft.rng, self._draft.rows = rng, None
        tokens = self.auto.propose(seq, max_tokens)
        chose = self.auto.decisions[-1].proposer
        if proposing_of(chose) is Proposing.DRAFT and self._draft is not None:
            return tokens, self._draft.rows
        return tokens, None  # n-gram: point masses; none: no proposal

    def observe(self, proposed: int, accepted: int) -> None:
        self.auto.observe(proposed, accepted)
