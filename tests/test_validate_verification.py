"""The verification rule (phase/validate/rules/verification.py) on altered copies of the
committed sampled campaign (results/speculative_sampling-x86_64-2c-2026-12-03.json).

The committed file predates Run.verification: it validates as before, with the rule
unrecorded as a note. Each altered copy is written as phase writes files and validated again;
it must be blocked by the rule meant for it, naming the JSON path. The class, not one example:
every point-mass step of every sampled n-gram run has its accepted (and proposed) count moved,
and every verification record that is not a known exact rule on a run that proposes is
refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import replaced, write_results

from phase.policy.speculative_sampling import RECORDED
from phase.results import ResultsFile, Run, Step, Verification, load
from phase.validate import validate_file, validate_results
from phase.validate.report import Context
from phase.validate.rules import verification
from phase.validate.settings import DEFAULT_SETTINGS

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "results" / "speculative_sampling-x86_64-2c-2026-12-03.json"
REJECTION = RECORDED["rejection"].verification


@pytest.fixture(scope="module")
def committed() -> ResultsFile:
    return load(COMMITTED)


def _with_runs(results: ResultsFile, runs: dict[int, Run]) -> ResultsFile:
    return replaced(results, runs=[runs.get(i, r) for i, r in enumerate(results.runs)])


def _recorded(results: ResultsFile) -> ResultsFile:
    """The file as phase writes it now: every sampled run that proposes records its rule."""
    return _with_runs(results, {i: replaced(r, verification=REJECTION)
                                for i, r in enumerate(results.runs)
                                if r.seed is not None and r.k is not None})


def _blocked(results: ResultsFile, tmp_path: Path, rule: str, path: str) -> None:
    """Written and validated end to end: blocked by `rule` at `path`."""
    report = validate_file(write_results(results, tmp_path / "altered.json"))
    found = [(f.rule, f.json_path) for f in report.findings if f.severity == "blocking"]
    assert (rule, path) in found, found
    assert report.blocking


def _rule_paths(results: ResultsFile) -> list[str | None]:
    return [f.json_path for f in verification.check(results, DEFAULT_SETTINGS, Context("x"))]


def _index(results: ResultsFile, sampled: bool, proposes: bool) -> int:
    return next(i for i, r in enumerate(results.runs)
                if (r.seed is not None) == sampled and (r.k is not None) == proposes)


def test_the_committed_campaign_validates_as_before_with_the_rule_unrecorded(
        committed: ResultsFile) -> None:
    report = validate_results(committed, str(COMMITTED))
    assert not report.blocking
    assert not [f for f in report.findings if f.rule == "verification"]
    assert len(report.notes) == 1 and "unrecorded: 81 sampled run(s)" in report.notes[0]
    assert report.to_dict()["notes"] == report.notes


def test_a_file_recording_its_rule_has_no_note_and_no_finding(committed: ResultsFile) -> None:
    recorded = _recorded(committed)
    assert _rule_paths(recorded) == []
    assert verification.unrecorded(recorded) == []


@pytest.mark.parametrize("record, field", [
    (Verification(name="speculative-rejection-sampling", version=2), "verification"),
    (Verification(name="rejection-sampling-ish", version=1), "verification"),
    (RECORDED["llama-speculative"].verification, "verification.name"),
])
def test_an_unknown_or_inexact_rule_is_blocked(committed: ResultsFile, tmp_path: Path,
                                               record: Verification, field: str) -> None:
    recorded = _recorded(committed)
    i = _index(recorded, sampled=True, proposes=True)
    altered = _with_runs(recorded, {i: replaced(recorded.runs[i], verification=record)})
    _blocked(altered, tmp_path, "verification", f"$.runs[{i}].{field}")


@pytest.mark.parametrize("sampled, proposes", [(False, True), (False, False), (True, False)])
def test_a_rule_where_nothing_is_verified_by_sampling_is_blocked(
        committed: ResultsFile, sampled: bool, proposes: bool) -> None:
    """Greedy runs (no seed) and plain ones (k null) record no rule."""
    recorded = _recorded(committed)
    i = _index(recorded, sampled, proposes)
    altered = _with_runs(recorded, {i: replaced(recorded.runs[i], verification=REJECTION)})
    assert _rule_paths(altered) == [f"$.runs[{i}].verification"]


def test_a_record_dropped_from_one_run_of_a_recording_file_is_blocked(
        committed: ResultsFile, tmp_path: Path) -> None:
    recorded = _recorded(committed)
    i = _index(recorded, sampled=True, proposes=True)
    altered = _with_runs(recorded, {i: replaced(recorded.runs[i], verification=None)})
    _blocked(altered, tmp_path, "verification", f"$.runs[{i}].verification")


def _point_mass_steps(results: ResultsFile) -> Iterator[tuple[int, int]]:
    """(run, step) of every step with proposals of the replayable sampled n-gram runs."""
    for i, run in enumerate(results.runs):
        if run.seed is not None and verification._proposer(run, results) is not None:
            yield from ((i, j) for j, s in enumerate(run.trace) if s.proposed > 0)


def _run_changed(run: Run, j: int, **change: int) -> Run:
    trace = [replaced(s, **change) if k == j else s for k, s in enumerate(run.trace)]
    return run.model_copy(update={"trace": trace})


def _step_changed(results: ResultsFile, i: int, j: int, **change: int) -> ResultsFile:
    return _with_runs(results, {i: _run_changed(results.runs[i], j, **change)})


def _replayed(results: ResultsFile, run: Run) -> str | None:
    """The field the rule's replay of this one run blocks (the file's other runs pass)."""
    problem = verification._replay(run, results)
    return problem[1] if problem is not None else None


def test_every_point_mass_steps_acceptance_is_recomputed_from_the_tokens(
        committed: ResultsFile) -> None:
    steps = list(_point_mass_steps(committed))
    assert len(steps) >= 20  # the committed campaign's sampled n-gram steps with proposals
    rejected = 0
    for i, j in steps:
        step: Step = committed.runs[i].trace[j]
        rejected += step.accepted < step.proposed
        run = committed.runs[i]
        assert _replayed(committed, run) is None
        for accepted in {step.accepted - 1, step.accepted + 1} & set(range(step.proposed + 1)):
            altered = _run_changed(run, j, accepted=accepted)
            assert _replayed(committed, altered) == f"trace[{j}].accepted", (i, j)
        for proposed in {step.proposed - 1, step.proposed + 1} - set(range(step.accepted)):
            altered = _run_changed(run, j, proposed=proposed)
            assert _replayed(committed, altered) == f"trace[{j}].proposed", (i, j)
    assert rejected >= 1  # a rejected point mass among them


def _kept_and_rejected(results: ResultsFile) -> tuple[int, int, int]:
    """A sampled n-gram run with a step that kept a proposal and another that rejected one."""
    for i, run in enumerate(results.runs):
        if run.seed is None or verification._proposer(run, results) is None:
            continue
        kept = [j for j, s in enumerate(run.trace) if s.accepted > 0]
        short = [j for j, s in enumerate(run.trace) if s.accepted < s.proposed]
        if kept and short and kept[0] != short[0]:
            return i, kept[0], short[0]
    raise AssertionError("no sampled n-gram run with a kept and a rejected step")


def test_acceptance_moved_between_steps_is_blocked_end_to_end(committed: ResultsFile,
                                                              tmp_path: Path) -> None:
    """The totals stay (consistency's sums agree), one step's acceptance is moved to another:
    only the replay can tell."""
    i, a, b = _kept_and_rejected(committed)
    run = committed.runs[i]
    altered = _step_changed(committed, i, a, accepted=run.trace[a].accepted - 1)
    altered = _step_changed(altered, i, b, accepted=run.trace[b].accepted + 1)
    _blocked(altered, tmp_path, "verification", f"$.runs[{i}].trace[{min(a, b)}].accepted")


def test_a_sampled_runs_totals_are_recomputed_from_its_trace(committed: ResultsFile,
                                                             tmp_path: Path) -> None:
    """drafted, accepted and acceptance of a sampled draft run: the trace's sums (the
    consistency rule recomputes them for every run, sampled ones included)."""
    i = next(i for i, r in enumerate(committed.runs) if r.seed is not None and r.drafted > 2
             and 0 < r.accepted < r.drafted)
    run = committed.runs[i]
    _blocked(_with_runs(committed, {i: replaced(run, acceptance=(run.accepted + 1) / run.drafted)}),
             tmp_path, "consistency", f"$.runs[{i}].acceptance")
    _blocked(_with_runs(committed, {i: replaced(run, drafted=run.drafted + 1,
                                                acceptance=run.accepted / (run.drafted + 1))}),
             tmp_path, "consistency", f"$.runs[{i}].drafted")
