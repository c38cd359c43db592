"""Issue 30, class 4: every evidence and trace field a run records is checked or rejected as
unexpected, on runs that match plain decoding as on runs that do not.

Files are the committed campaigns altered the way a bug would alter them: evidence copied
onto a run that matches, a trace timed in the wrong unit, a proposal past the run's end.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import replaced

from phase.results import ResultsFile, Run, load_raw
from phase.validate import Finding, validate_results

REPO = Path(__file__).resolve().parent.parent
COMMITTED = sorted((REPO / "results").glob("speculative-x86_64-2c-2026-11-30*.json"))
CAMPAIGN = REPO / "results" / "speculative-x86_64-2c-2026-11-30-2.json"


def blocking(results: ResultsFile) -> list[Finding]:
    return [f for f in validate_results(results, "r.json").findings if f.severity == "blocking"]


def changed(results: ResultsFile, i: int, run: Run) -> ResultsFile:
    runs = list(results.runs)
    runs[i] = run
    return replaced(results, runs=runs)


def _matching(results: ResultsFile, strategy: str) -> int:
    return next(i for i, r in enumerate(results.runs)
                if r.matches_plain and r.strategy == strategy)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_the_committed_campaigns_have_nothing_blocking(path: Path) -> None:
    assert blocking(load_raw(path)) == []


@pytest.mark.parametrize(
    "evidence",
    [
        {"divergence_gap_verify": 0.31, "divergence_gap_reference": 0.12},
        {"first_divergence": 57},
        {"divergence_gap_reference": 0.0},
    ],
)
def test_divergence_evidence_on_a_run_that_matches_blocks(evidence: dict[str, object]) -> None:
    # A writer that copies the previous run's evidence onto the next one.
    results = load_raw(CAMPAIGN)
    i = _matching(results, "draft-2")
    found = blocking(changed(results, i, replaced(results.runs[i], **evidence)))
    assert {f.json_path for f in found} == {f"$.runs[{i}].{k}" for k in evidence}
    assert all(f.rule == "equivalence" and f.run_id == results.runs[i].id for f in found)
    assert all("identical to the plain reference" in f.message for f in found)


def test_a_trace_timed_in_microseconds_does_not_fit_its_decode_window() -> None:
    results = load_raw(CAMPAIGN)
    i = _matching(results, "ngram")
    run = results.runs[i]
    trace = [replaced(s, propose_ms=s.propose_ms * 1e3, verify_ms=s.verify_ms * 1e3)
             for s in run.trace]
    [f] = blocking(changed(results, i, replaced(run, trace=trace)))
    assert (f.rule, f.run_id, f.json_path) == ("consistency", run.id, f"$.runs[{i}].trace")
    assert "decode window" in f.message


def test_a_draft_step_proposing_fewer_than_it_may_blocks() -> None:
    # The draft model always drafts k tokens (or the tokens left - 1): a 4-token step
    # recorded as 3 with the accounting kept consistent is a trace that never happened.
    results = load_raw(CAMPAIGN)
    i = next(i for i, r in enumerate(results.runs) if r.strategy == "draft-4")
    run = results.runs[i]
    j = next(j for j, s in enumerate(run.trace) if s.proposed == 4 and s.accepted < 3)
    trace = list(run.trace)
    trace[j] = replaced(trace[j], proposed=3)
    drafted = run.drafted - 1
    altered = replaced(run, trace=trace, drafted=drafted, acceptance=run.accepted / drafted)
    [f] = blocking(changed(results, i, altered))
    assert f.json_path == f"$.runs[{i}].trace[{j}].proposed" and "exactly 4" in f.message


def test_a_proposal_past_the_runs_end_blocks() -> None:
    # The last step of an ngram run claims 2 proposed tokens when only the target's own
    # token was left to make.
    results = load_raw(CAMPAIGN)
    i = next(i for i, r in enumerate(results.runs) if r.strategy == "plain")
    run = results.runs[i]
    last = len(run.trace) - 1
    trace = list(run.trace)
    trace[last] = replaced(trace[last], proposed=2)
    altered = replaced(run, strategy="ngram", k=results.config.ngram_k, id=run.id, trace=trace,
                       drafted=2, acceptance=0.0, acceptance_reason=None)
    found = [f for f in blocking(changed(results, i, altered))
             if f.json_path == f"$.runs[{i}].trace[{last}].proposed"]
    assert found and "left to generate" in found[0].message
