"""The rules written for one-request runs read a serving run as the schema 14 contract states
it (phase/results/serving.py): its fields describe the whole load, its prompt is the pool's
name and its requests are checked one by one elsewhere. A consistent serving file has no
blocking finding; a run that breaks what it shares with every run is still refused, naming
the JSON path."""

from __future__ import annotations

from pathlib import Path

from factories import replaced
from serving_factories import serving_campaign

from phase.results import ResultsFile, token_sha256
from phase.validate import Report, validate_file, validate_results

REPO = Path(__file__).resolve().parent.parent


def _blocking(results: ResultsFile) -> list[tuple[str, str]]:
    report = validate_results(results, "serving.json")
    return [(f.json_path or "", f.message) for f in report.findings if f.severity == "blocking"]


def test_a_consistent_serving_campaign_has_no_blocking_finding() -> None:
    results = serving_campaign(strategies=("plain", "draft-4", "ngram", "auto"), repeats=2)
    assert _blocking(results) == []


def test_a_serving_run_whose_prompt_is_not_the_pool_is_refused() -> None:
    results = serving_campaign(repeats=2)
    runs = list(results.runs)
    runs[3] = replaced(runs[3], prompt="q1")
    found = _blocking(replaced(results, runs=runs))
    assert ("$.runs[3].prompt", "prompt 'q1' of a serving run is not $.config.serving.pool "
            "('pool')") in found


def test_the_strategies_of_a_repeat_and_level_serve_one_seeded_load() -> None:
    """Schema 17 (config.serving.order_seed "load"): one seed and one order of prompts per
    repeat and level, whatever the strategy; another repeat or level draws another."""
    results = serving_campaign(strategies=("plain", "draft-4", "ngram"), repeats=2)
    loads: dict[tuple[int, object], set[tuple[int, tuple[str, ...]]]] = {}
    for run in results.runs:
        assert run.serving is not None
        key = (run.repeat, run.factors["concurrency"])
        loads.setdefault(key, set()).add(
            (run.serving.seed, tuple(q.prompt for q in run.serving.requests)))
    assert all(len(drawn) == 1 for drawn in loads.values())
    assert len({next(iter(drawn))[0] for drawn in loads.values()}) == len(loads)


def test_the_serving_note_says_when_every_strategy_served_one_load() -> None:
    from phase.publish.notes.serving_section import load_text
    from phase.results import load_raw

    assert "serves the same requests in the same order" in load_text(
        serving_campaign(repeats=1))
    # Campaign 5 (schema 16) drew each run's order by its own id: the note does not say so.
    committed = load_raw(REPO / "results" / "serving-x86_64-2c-2026-12-07-3.json")
    assert "same requests" not in load_text(committed)


def test_a_seed_or_prompt_the_order_rule_does_not_give_is_refused() -> None:
    """A load that cannot be drawn again from the file is blocked at the field: a seed the
    rule does not give, a request whose prompt the seeded order does not draw, and a file
    before schema 17 (no order_seed) read by its own rule, the run's id."""
    results = serving_campaign(repeats=2)
    runs = list(results.runs)
    serving = runs[2].serving
    assert serving is not None
    runs[2] = replaced(runs[2], serving=replaced(serving, seed=serving.seed + 1))
    requests = list(runs[4].serving.requests)  # type: ignore[union-attr]
    other = next(p.name for p in results.config.prompts if p.name != requests[5].prompt)
    requests[5] = replaced(requests[5], prompt=other)
    runs[4] = replaced(runs[4], serving=replaced(runs[4].serving, requests=requests))
    found = dict(_blocking(replaced(results, runs=runs)))
    assert found["$.runs[2].serving.seed"].startswith(f"seed is {serving.seed + 1}, but the "
                                                      "order seed rule")
    assert "by its repeat and levels" in found["$.runs[2].serving.seed"]
    assert found["$.runs[4].serving.requests[5].prompt"].startswith(f"prompt is {other!r}")
    # Before schema 17 the seed followed the run's id: these seeds do not, and say so.
    old = replaced(results, config=replaced(results.config, serving=replaced(
        results.config.serving, order_seed=None)))
    paths = [p for p, m in _blocking(old) if "by its run id" in m]
    assert paths and all(p.endswith(".serving.seed") for p in paths)


def test_a_serving_run_whose_speed_does_not_follow_is_refused() -> None:
    results = serving_campaign(repeats=2)
    runs = list(results.runs)
    runs[1] = replaced(runs[1], tokens_per_s=runs[1].tokens_per_s * 2)
    [(path, message)] = _blocking(replaced(results, runs=runs))
    assert path == "$.runs[1].tokens_per_s" and message.startswith("tokens_per_s is ")


# -- a served request that differs from plain decoding, and its evidence -----------------------

REF_GAP = 0.2  # every reference token's top-2 logit gap: a near tie at any position


def _with_gaps(results: ResultsFile) -> ResultsFile:
    """The file as phase writes it now: every reference records its per-token gaps."""
    refs = [replaced(r, top2_gaps=[REF_GAP] * len(r.token_ids)) for r in results.references]
    return replaced(results, references=refs)


def _diverged(results: ResultsFile, *, at: int = 3, evidence: bool = True,
              gap_verify: float | None = 0.1, gap_reference: float | None = REF_GAP,
              run_index: int = 1, request_index: int = 2) -> ResultsFile:
    """Request `request_index` of run `run_index` parts from plain decoding at token `at`,
    and everything the run derives from its requests follows, as phase writes it; with
    `evidence`, the request records its first divergence and the two gaps there."""
    runs = list(results.runs)
    run = runs[run_index]
    assert run.serving is not None
    requests = list(run.serving.requests)
    q = requests[request_index]
    tokens = list(q.token_ids)
    tokens[at] = (tokens[at] + 1) % 49152
    requests[request_index] = replaced(
        q, token_ids=tokens, matches_plain=False,
        **({"first_divergence": at, "divergence_gap_verify": gap_verify,
            "divergence_gap_reference": gap_reference} if evidence else {}))
    ids = [t for r in requests for t in r.token_ids]
    first = sum(len(r.token_ids) for r in requests[:request_index]) + at
    runs[run_index] = replaced(
        run, serving=replaced(run.serving, requests=requests), token_ids=ids,
        output_sha256=token_sha256(ids), matches_plain=False, first_divergence=first)
    return replaced(results, runs=runs)


def _report(results: ResultsFile) -> Report:
    return validate_results(results, "serving.json")


def test_a_request_that_differs_at_a_near_tie_is_a_note_not_a_finding() -> None:
    report = _report(_diverged(_with_gaps(serving_campaign(repeats=1))))
    assert not report.blocking
    assert [f for f in report.findings if f.rule == "equivalence"] == []
    [note] = [n for n in report.notes if n.startswith("serving near ties")]
    assert "1 of 1 differing served request(s)" in note and "below 0.5" in note


def test_a_request_that_differs_against_a_clear_margin_is_refused() -> None:
    report = _report(_diverged(_with_gaps(serving_campaign(repeats=1)), gap_verify=3.0))
    [finding] = [f for f in report.findings if f.rule == "equivalence"]
    assert finding.severity == "blocking" and finding.category == "mismatch"
    assert finding.json_path == "$.runs[1].serving.requests[2].divergence_gap_verify"
    assert "request 2: differs from plain decoding from token 3; mismatch" in finding.message
    assert not any(n.startswith("serving near ties") for n in report.notes)


def test_a_clear_margin_on_the_reference_side_is_refused_too() -> None:
    results = _with_gaps(serving_campaign(repeats=1))
    refs = [replaced(r, top2_gaps=[4.0] * len(r.token_ids)) for r in results.references]
    report = _report(_diverged(replaced(results, references=refs), gap_reference=4.0))
    assert [f.category for f in report.findings if f.severity == "blocking"] == ["mismatch"]


def test_a_divergence_without_its_gap_in_a_file_that_records_them_is_refused() -> None:
    once = _diverged(_with_gaps(serving_campaign(repeats=1)))
    both = _diverged(once, run_index=3, request_index=0, at=1, gap_verify=None)
    [(path, message)] = _blocking(both)
    assert path == "$.runs[3].serving.requests[0].divergence_gap_verify"
    assert "its own top-2 logit gap there is not recorded" in message


def test_recorded_evidence_that_disagrees_with_the_tokens_is_refused() -> None:
    results = _diverged(_with_gaps(serving_campaign(repeats=1)))
    runs = list(results.runs)
    run = runs[1]
    assert run.serving is not None
    requests = list(run.serving.requests)
    requests[2] = replaced(requests[2], first_divergence=4)  # the tokens part at 3
    requests[0] = replaced(requests[0], divergence_gap_verify=0.1)  # it matches plain
    runs[1] = replaced(run, serving=replaced(run.serving, requests=requests))
    found = dict(_blocking(replaced(results, runs=runs)))
    assert "first_divergence is 4, but its tokens part" in found[
        "$.runs[1].serving.requests[2].first_divergence"]
    assert "its tokens equal the plain reference" in found[
        "$.runs[1].serving.requests[0].divergence_gap_verify"]


def test_a_reference_gap_that_is_not_the_references_own_is_refused() -> None:
    results = _diverged(_with_gaps(serving_campaign(repeats=1)), gap_reference=0.01)
    [(path, message)] = _blocking(results)
    assert path == "$.runs[1].serving.requests[2].divergence_gap_reference"
    assert "is not the reference's own gap 0.2 at token 3" in message


def test_an_older_file_without_the_evidence_gets_a_note_never_a_finding() -> None:
    """Files written before serving runs recorded the gaps (the committed serving campaign)
    stay publishable: their differences are unclassified, and the report says so."""
    report = _report(_diverged(serving_campaign(repeats=1), evidence=False))
    assert not report.blocking
    assert [f for f in report.findings if f.rule == "equivalence"] == []
    [note] = [n for n in report.notes if n.startswith("serving divergences unclassified")]
    assert "1 served request(s) differ" in note


def test_the_committed_serving_campaign_stays_publishable() -> None:
    report = validate_file(REPO / "results" / "serving-x86_64-2c-2026-12-06.json")
    assert not report.blocking
    assert any(n.startswith("serving divergences unclassified: 109 served request(s)")
               for n in report.notes)


def test_a_serving_run_recording_gaps_of_its_own_is_refused() -> None:
    results = _diverged(_with_gaps(serving_campaign(repeats=1)))
    runs = list(results.runs)
    runs[1] = replaced(runs[1], divergence_gap_verify=0.1)
    [(path, message)] = _blocking(replaced(results, runs=runs))
    assert path == "$.runs[1].divergence_gap_verify"
    assert message.endswith("its evidence is each request's own")
