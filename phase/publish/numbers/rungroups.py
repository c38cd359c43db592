"""The groups of runs a note's rows stand on, each listed once on the file's data page.

A note's row used to link every run behind it, in every row (a prompt's twelve auto runs on
each of its rows of auto's choices): most of a heavy page's weight (issue 44, "a page under
150 KB"). Now a row links once, to a group on the data page that lists exactly its runs, each
linked to the run itself. A group is found by its set of runs, so that a row can only land on
a list of the very runs it names; the data page and the notes read the groups from here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from phase.analysis import runs_by_condition
from phase.analysis.prediction import best_k_rows, proposer_runs
from phase.analysis.queries import Condition, condition_key, levels_text
from phase.publish.markup.anchors import row_anchor, run_anchor, runs_anchor
from phase.results import ResultsFile, Run


@dataclass(frozen=True)
class RunGroup:
    anchor: str
    label: str  # what the runs have in common, from data (escaped where it is written)
    run_ids: list[str]  # in the order they ran

    @property
    def runs(self) -> list[tuple[str, str]]:
        """Each run's id and its anchor on the data page."""
        return [(i, run_anchor(i)) for i in self.run_ids]


def _group(anchor: str, label: str, runs: Iterable[Run]) -> RunGroup:
    return RunGroup(anchor, label, [r.id for r in sorted(runs, key=lambda r: r.order)])


def run_groups(raw: ResultsFile) -> list[RunGroup]:
    """Every condition's undisturbed runs (the runs of a results table's row), then each
    prompt x strategy's runs over every level where that is another set (auto's choices count
    them), then each prompt's runs that a proposer stepped in (a best k pools them)."""
    groups = [_group(row_anchor(p, s, levels), " × ".join(
        filter(None, (p, s, levels_text(levels)))), runs)
        for (p, s, levels), runs in runs_by_condition(raw).items()]
    seen = {frozenset(g.run_ids) for g in groups}
    pairs = dict.fromkeys((r.prompt, r.strategy) for r in raw.runs)
    candidates = [(runs_anchor(p, s), f"{p} × {s}, every run",
                   [r for r in raw.runs if (r.prompt, r.strategy) == (p, s)]) for p, s in pairs]
    proposers = dict.fromkeys((b.prompt, b.proposer) for b in best_k_rows(raw)) \
        if raw.profile is not None else {}
    candidates += [(runs_anchor(p, f"by-{proposer}"), f"{p}: every run {proposer} proposed in",
                    proposer_runs(raw, p, proposer)) for p, proposer in proposers]
    for anchor, label, runs in candidates:
        ids = frozenset(r.id for r in runs)
        if runs and ids not in seen:
            seen.add(ids)
            groups.append(_group(anchor, label, runs))
    return groups


class GroupLinks:
    """Where a note's row links on one file's data page (`page`, its URL)."""

    def __init__(self, raw: ResultsFile, page: str) -> None:
        self.page = page
        self.anchors = {frozenset(g.run_ids): g.anchor for g in run_groups(raw)}

    def hrefs(self, runs: Iterable[Run], label: str | None = None) -> list[tuple[str, str]]:
        """(label, href): one, to the group of exactly these runs, labelled `label` (else by
        their number); where no group holds exactly them, one to each run (labelled by its
        id) instead."""
        listed = sorted(runs, key=lambda r: r.order)
        anchor = self.anchors.get(frozenset(r.id for r in listed))
        if anchor is None:
            return [(r.id, f"{self.page}#{run_anchor(r.id)}") for r in listed]
        return [(label or runs_label(len(listed)), f"{self.page}#{anchor}")]

    def by_condition(self, runs: Iterable[Run]) -> list[tuple[str, str]]:
        """(label, href) for runs of several conditions (a figure that rests on every rival's
        runs): one per condition, labelled by its strategy, to the group of that condition's
        runs; where no group holds exactly them, one to each of them (labelled by its id)."""
        conditions: dict[Condition, list[Run]] = {}
        for run in sorted(runs, key=lambda r: r.order):
            conditions.setdefault(condition_key(run), []).append(run)
        return [link for (_, strategy, _), listed in conditions.items()
                for link in self.hrefs(listed, label=strategy)]


def runs_label(n: int) -> str:
    return f"{n} run" + ("" if n == 1 else "s")
