"""A run's predicted cost by its strategy label: the family's cost terms, handed to the
strategy-agnostic phase.costmodel.predict."""

from __future__ import annotations

from collections.abc import Sequence

from phase.costmodel.curve import CostTable
from phase.costmodel.predict import Proposing, Terms
from phase.costmodel.predict import run_terms as _run_terms
from phase.costmodel.predict import step_costs as _step_costs
from phase.policy.strategies.registry import Family, family_of, recorded_proposing
from phase.results import Step


def _terms_of(strategy: str) -> tuple[Family | None, bool]:
    fam = family_of(strategy)
    return fam, fam is not None and fam.every_step


def _proposing(fam: Family | None, step: Step) -> Proposing:
    if fam is None:  # a label no family spells: only what the step recorded
        return recorded_proposing(step, Proposing.NONE)
    return fam.step_proposing(step)


def step_costs(steps: Sequence[Step], strategy: str, table: CostTable) -> list[Terms]:
    """The predicted cost of each step of a run of `strategy` (a results-file label)."""
    fam, every_step = _terms_of(strategy)
    return _step_costs(steps, table, lambda s: _proposing(fam, s), every_step)


def run_terms(steps: Sequence[Step], strategy: str, table: CostTable) -> Terms:
    fam, every_step = _terms_of(strategy)
    return _run_terms(steps, table, lambda s: _proposing(fam, s), every_step)
