"""What a strategy family builds its proposer from (phase.policy.strategies.Proposers):
phase.decode's greedy proposers, or their sampled variants, over an Engine's models and costs.

The family says which proposer its strategy uses; these say how each is made here, so the
engine and the sampled window ask the family instead of comparing strategy names.
"""

from __future__ import annotations

from collections.abc import Callable

from phase.costmodel import CostTable
from phase.decode.native import NativeModel
from phase.decode.proposers import DraftProposer
from phase.decode.sampled import DraftSampler
from phase.policy.auto import K_MAX, AutoProposer
from phase.policy.proposers import AdaptiveNgramProposer, NgramProposer
from phase.policy.sampled_auto import SampledAuto
from phase.policy.sampled_proposers import AdaptiveNgramSampler, NgramSampler
from phase.policy.sampling import SamplingSettings

# An Engine's cost_table: the costs auto decides with at a KV fill (UsageProblem without a
# profile), asked for only when auto's proposer is built.
Costs = Callable[[int], CostTable]


class GreedyProposers:
    """Engine.run's proposers (temperature 0)."""

    def __init__(self, draft: NativeModel | None, costs: Costs) -> None:
        self._draft, self._costs = draft, costs

    def draft(self) -> DraftProposer | None:
        return DraftProposer(self._draft) if self._draft is not None else None

    def ngram(self, n_min: int, n_max: int, k_max: int | None) -> NgramProposer:
        if k_max is not None:
            return AdaptiveNgramProposer(n_min, n_max, k_max)
        return NgramProposer(n_min, n_max)

    def auto(self, kv_tokens: int, k_max: int) -> AutoProposer:
        return AutoProposer(self._costs(kv_tokens), self.draft(), k_max=k_max)


class SampledProposers:
    """The sampled window's proposers (phase.decode.sampled): draft proposals drawn from
    the draft's q with the run's settings; `prefill_draft` is the draft sampler whose cache
    the prefill must build (None where the proposer uses no draft model)."""

    def __init__(self, draft: NativeModel | None, costs: Costs,
                 settings: SamplingSettings) -> None:
        self._draft, self._costs, self._settings = draft, costs, settings
        self.prefill_draft: DraftSampler | None = None

    def draft(self) -> DraftSampler | None:
        if self.prefill_draft is None and self._draft is not None:
            self.prefill_draft = DraftSampler(self._draft, self._settings.with_seed(0), "sample")
        return self.prefill_draft

    def ngram(self, n_min: int, n_max: int, k_max: int | None) -> NgramSampler:
        if k_max is not None:
            return AdaptiveNgramSampler(n_min, n_max, k_max)
        return NgramSampler(n_min, n_max)

    def auto(self, kv_tokens: int, k_max: int) -> SampledAuto:
        return SampledAuto(self._costs(kv_tokens), self.draft(), min(K_MAX, k_max))
