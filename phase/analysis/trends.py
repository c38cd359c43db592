"""A trend over a factor (temperature, k, threads, context fill), part by part.

An aggregate over prompts can show a trend no prompt has: one prompt rising steeply and two
falling gently give a median that rises, and a prompt with no value at some level leaves the
aggregate resting on the others. So a trend is computed per part (prompt) first; an aggregate
is given only where every part has a direction and all agree, and otherwise it is withheld
with the reason.

A part's direction compares the figure at the factor's highest level with its lowest ("rises",
"falls", or "flat" where they are equal): what a sentence such as "acceptance rises with
temperature" claims, and nothing about the levels between.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Direction = Literal["rises", "falls", "flat"]
# Fewer parts than this cannot show that parts agree.
MIN_PARTS = 2


@dataclass(frozen=True)
class PartTrend:
    part: str
    direction: Direction | None  # None: a value is missing at the lowest or highest level
    first: float | None
    last: float | None


@dataclass(frozen=True)
class Trend:
    parts: list[PartTrend]
    direction: Direction | None  # the parts' common direction; None when withheld
    withheld: str | None  # why there is no aggregate, in words

    @property
    def agrees(self) -> bool:
        return self.direction is not None


def direction(values: Sequence[float | None]) -> Direction | None:
    """The highest level's value against the lowest's (levels in ascending order)."""
    if len(values) < 2 or values[0] is None or values[-1] is None:
        return None
    first, last = values[0], values[-1]
    return "rises" if last > first else "falls" if last < first else "flat"


def trend(by_part: Mapping[str, Sequence[float | None]]) -> Trend:
    """Each part's direction over its values (one per level, ascending), and the common one
    where every part has one and they agree."""
    parts = [PartTrend(name, direction(values), values[0] if values else None,
                       values[-1] if values else None) for name, values in by_part.items()]
    known = [p for p in parts if p.direction is not None]
    missing = [p.part for p in parts if p.direction is None]
    if len(known) < MIN_PARTS:
        rests = ("no prompt has" if not known else f"only {known[0].part} has")
        return Trend(parts, None, f"withheld: {rests} a value at both the lowest and the "
                                  "highest level, so no agreement across prompts can be shown")
    directions = {p.direction for p in known}
    if len(directions) > 1:
        said = ", ".join(f"{p.part} {p.direction}" for p in known)
        return Trend(parts, None, f"withheld: the prompts disagree in direction ({said})")
    if missing:
        return Trend(parts, None, "withheld: " + ", ".join(missing) + " " +
                     ("has" if len(missing) == 1 else "have") +
                     " no value at the lowest or the highest level")
    return Trend(parts, known[0].direction, None)
