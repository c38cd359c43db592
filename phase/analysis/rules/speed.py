"""Does a strategy beat plain decoding? Per prompt (and per combination of the experiment's
other levels, such as a temperature), each non-plain strategy's ratio to plain decoding on
speed, and on chip energy per token where it was measured, read as the summary states it; a
ratio differs from plain only where `phase.analysis.intervals.resolved` says its interval
excludes `against` (this module computes no interval).

A part (one prompt at one set of levels) is "yes" where some strategy is resolved faster than
plain, "no" where every strategy is resolved slower, else "not resolved"; the parts combine by
`combine` ("partly": faster on some prompts only). Energy is stated per part (lower is
better) but does not vote: the question is about speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phase.analysis.figures import row_interval, row_value
from phase.analysis.formatting import span, times
from phase.analysis.intervals import resolved
from phase.analysis.queries import condition_key, levels_text
from phase.analysis.rules.outcome import (
    COMBINED,
    NO,
    UNRESOLVED,
    YES,
    Judgement,
    Part,
    combine,
)
from phase.policy.strategies import is_baseline
from phase.results import FigureInterval, ResultsFile, SummaryRow

SPEED = "speed_vs_plain"
ENERGY = "energy_ratio_vs_plain"


@dataclass(frozen=True)
class Ratio:
    strategy: str
    value: float
    interval: FigureInterval | None

    def text(self) -> str:
        if self.interval is None:
            return f"{self.strategy} {times(self.value)} (no interval)"
        return (f"{self.strategy} {times(self.value)} (95% interval "
                f"{span(self.interval.low, self.interval.high, times)})")


def _ratios(name: str, rows: Sequence[SummaryRow], part: Sequence[SummaryRow]) -> list[Ratio]:
    out = [Ratio(r.strategy, value, row_interval(name, r)) for r in part
           if (value := row_value(name, rows, r)) is not None]
    return sorted(out, key=lambda r: -r.value)


@dataclass(frozen=True)
class BeatsPlain:
    """The rule; `against` (set in the experiment file) is the ratio a strategy must be
    resolved beyond: 1.0 asks "any difference from plain"."""

    against: float = 1.0

    def _above(self, r: Ratio) -> bool:
        return resolved(r.interval, self.against) and r.value > self.against

    def _below(self, r: Ratio) -> bool:
        return resolved(r.interval, self.against) and r.value < self.against

    def part(self, where: str, rows: Sequence[SummaryRow], part: Sequence[SummaryRow]) -> Part:
        test = f"some strategy's speed ratio to plain is resolved above {times(self.against)}"
        speed = _ratios(SPEED, rows, part)
        faster = [r for r in speed if self._above(r)]
        if faster:
            verdict, said = YES, ("faster than plain: " + ", ".join(r.text() for r in faster))
        elif speed and all(self._below(r) for r in speed):
            verdict, said = NO, ("every strategy slower than plain; the closest, "
                                 + speed[0].text())
        elif speed:
            verdict, said = UNRESOLVED, ("none resolved faster than plain; the fastest, "
                                         + speed[0].text())
        else:
            verdict, said = UNRESOLVED, "no ratio to plain could be computed"
        energy = _ratios(ENERGY, rows, part)
        if energy:
            less = [r for r in reversed(energy) if self._below(r)]
            said += ("; less chip energy per token than plain: "
                     + ", ".join(r.text() for r in less)) if less else (
                "; none resolved using less chip energy per token than plain")
        return Part(where, test, verdict, f"On {where}: {said}.")

    def __call__(self, results: ResultsFile, rows: Sequence[SummaryRow]) -> Judgement:
        groups: dict[str, list[SummaryRow]] = {}
        with_plain = {(r.prompt, condition_key(r)[2]) for r in rows if is_baseline(r.strategy)}
        for r in rows:
            key = (r.prompt, condition_key(r)[2])
            if not is_baseline(r.strategy) and key in with_plain:
                levels = levels_text(key[1])
                groups.setdefault(f"{r.prompt} at {levels}" if levels else r.prompt,
                                  []).append(r)
        parts = tuple(self.part(where, rows, part) for where, part in groups.items())
        verdict = combine([p.verdict for p in parts])
        yes = [p.name for p in parts if p.verdict == YES]
        no = [p.name for p in parts if p.verdict == NO]
        counts = f"{len(yes)} of {len(parts)}"
        summary = {
            "yes": f"A strategy was resolved faster than plain decoding on every prompt "
                   f"({counts}).",
            "partly": f"A strategy was resolved faster than plain decoding on {counts} "
                      f"prompt conditions ({', '.join(yes)}), not on the others.",
            "no": f"No strategy was resolved faster than plain decoding; every one was resolved "
                  f"slower on {len(no)} of {len(parts)} prompt conditions.",
            "not resolved": f"No strategy was resolved faster or slower than plain decoding on "
                            f"any of {len(parts)} prompt conditions.",
        }[verdict]
        rule = (f"per prompt (and level of any other factor), yes where some strategy's 95% "
                f"interval of its speed ratio to plain lies wholly above {times(self.against)}, "
                f"no where every strategy's lies wholly below it, else not resolved; "
                f"{COMBINED}")
        return Judgement(verdict, parts, summary, rule)
