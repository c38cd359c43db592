"""The rules written for one-request runs read a serving run as the schema 14 contract states
it (phase/results/serving.py): its fields describe the whole load, its prompt is the pool's
name and its requests are checked one by one elsewhere. A consistent serving file has no
blocking finding; a run that breaks what it shares with every run is still refused, naming
the JSON path."""

from __future__ import annotations

from factories import replaced
from serving_factories import serving_campaign

from phase.results import ResultsFile
from phase.validate import validate_results


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


def test_a_serving_run_whose_speed_does_not_follow_is_refused() -> None:
    results = serving_campaign(repeats=2)
    runs = list(results.runs)
    runs[1] = replaced(runs[1], tokens_per_s=runs[1].tokens_per_s * 2)
    [(path, message)] = _blocking(replaced(results, runs=runs))
    assert path == "$.runs[1].tokens_per_s" and message.startswith("tokens_per_s is ")
