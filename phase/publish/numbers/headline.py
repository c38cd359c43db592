"""Sentences computed from data: the best strategy per prompt and a note's one-line headline.

Used by the generated notes' prose and by the home page. Speed ratios are a strategy's tokens/s
over plain decoding's for the same prompt (the summary's `speed_vs_plain`: the median of the
ratios of runs in the same repeat; divided from the row's figures for a file that stores
none); the energy ratio is the summary's `energy_ratio_vs_plain` (chip energy per token), given
only where it was measured.

A ratio is stated only where its 95% interval excludes 1.0 and its corrected test agrees;
otherwise the sentence says the difference from plain decoding was not resolved, and gives
the interval. A file without runs (a transcribed summary) has no interval: its ratios are
stated as its source published them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from phase.analysis import PLAIN, condition_key, row_value, vs_plain
from phase.analysis.figures import row_interval
from phase.analysis.formatting import ratio, span, times
from phase.analysis.intervals import resolved
from phase.analysis.queries import levels_text
from phase.publish.data.datasets import Dataset
from phase.results import FigureInterval, SummaryRow
from phase.results.schedule import Levels


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
    stored_speed_ratio: float | None = None  # the summary's paired ratio, where it has one
    speed_interval: FigureInterval | None = None
    energy_interval: FigureInterval | None = None
    measured: bool = True  # from runs, so a ratio without an interval is not resolved
    # The condition's extra factors' levels ("threads=2, mode=a"; empty without any): the
    # best is per prompt at each combination of levels, against plain at the same levels.
    levels: str = ""

    @property
    def where(self) -> str:
        """The prompt, and the levels where there are any: "code" or "code at threads=2"."""
        return f"{self.prompt} at {self.levels}" if self.levels else self.prompt

    @property
    def speed_ratio(self) -> float:
        if self.stored_speed_ratio is not None:
            return self.stored_speed_ratio
        ratio = vs_plain(self.tokens_per_s, self.plain_tokens_per_s)
        assert ratio is not None  # best_by_prompt keeps only prompts with a plain speed
        return ratio

    @property
    def speed_resolved(self) -> bool:
        """Its speed is known to differ from plain decoding's: the interval excludes 1.0 (a
        transcribed summary, which has no interval, is taken as its source published it)."""
        return resolved(self.speed_interval) if self.measured else True

    @property
    def energy_resolved(self) -> bool:
        return resolved(self.energy_interval) if self.measured else True

    @property
    def beats_plain(self) -> bool:
        return self.speed_resolved and self.speed_ratio > 1

    @property
    def speed_phrase(self) -> str:
        """How its speed compares with plain decoding's, for a sentence that goes on
        "...at N tokens/s: " ("1.06 times plain decoding's 8.6 (95% interval 1.02–1.10)")."""
        plain = f"plain decoding's {self.plain_tokens_per_s:.1f}"
        if not self.speed_resolved:
            return f"not resolved from {plain}{_unresolved(self.speed_interval)}"
        return f"{ratio(self.speed_ratio)} times {plain}{_interval(self.speed_interval, ratio)}"

    @property
    def energy_phrase(self) -> str | None:
        """A sentence on its chip energy per token against plain decoding's; None when energy
        was not measured (energy_reason says why)."""
        if self.energy_ratio is None:
            return None
        if not self.energy_resolved:
            return ("Its chip energy per token was not resolved from plain decoding's"
                    f"{_unresolved(self.energy_interval)}.")
        return (f"It used {ratio(self.energy_ratio)} times plain decoding's chip energy per "
                f"token{_interval(self.energy_interval, ratio)}.")


def _interval(found: FigureInterval | None, show: Callable[[float | None], str] = times) -> str:
    return "" if found is None else f" (95% interval {span(found.low, found.high, show)})"


def _unresolved(found: FigureInterval | None) -> str:
    if found is None:
        return " (one run: no interval)"
    return f": the 95% interval of the ratio, {span(found.low, found.high, ratio)}, includes 1"


def best_by_prompt(dataset: str, rows: list[SummaryRow], measured: bool = True) -> list[Best]:
    """Per prompt (in row order), and per combination of extra levels where the experiment has
    any, the non-plain strategy with the highest tokens/s; prompts without a measured plain
    row or any other strategy are left out (no ratio to state). `measured`: the rows come
    from runs (a raw file), so a missing interval means "one run"."""
    def where(r: SummaryRow) -> tuple[str, Levels]:
        return (r.prompt, condition_key(r)[2])

    plain = {where(r): r.tokens_per_s for r in rows if r.strategy == PLAIN and r.tokens_per_s}
    out: list[Best] = []
    for key in dict.fromkeys(where(r) for r in rows):
        prompt = key[0]
        others = [r for r in rows if where(r) == key and r.strategy != PLAIN
                  and r.tokens_per_s is not None]
        base = plain.get(key)
        if not others or not base:
            continue
        top = max(others, key=lambda r: r.tokens_per_s or 0.0)
        reason = None
        if top.energy_ratio_vs_plain is None:
            reason = top.chip_mj_per_token_reason or "no chip energy for plain decoding"
        out.append(Best(dataset, prompt, top.strategy, top.tokens_per_s or 0.0, base,
                        top.energy_ratio_vs_plain, reason,
                        row_value("speed_vs_plain", rows, top),
                        row_interval("speed_vs_plain", top),
                        row_interval("energy_ratio_vs_plain", top), measured,
                        levels_text(key[1])))
    return out


def bests(datasets: list[Dataset]) -> list[Best]:
    return [b for d in datasets
            for b in best_by_prompt(d.name, d.summary.rows, measured=not d.summary_only)]


def headline(datasets: list[Dataset]) -> str | None:
    """One line: the best strategy over every prompt and its speed ratio to plain (energy ratio
    where energy exists), a ratio stated only where its interval excludes 1.0; None when no
    ratio can be computed."""
    found = bests(datasets)
    if not found:
        return None
    faster = [b for b in found if b.beats_plain]
    unresolved = [b for b in found if not b.speed_resolved]
    if faster:
        top = max(faster, key=lambda b: b.speed_ratio)
        text = (f"fastest: {top.strategy} on {top.where} at {times(top.speed_ratio)} plain "
                f"decoding's speed{_interval(top.speed_interval)}")
    elif unresolved:
        top = max(unresolved, key=lambda b: b.speed_ratio)
        text = (f"nothing was resolved faster than plain decoding; the fastest, {top.strategy} "
                f"on {top.where}, was not resolved from its speed"
                f"{_unresolved(top.speed_interval)}")
    else:
        top = max(found, key=lambda b: b.speed_ratio)
        text = (f"nothing beat plain decoding; the closest, {top.strategy} on {top.where}, ran "
                f"at {times(top.speed_ratio)} its speed{_interval(top.speed_interval)}")
    if top.energy_ratio is None:
        text += "; energy not measured"
    elif top.energy_resolved:
        text += (f" and {times(top.energy_ratio)} its chip energy per token"
                 f"{_interval(top.energy_interval)}")
    else:
        text += (f"; its chip energy per token was not resolved from plain decoding's"
                 f"{_unresolved(top.energy_interval)}")
    return text[0].upper() + text[1:]
