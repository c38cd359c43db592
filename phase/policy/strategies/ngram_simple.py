"""`ngram-simple-K`: llama.cpp's own n-gram speculation (`llama-server --spec-type
ngram-simple`, size-n = the campaign's ngram_n_min, size-m = K), so that a run of it and a
server's run make the same proposals (phase.policy.ngram_simple says how it differs from
`ngram`). Greedy only."""

from __future__ import annotations

from typing import Any

from phase.costmodel.breakeven import ExpectedStep
from phase.costmodel.predict import Proposing, expected_ngram
from phase.policy.ngram_simple import SimpleNgramProposer
from phase.policy.strategies.registry import Family, Proposers, Strategy


class NgramSimple(Family):
    name = "ngram-simple"
    grammar = "ngram-simple-K (e.g. ngram-simple-8)"
    short_grammar = "ngram-simple-K"
    order = 4
    title = "n-gram (llama.cpp simple)"
    samples = False
    proposing = Proposing.LOOKUP

    def expected(self) -> ExpectedStep:
        return expected_ngram

    def proposer(self, strategy: Strategy, proposers: Proposers, kv_tokens: int) -> Any:
        return SimpleNgramProposer(strategy.ngram_n_min, strategy.max_proposal)
