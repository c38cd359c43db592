"""A question an experiment asks, the rule that answers it, and the answer.

An experiment file declares `Question(text, rule, titles)`: the rule is a pure function of the
campaign (its results file and summary rows) with its thresholds as fields, set in the
experiment file; it returns a `Judgement` (a verdict and its parts, each a sentence with its
numbers). `Question.answer` adds the title for the verdict. A note's title, its finding and
every trend sentence are the outcome's, so no note states a conclusion its rule did not reach.

Verdicts: "yes", "no", "partly" (it holds for some parts and not all), "not resolved" (no part
was decided by its test). `combine` is the one way parts make a whole.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from phase.results import ResultsFile, SummaryRow
from phase.results.host_labels import host_class_of

Verdict = Literal["yes", "no", "partly", "not resolved"]
YES: Verdict = "yes"
NO: Verdict = "no"
PARTLY: Verdict = "partly"
UNRESOLVED: Verdict = "not resolved"
CONFIDENCE = 0.95


# `combine`, in words, for a note to state with its rule.
COMBINED = ("the parts combine to yes where every one says yes, partly where some do, no where "
            "none does and at least one says no, else not resolved")


def combine(verdicts: Sequence[Verdict]) -> Verdict:
    """The whole from its parts: every part yes -> yes; some yes (or partly) and not all ->
    partly; none yes and at least one no -> no (the parts not resolved are named in the
    findings); nothing decided -> not resolved."""
    if not verdicts or all(v == UNRESOLVED for v in verdicts):
        return UNRESOLVED
    if all(v == YES for v in verdicts):
        return YES
    if any(v in (YES, PARTLY) for v in verdicts):
        return PARTLY
    return NO


@dataclass(frozen=True)
class Part:
    """One test of a rule (or one prompt of a per-prompt rule): its name, what it tests with
    its threshold, its verdict and the sentence that states its numbers."""

    name: str
    test: str
    verdict: Verdict
    sentence: str


@dataclass(frozen=True)
class Judgement:
    """What a rule returns: the combined verdict, its parts, a one-line summary and how the
    rule decides, with its thresholds (for the note to state)."""

    verdict: Verdict
    parts: tuple[Part, ...]
    summary: str
    rule: str


class Rule(Protocol):
    """A pure function of a campaign; its thresholds are its fields."""

    def __call__(self, results: ResultsFile, rows: Sequence[SummaryRow]) -> Judgement: ...


@dataclass(frozen=True)
class Titles:
    """A note's title per verdict; `{host_class}` is replaced by the campaign's."""

    yes: str
    no: str
    partly: str
    unresolved: str

    def of(self, verdict: Verdict) -> str:
        return {YES: self.yes, NO: self.no, PARTLY: self.partly, UNRESOLVED: self.unresolved}[
            verdict]


@dataclass(frozen=True)
class Outcome:
    """The answer to a question for one campaign."""

    question: str
    verdict: Verdict
    title: str
    headline: str  # one line: the home page's finding
    parts: tuple[Part, ...]
    rule: str  # how the rule decides, with its thresholds

    @property
    def findings(self) -> list[str]:
        """Every sentence the note states about the question, one per part."""
        return [p.sentence for p in self.parts]


@dataclass(frozen=True)
class Question:
    """What an experiment asks (`text`), the rule that answers it and the title per verdict."""

    text: str
    rule: Rule
    titles: Titles

    def answer(self, results: ResultsFile, rows: Sequence[SummaryRow]) -> Outcome:
        judged = self.rule(results, rows)
        title = self.titles.of(judged.verdict).replace("{host_class}", host_class_of(results))
        return Outcome(self.text, judged.verdict, title, judged.summary, judged.parts,
                       judged.rule)


@dataclass(frozen=True)
class Estimate:
    """A statistic with its 95% interval (low/high None: too few values for one)."""

    value: float
    low: float | None
    high: float | None
    n: int

    def against_band(self, low: float, high: float) -> Verdict:
        """yes: the interval lies inside [low, high]; no: wholly outside it; else not
        resolved (also when there is no interval)."""
        if self.low is None or self.high is None:
            return UNRESOLVED
        if low <= self.low and self.high <= high:
            return YES
        if self.high < low or self.low > high:
            return NO
        return UNRESOLVED

    def at_least(self, bound: float) -> Verdict:
        """yes: the interval lies at or above `bound`; no: wholly below it; else not
        resolved."""
        if self.low is None or self.high is None:
            return UNRESOLVED
        if self.low >= bound:
            return YES
        if self.high < bound:
            return NO
        return UNRESOLVED


def median_estimate(values: Sequence[float]) -> Estimate | None:
    """The median of `values` with its distribution-free 95% interval (order statistics,
    scipy.stats.quantile_test); no interval where n is too small for one (n < 6)."""
    from scipy import stats  # loaded where a rule runs, not by every experiment file's import

    data = np.array([v for v in values if math.isfinite(v)], dtype=float)
    if len(data) == 0:
        return None
    median = float(np.median(data))
    ci = stats.quantile_test(data, q=median, p=0.5).confidence_interval(CONFIDENCE)
    low, high = float(ci.low), float(ci.high)
    if not (math.isfinite(low) and math.isfinite(high)):
        return Estimate(median, None, None, len(data))
    return Estimate(median, low, high, len(data))


def slope_estimate(x: Sequence[float], y: Sequence[float]) -> Estimate | None:
    """The least-squares slope of y on x (scipy.stats.linregress) with its t interval (n - 2
    degrees of freedom); no interval from fewer than three points."""
    from scipy import stats

    if len(x) < 2 or len(set(x)) < 2:
        return None
    fit = stats.linregress(x, y)
    if len(x) < 3:
        return Estimate(float(fit.slope), None, None, len(x))
    half = float(stats.t.ppf((1 + CONFIDENCE) / 2, len(x) - 2)) * float(fit.stderr)
    return Estimate(float(fit.slope), float(fit.slope) - half, float(fit.slope) + half, len(x))
