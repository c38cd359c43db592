"""Questions experiments ask and the rules that answer them from a campaign's data.

    outcome   Question, Titles, the Outcome and its Parts, verdicts and how they combine
    crossover Crossover: per strategy, the concurrency from which it stops beating plain
    memory    MemoryBound: is decode memory-bound (share, bytes slope, threads, context fill)
    speed     BeatsPlain: per prompt, is a strategy resolved faster than plain decoding

The thresholds are the rules' fields, set in each experiment file (experiments/*.py).
"""

from phase.analysis.rules.crossover import Crossover
from phase.analysis.rules.memory import MemoryBound
from phase.analysis.rules.outcome import (
    NO,
    PARTLY,
    UNRESOLVED,
    YES,
    Judgement,
    Outcome,
    Part,
    Question,
    Rule,
    Titles,
    Verdict,
    combine,
)
from phase.analysis.rules.speed import BeatsPlain

__all__ = [
    "NO",
    "PARTLY",
    "UNRESOLVED",
    "YES",
    "BeatsPlain",
    "Crossover",
    "Judgement",
    "MemoryBound",
    "Outcome",
    "Part",
    "Question",
    "Rule",
    "Titles",
    "Verdict",
    "combine",
]
