"""A headline's evidence: the confirmation campaign's ratio, never the selection's.

`confirmed(selection, confirmation)` is the sentence a note's headline states about the
condition chosen as the best of its campaign (phase.analysis.selection): with a confirmation
campaign (phase.campaign.confirm), its ratio to plain and interval on fresh alternating runs,
resolved or not; without one, that the choice is unconfirmed and how to confirm it. The
selection's own ratio is given for comparison, labelled as the selection's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from phase.analysis.figures import row_interval, row_value
from phase.analysis.formatting import span, times
from phase.analysis.intervals import resolved
from phase.analysis.queries import condition_key, levels_text
from phase.analysis.selection import Selection, select
from phase.publish.data.datasets import Dataset
from phase.publish.numbers.headline import headline
from phase.results import FigureInterval


@dataclass(frozen=True)
class Confirmed:
    chosen: Selection
    selection_file: str
    confirmation_file: str | None
    ratio: float | None = None
    interval: FigureInterval | None = None

    @property
    def where(self) -> str:
        levels = levels_text(tuple(self.chosen.factors.items()))
        return f"{self.chosen.prompt} at {levels}" if levels else self.chosen.prompt

    @property
    def holds(self) -> bool:
        """The confirmation resolved the condition as faster than plain decoding."""
        return (self.ratio is not None and self.ratio > 1.0 and resolved(self.interval))

    def sentence(self) -> str:
        chose = (f"{self.chosen.strategy} on {self.where} was chosen as {self.chosen.rule} (of "
                 f"{self.chosen.among}; {times(self.chosen.speed_ratio)} plain decoding's speed "
                 "in the runs that chose it, which are not its evidence)")
        if self.confirmation_file is None:
            # No Markdown code span: the home page shows the sentence as HTML text.
            return (f"Unconfirmed: {chose}; no confirmation campaign has measured it again "
                    f"(to confirm it: phase confirm {self.selection_file}).")
        if self.ratio is None or self.interval is None:
            return (f"Not resolved: {chose}; its confirmation {self.confirmation_file} has "
                    "too few paired runs for an interval.")
        ci = span(self.interval.low, self.interval.high, times)
        pairs = self.interval.n
        if resolved(self.interval):
            return (f"Confirmed: {chose}; on {pairs} fresh pairs of runs alternating with "
                    f"plain decoding ({self.confirmation_file}) it ran at "
                    f"{times(self.ratio)} plain's speed (95% interval {ci}).")
        return (f"Not confirmed: {chose}; on {pairs} fresh pairs of runs alternating with "
                f"plain decoding ({self.confirmation_file}) its speed was not resolved from "
                f"plain's (95% interval {ci} includes 1).")


def confirmed(selection: Dataset, confirmation: Dataset | None) -> Confirmed | None:
    """The headline's confirmation sentence for a campaign; None where nothing was chosen."""
    chosen = select(selection.summary.rows)
    if chosen is None:
        return None
    if confirmation is None:
        return Confirmed(chosen, selection.name, None)
    rows = confirmation.summary.rows
    row = next((r for r in rows if condition_key(r) == chosen.condition), None)
    if row is None:
        return Confirmed(chosen, selection.name, confirmation.name)
    return Confirmed(chosen, selection.name, confirmation.name,
                     row_value("speed_vs_plain", rows, row),
                     row_interval("speed_vs_plain", row))


def headline_with_evidence(datasets: list[Dataset],
                           confirmations: Mapping[str, Dataset]) -> str | None:
    """A version's headline: for each campaign of runs, its chosen condition's confirmation
    sentence; a transcribed summary (no runs here, nothing to confirm) keeps the headline its
    figures give, as its source published them."""
    sentences: list[str] = []
    for ds in datasets:
        if ds.raw_header is None:
            line = headline([ds])
        else:
            found = confirmed(ds, confirmations.get(ds.name))
            line = found.sentence() if found is not None else None
        if line:
            sentences.append(line)
    return " ".join(sentences) or None
