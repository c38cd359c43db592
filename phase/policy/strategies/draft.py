"""`draft-K`: a smaller draft model proposes K tokens a step, the target verifies them."""

from __future__ import annotations

from typing import Any

from phase.base.errors import UsageProblem
from phase.costmodel.breakeven import ExpectedStep
from phase.costmodel.predict import Proposing, expected_draft
from phase.policy.strategies.registry import Family, Options, Proposers, Strategy


class Draft(Family):
    name = "draft"
    grammar = "draft-K (e.g. draft-4)"
    short_grammar = "draft-K"
    order = 1
    title = "draft model"
    proposer_name = "draft"
    uses_draft = needs_draft = True
    proposing = Proposing.DRAFT
    # A draft-k run asks the draft at every step (the last, proposing nothing, included):
    # each call first mirrors the batch the target last verified.
    every_step = True

    def expected(self) -> ExpectedStep:
        return expected_draft

    def parse(self, text: str, k_text: str | None, options: Options) -> Strategy:
        if k_text is None:
            # k is the variable being studied, so it has to be said.
            raise UsageProblem(f"'{text}': say how many tokens to draft, e.g. draft-4")
        return super().parse(text, k_text, options)

    def proposer(self, strategy: Strategy, proposers: Proposers, kv_tokens: int) -> Any:
        made = proposers.draft()
        if made is None:
            raise UsageProblem(f"{strategy.label} needs a draft model (none loaded)")
        return made
