"""Where does speculation stop paying under load? For a serving campaign (a `concurrency`
factor), each non-plain strategy's ratio of aggregate throughput to plain decoding's at each
level (phase.analysis.serving: paired by repeat, t interval on the logs, Benjamini-Hochberg
over the campaign's ratios), read level by level from the lowest:

    crossover      the lowest level whose ratio's 95% interval includes or falls below 1.0:
                   from there on the strategy is not shown to beat plain decoding
    pays everywhere  no such level: resolved above 1.0 at every level            -> yes
    stops at L     resolved above 1.0 below L, not at L                          -> partly
    never pays     resolved above 1.0 at no level (some level resolved below)    -> no
    unresolved     a level before any crossover has no interval (too few
                   repeats, no plain run), or no level is resolved either way    -> not resolved

The same reading of energy per request (lower is better: a level pays where the ratio's
interval lies wholly below 1.0), over the whole run and over the steady state, is stated in
each strategy's sentence but does not vote: the question is about throughput. Where no
sensor measured energy, the sentence says "not measured" with the runs' reason.

`auto` is also held to a floor: at every level its throughput over the better of plain and
the best fixed proposer must be at least `auto_floor`. That ratio is the lowest of auto's
paired ratios to each of them, with an interval that covers it whichever is truly best
(phase.analysis.intervals.floor_interval): yes where every level's interval lies at or above
the floor (each level must pass on its own, so no correction), no where one lies wholly below
it (its upper end is widened over the rivals and the levels for that), else not resolved. It
is stated with the parts and does not vote either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from phase.analysis.formatting import span, times
from phase.analysis.intervals import resolved
from phase.analysis.rules.outcome import (
    COMBINED,
    NO,
    PARTLY,
    UNRESOLVED,
    YES,
    Judgement,
    Part,
    Verdict,
    combine,
)
from phase.analysis.serving import (
    WINDOWS,
    AutoLevel,
    LevelRatio,
    Series,
    Window,
    auto_series,
    concurrency_factor,
    energy_series,
    throughput_series,
)
from phase.results import Level, ResultsFile, SummaryRow


@dataclass(frozen=True)
class Crossing:
    """How one series crosses 1.0: its case, its crossover level (None: none found or none
    can be placed) and the levels where it pays again after it."""

    case: str  # "pays everywhere" | "stops" | "never pays" | "unresolved"
    crossover: Level | None
    again: tuple[Level, ...]


def crossing(ratios: Sequence[LevelRatio], lower_is_better: bool = False) -> Crossing:
    """The declared reading of a series (module doc): walk the levels from the lowest."""
    standings = [r.standing(lower_is_better) for r in ratios]
    for i, (r, standing) in enumerate(zip(ratios, standings, strict=True)):
        if standing == "pays":
            continue
        if standing == "unknown":
            return Crossing("unresolved", None, ())
        again = tuple(x.level for x, s in zip(ratios[i + 1:], standings[i + 1:], strict=True)
                      if s == "pays")
        if i > 0 or again:
            return Crossing("stops", r.level, again)
        decided = any(x.interval is not None and x.value is not None and _resolved(x)
                      for x in ratios)
        return Crossing("never pays" if decided else "unresolved", r.level, ())
    if not ratios:
        return Crossing("unresolved", None, ())
    return Crossing("pays everywhere", None, ())


def _resolved(r: LevelRatio) -> bool:
    return resolved(r.interval, 1.0)


def _sentence_case(text: str) -> str:
    return text[:1].upper() + text[1:]


VERDICT_OF: dict[str, Verdict] = {"pays everywhere": YES, "stops": PARTLY, "never pays": NO,
                                  "unresolved": UNRESOLVED}


def ratio_text(r: LevelRatio) -> str:
    """`2: 1.31× (95% interval 1.20×–1.43×)`, or the reason there is no figure."""
    if r.value is None:
        return f"{r.level}: no ratio ({r.reason or 'not measured'})"
    if r.interval is None:
        return f"{r.level}: {times(r.value)} (no interval: {r.reason or 'too few repeats'})"
    # An interval that excludes 1.00 whose test does not survive the correction over the
    # campaign's ratios is not "resolved": say so, or the reader sees a contradiction.
    held = ("" if resolved(r.interval, 1.0) or r.interval.low <= 1.0 <= r.interval.high
            else ", not different from 1.00 after the Benjamini-Hochberg correction")
    return (f"{r.level}: {times(r.value)} (95% interval "
            f"{span(r.interval.low, r.interval.high, times)}{held})")


def crossing_text(c: Crossing, what: str, beat: str = "beat") -> str:
    """The crossing in words, `what` naming the figure ("throughput"), `beat` what paying
    means ("use less than", for energy)."""
    again = (f"; it pays again at {', '.join(str(a) for a in c.again)}" if c.again else "")
    return {
        "pays everywhere": f"its {what} is shown to {beat} plain decoding's at every "
                           f"concurrency",
        "stops": f"its {what} is not shown to {beat} plain decoding's from concurrency "
                 f"{c.crossover} on (the crossover){again}",
        "never pays": f"its {what} is shown to {beat} plain decoding's at no concurrency "
                      f"(crossover at the lowest, {c.crossover})",
        "unresolved": (f"where its {what} stops being shown to {beat} plain decoding's is not "
                       f"resolved" if c.crossover is None else
                       f"its {what} is resolved from plain decoding's at no concurrency, so "
                       f"whether it ever pays is not resolved (by the rule, the crossover is the "
                       f"lowest, {c.crossover})"),
    }[c.case]


def energy_text(window: str, ratios: Sequence[LevelRatio]) -> str:
    """One window's energy per request against plain by concurrency, read as the rule reads
    throughput (lower is better), or "not measured" with the runs' reason."""
    if all(r.value is None for r in ratios):
        reasons = sorted({r.reason for r in ratios if r.reason})
        return (f"energy per request ({window}): not measured, "
                f"{'; '.join(reasons) or 'no sensor'}")
    c = crossing(ratios, lower_is_better=True)
    return (f"energy per request ({window}) over plain by concurrency "
            + "; ".join(ratio_text(r) for r in ratios) + ": "
            + crossing_text(c, "energy per request", "use less than"))


@dataclass(frozen=True)
class Crossover:
    """The rule; `auto_floor` (set in the experiment file) is the least share of the better
    of plain and the best fixed proposer that `auto` must keep at every level."""

    auto_floor: float = 0.98

    def floor(self, r: LevelRatio) -> Verdict:
        """auto at one level: yes where the ratio's interval lies at or above the floor, no
        where it lies wholly below it, else (or without an interval) not resolved."""
        iv = r.interval
        if iv is None:
            return UNRESOLVED
        return YES if iv.low >= self.auto_floor else NO if iv.high < self.auto_floor else (
            UNRESOLVED)

    def strategy_part(self, s: Series, energy: Mapping[Window, list[Series]]) -> Part:
        test = ("the lowest concurrency whose throughput ratio to plain has a 95% interval "
                "that includes or falls below 1.00")
        c = crossing(s.ratios)
        sentence = (f"{s.strategy} on {s.where}: aggregate throughput over plain by "
                    f"concurrency " + "; ".join(ratio_text(r) for r in s.ratios) + ": "
                    + crossing_text(c, "throughput"))
        for window in WINDOWS:
            found = next((x for x in energy[window] if x.where == s.where
                          and x.strategy == s.strategy), None)
            if found is not None:
                sentence += ". " + _sentence_case(energy_text(window, found.ratios))
        return Part(f"{s.strategy} on {s.where}", test, VERDICT_OF[c.case], sentence + ".")

    def auto_part(self, where: str, levels: Sequence[AutoLevel]) -> Part:
        test = (f"auto's throughput over the better of plain and the best fixed proposer is at "
                f"least {times(self.auto_floor)} at every concurrency")
        verdicts: list[Verdict] = []
        said = []
        for a in levels:
            verdict = self.floor(a.ratio)
            verdicts.append(verdict)
            said.append(f"{ratio_text(a.ratio)} against {a.against}")
        verdict = (NO if NO in verdicts else YES if verdicts and all(v == YES for v in verdicts)
                   else UNRESOLVED)
        return Part(f"auto's floor on {where}", test, verdict, (
            f"auto on {where}, throughput over the better of plain and the best fixed proposer "
            f"by concurrency: " + "; ".join(said) + f". At least {times(self.auto_floor)} at "
            f"every concurrency: {verdict}."))

    def __call__(self, results: ResultsFile, rows: Sequence[SummaryRow]) -> Judgement:
        rule = ("per strategy (and prompt pool), the crossover is the lowest concurrency whose "
                "aggregate-throughput ratio to plain has a 95% interval (paired by repeat, "
                "Benjamini-Hochberg over the campaign's ratios) that includes or falls below "
                "1.00: yes where none does (it pays everywhere), partly where it pays below "
                "its crossover or again above it, no where it pays at no level and is resolved "
                "slower somewhere, not resolved where a level before the crossover has no "
                f"interval; {COMBINED}. Energy per request (whole run, steady state) is read "
                f"the same way and stated, as is auto against the better of plain and the best "
                f"fixed proposer (floor {times(self.auto_floor)}); neither votes")
        if concurrency_factor(results) is None:
            return Judgement(UNRESOLVED, (), "Not a serving campaign: it has no concurrency "
                             "factor, so no crossover can be found.", rule)
        energy = {w: energy_series(results, rows, w) for w in WINDOWS}
        parts = tuple(self.strategy_part(s, energy) for s in throughput_series(results, rows))
        autos = tuple(self.auto_part(where, levels)
                      for where, levels in auto_series(results, rows))
        verdict = combine([p.verdict for p in parts])
        return Judgement(verdict, parts + autos, _summary(verdict, parts), rule)


def _summary(verdict: Verdict, parts: Sequence[Part]) -> str:
    yes = [p.name for p in parts if p.verdict == YES]
    stops = [p.name for p in parts if p.verdict in (PARTLY, NO)]
    return {
        YES: f"Every speculative strategy beat plain decoding's throughput at every "
             f"concurrency ({len(yes)} of {len(parts)}).",
        PARTLY: f"Speculation stopped paying under load: {len(stops)} of {len(parts)} "
                f"strategies crossed below plain decoding's throughput at some concurrency "
                f"({', '.join(stops)}).",
        NO: f"No speculative strategy beat plain decoding's throughput at any concurrency "
            f"({len(parts)} strategies).",
        UNRESOLVED: f"Where speculation stops paying is not resolved for any of {len(parts)} "
                    f"strategies.",
    }[verdict]
