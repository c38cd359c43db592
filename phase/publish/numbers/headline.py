"""Sentences computed from data: the best strategy per prompt and a note's one-line headline.

Used by the generated notes' prose and by the home page. Speed ratios are a strategy's mean
tokens/s over plain decoding's for the same prompt; the energy ratio is the summary's
`energy_ratio_vs_plain` (chip energy per token), given only where it was measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from phase.analysis import PLAIN, vs_plain
from phase.analysis.formatting import times
from phase.publish.data.datasets import Dataset
from phase.results import SummaryRow


@dataclass(frozen=True)
class Best:
    """The fastest non-plain strategy on one prompt, against plain decoding."""

    dataset: str
    prompt: str
    strategy: str
    tokens_per_s: float
    plain_tokens_per_s: float
    energy_ratio: float | None
    energy_reason: str | None  # why energy_ratio is missing

    @property
    def speed_ratio(self) -> float:
        ratio = vs_plain(self.tokens_per_s, self.plain_tokens_per_s)
        assert ratio is not None  # best_by_prompt keeps only prompts with a plain speed
        return ratio

    @property
    def beats_plain(self) -> bool:
        return self.speed_ratio > 1


def best_by_prompt(dataset: str, rows: list[SummaryRow]) -> list[Best]:
    """Per prompt (in row order) the non-plain strategy with the highest mean tokens/s; prompts
    without a measured plain row or any other strategy are left out (no ratio to state)."""
    plain = {r.prompt: r.tokens_per_s for r in rows if r.strategy == PLAIN and r.tokens_per_s}
    out: list[Best] = []
    for prompt in dict.fromkeys(r.prompt for r in rows):
        others = [r for r in rows if r.prompt == prompt and r.strategy != PLAIN
                  and r.tokens_per_s is not None]
        base = plain.get(prompt)
        if not others or not base:
            continue
        top = max(others, key=lambda r: r.tokens_per_s or 0.0)
        reason = None
        if top.energy_ratio_vs_plain is None:
            reason = top.chip_mj_per_token_reason or "no chip energy for plain decoding"
        out.append(Best(dataset, prompt, top.strategy, top.tokens_per_s or 0.0, base,
                        top.energy_ratio_vs_plain, reason))
    return out


def bests(datasets: list[Dataset]) -> list[Best]:
    return [b for d in datasets for b in best_by_prompt(d.name, d.summary.rows)]


def headline(datasets: list[Dataset]) -> str | None:
    """One line: the best strategy over every prompt and its speed ratio to plain (energy ratio
    where energy exists); None when no ratio can be computed."""
    found = bests(datasets)
    if not found:
        return None
    top = max(found, key=lambda b: b.speed_ratio)
    where = f"{top.strategy} on {top.prompt}"
    if top.beats_plain:
        text = f"fastest: {where} at {times(top.speed_ratio)} plain decoding's speed"
    else:
        text = (f"nothing beat plain decoding; the closest, {where}, ran at "
                f"{times(top.speed_ratio)} its speed")
    if top.energy_ratio is not None:
        text += f" and {times(top.energy_ratio)} its chip energy per token"
    else:
        text += "; energy not measured"
    return text[0].upper() + text[1:]
