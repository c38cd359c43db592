"""`ngram` / `ngram-K`: propose the tokens that followed the longest earlier match of the
context (prompt lookup). Bare `ngram` proposes up to the campaign's ngram_k, adapting its
length when ngram_adaptive (results files from before adaptive lengths record a fixed one);
`ngram-K` always proposes up to K."""

from __future__ import annotations

from typing import Any

from phase.costmodel.breakeven import ExpectedStep
from phase.costmodel.predict import Proposing, expected_ngram
from phase.policy.strategies.registry import Family, Options, Proposers, Strategy


class Ngram(Family):
    name = "ngram"
    grammar = short_grammar = "ngram[-K]"
    order = 2
    title = "n-gram"
    proposer_name = "ngram"
    adapts = True
    proposing = Proposing.LOOKUP

    def expected(self) -> ExpectedStep:
        return expected_ngram

    def parse(self, text: str, k_text: str | None, options: Options) -> Strategy:
        if k_text is not None:
            return super().parse(text, k_text, options)
        return Strategy(self.name, options.ngram_k, ngram_n_min=options.ngram_n_min,
                        ngram_n_max=options.ngram_n_max, adaptive=options.ngram_adaptive)

    def proposer(self, strategy: Strategy, proposers: Proposers, kv_tokens: int) -> Any:
        return proposers.ngram(strategy.ngram_n_min, strategy.ngram_n_max,
                               strategy.max_proposal if strategy.adaptive else None)
