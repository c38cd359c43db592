"""The counts behind a rate: a percentage on a page rests on so many events, and a reader
who sees "100%" must be able to tell 22 of 22 from 2 of 2.

    Counts                 kept of tried (accepted of drafted tokens), and its rate
    acceptance_counts      accepted and drafted tokens summed over runs
    row_acceptance_counts  those of the runs behind a summary row (its undisturbed runs)
    rate_with_counts       "51% (412/812)": a rate as pages write it, with its counts

The rate a page shows is the summary's figure (the median of the runs' acceptances, which the
intervals are of); the counts beside it are summed over the same runs, so a reader sees both
how much evidence there is and, where the two differ, that runs disagreed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from phase.analysis.formatting import DASH, pct
from phase.results import ResultsFile, Run, SummaryRow


@dataclass(frozen=True)
class Counts:
    kept: int
    tried: int

    @property
    def rate(self) -> float | None:
        """kept / tried, pooled (None where nothing was tried)."""
        return self.kept / self.tried if self.tried else None

    @property
    def text(self) -> str:
        return f"{self.kept}/{self.tried}"


def acceptance_counts(runs: Iterable[Run]) -> Counts:
    """Accepted and drafted tokens summed over the runs."""
    kept = tried = 0
    for run in runs:
        kept += run.accepted
        tried += run.drafted
    return Counts(kept, tried)


def row_acceptance_counts(raw: ResultsFile | None, row: SummaryRow) -> Counts | None:
    """The accepted/drafted counts of the runs a summary row was computed from; None where
    the runs are not at hand (a transcribed summary) or the row names none."""
    if raw is None or not row.run_ids:
        return None
    ids = set(row.run_ids)
    runs: Sequence[Run] = [r for r in raw.runs if r.id in ids]
    return acceptance_counts(runs) if runs else None


def rate_with_counts(rate: float | None, counts: Counts | None,
                     show: Callable[[float | None], str] = pct) -> str:
    """"51% (412/812)"; the rate alone where no counts are known, a dash where no rate."""
    if rate is None:
        return DASH
    return show(rate) if counts is None else f"{show(rate)} ({counts.text})"
