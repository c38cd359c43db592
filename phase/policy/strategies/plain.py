"""`plain`: one token per target pass, nothing proposed; the baseline every other is read
against."""

from __future__ import annotations

from typing import Any

from phase.base.errors import UsageProblem
from phase.policy.strategies.registry import Family, Options, Proposers, Strategy


class Plain(Family):
    name = "plain"
    grammar = short_grammar = "plain"
    order = 0
    title = "plain"
    takes_k = False

    def parse(self, text: str, k_text: str | None, options: Options) -> Strategy:
        if k_text is not None:
            raise UsageProblem(f"'{text}': {self.name} takes no k")
        return Strategy(self.name)

    def check(self, strategy: Strategy) -> None:
        if strategy.k is not None:
            raise UsageProblem("plain takes no k")

    def label(self, strategy: Strategy) -> str:
        return self.name

    def proposer(self, strategy: Strategy, proposers: Proposers, kv_tokens: int) -> Any:
        return None
