"""`auto`: at every step, choose the proposer (none, n-gram, draft) and k (up to AUTO_K)
that the measured cost profile makes cheapest per expected token."""

from __future__ import annotations

from typing import Any

from phase.base.errors import UsageProblem
from phase.policy.strategies.registry import AUTO_K, Family, Options, Proposers, Strategy


class Auto(Family):
    name = "auto"
    grammar = short_grammar = "auto"
    order = 3
    title = "auto"
    uses_draft = True
    needs_profile = True
    decides = True

    def parse(self, text: str, k_text: str | None, options: Options) -> Strategy:
        if k_text is not None:
            raise UsageProblem(f"'{text}': {self.name} takes no k")
        return Strategy(self.name, AUTO_K, ngram_n_min=options.ngram_n_min,
                        ngram_n_max=options.ngram_n_max)

    def label(self, strategy: Strategy) -> str:
        return self.name

    def proposer(self, strategy: Strategy, proposers: Proposers, kv_tokens: int) -> Any:
        return proposers.auto(kv_tokens, strategy.max_proposal)
