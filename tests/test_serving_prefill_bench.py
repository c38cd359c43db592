"""bench/serving_prefill.py on a committed serving campaign: one row per level and strategy,
each speculative one compared with plain's runs at its level, and a within-run slope that
reads the requests' own admission times."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import serving_prefill
from phase.results import ResultsFile, load

REPO = Path(__file__).resolve().parent.parent
CAMPAIGN = REPO / "results" / "serving-x86_64-2c-2026-12-07-2.json"


@pytest.fixture(scope="module")
def campaign() -> ResultsFile:
    results = load(CAMPAIGN)
    assert isinstance(results, ResultsFile)
    return results


def test_each_level_and_strategy_has_a_row_compared_with_plain(campaign: ResultsFile) -> None:
    rows = serving_prefill._condition_table(campaign)[2:]
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    assert {(c[0], c[1]) for c in cells} == {
        (str(level), s) for level in (1, 2, 4, 8) for s in ("plain", "ngram", "draft-4", "auto")}
    for level, strategy, runs, ms, ratio, p, others in cells:
        assert int(runs) == 4 and float(ms) > 0
        assert (ratio == "-") == (strategy == "plain")
        if strategy != "plain":
            assert ratio.endswith("x") and 0.0 <= float(p) <= 1.0
        # One request at a time: nobody else is ever active at an admission.
        assert (float(others) == 0.0) == (level == "1")


def test_others_counts_requests_active_at_the_admission(campaign: ResultsFile) -> None:
    run = next(r for r in campaign.runs if r.serving is not None and r.serving.concurrency == 8)
    assert run.serving is not None
    requests = sorted(run.serving.requests, key=lambda q: q.admission_s)
    # The first request is admitted into an empty loop; at most concurrency - 1 others later.
    assert serving_prefill._others(requests, requests[0]) == 0
    assert max(serving_prefill._others(requests, q) for q in requests) <= 7
    assert "admissions" in serving_prefill._within_runs(campaign)
