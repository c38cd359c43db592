"""Which condition a note's headline is chosen from, and by what rule: the one a confirmation
campaign measures again on fresh runs (phase.campaign.confirm), since the best of many noisy
estimates is biased upward and the round that chose it cannot also be its evidence.

    select(rows)      the speculating condition with the highest speed ratio to plain decoding,
                      among every condition that has one, with how many there were
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phase.analysis.figures import row_value
from phase.analysis.queries import Condition, condition_key
from phase.policy.strategies import is_baseline
from phase.results import Level, SummaryRow

RULE = "the highest speed ratio to plain decoding among the campaign's conditions"


@dataclass(frozen=True)
class Selection:
    prompt: str
    strategy: str
    factors: dict[str, Level]
    speed_ratio: float
    among: int  # the conditions it was chosen from
    rule: str = RULE

    @property
    def condition(self) -> Condition:
        return (self.prompt, self.strategy, tuple(self.factors.items()))


def _ratio(rows: Sequence[SummaryRow], row: SummaryRow) -> float | None:
    return row_value("speed_vs_plain", rows, row)


def select(rows: Sequence[SummaryRow]) -> Selection | None:
    """The headline's condition, or None where no condition has a speed ratio to plain."""
    scored = [(ratio, row) for row in rows if not is_baseline(row.strategy)
              if (ratio := _ratio(rows, row)) is not None]
    if not scored:
        return None
    ratio, top = max(scored, key=lambda pair: pair[0])
    return Selection(top.prompt, top.strategy, dict(condition_key(top)[2]), ratio, len(scored))
