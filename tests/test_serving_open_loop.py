"""Open-loop serving campaigns (issue 46's second load generator): `phase measure serving
--request-rate R` on the real test model serves each run's requests at their seeded Poisson
arrival times, at most the run's concurrency level at once; the file records the load and
validates; the `serving` rule refuses arrivals that are not the seeded ones, admissions before
arrival, a closed loop whose requests waited, and more requests in flight than the level."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from click.testing import CliRunner
from factories import replaced
from serving_factories import serving_campaign

from phase.cli import main
from phase.results import ResultsFile, load_raw
from phase.serving.load import arrival_offsets
from phase.validate import validate_results

pytestmark = pytest.mark.model

SERVING = str(Path(__file__).resolve().parent.parent / "experiments" / "serving.py")
RATE = 4.0


@pytest.fixture(scope="module")
def open_loop(tmp_path_factory: pytest.TempPathFactory) -> ResultsFile:
    out = tmp_path_factory.mktemp("open") / "serving-open.json"
    result = CliRunner().invoke(main, [
        "measure", SERVING, "--quick", "--no-sensor", "--strategies", "plain,ngram",
        "--prompts", "humaneval-53,humaneval-55,humaneval-23", "--request-rate", str(RATE),
        "--no-profile", "--cooldown", "0", "--idle-window", "0", "--no-disturbance",
        "-o", str(out)])
    assert result.exit_code == 0, result.output
    return load_raw(out)


def _blocking(results: ResultsFile) -> list[tuple[str, str]]:
    report = validate_results(results, "serving.json")
    return [(f.json_path or "", f.message) for f in report.findings if f.severity == "blocking"]


def test_open_loop_requests_arrive_at_their_seeded_times(open_loop: ResultsFile) -> None:
    serving = open_loop.config.serving
    assert serving is not None
    assert (serving.load, serving.request_rate) == ("open", RATE)
    assert {(r.strategy, r.factors["concurrency"]) for r in open_loop.runs} == {
        (s, c) for s in ("plain", "ngram") for c in (1, 2)}
    for run in open_loop.runs:
        assert run.serving is not None
        requests = run.serving.requests
        scheduled = arrival_offsets(RATE, serving.requests, run.serving.seed)
        assert [r.arrival_s for r in requests] == pytest.approx(list(scheduled), abs=1e-6)
        # The first at once, the rest spread out (not all at the start, vLLM's `inf`).
        assert scheduled[0] == 0.0 and all(b > a for a, b in pairwise(scheduled))
        assert all(r.admission_s >= r.arrival_s for r in requests)
        # Time to first token counts from arrival, so it includes any wait for a slot.
        assert all(r.ttft_s == pytest.approx(r.first_token_s - r.arrival_s)
                   for r in requests if r.first_token_s is not None)
        # each prefill timed alone, inside the time between admission and first token
        assert all(r.prefill_s is not None and 0 < r.prefill_s <= r.first_token_s - r.admission_s
                   for r in requests if r.first_token_s is not None and r.prompt_tokens > 1)
    # --no-disturbance: recorded, judged by nothing (tests/test_prefill_slowdown.py judges)
    assert all(r.speed_vs_prefill is None for r in open_loop.runs)
    assert _blocking(open_loop) == []


def test_open_loop_arrivals_other_than_the_seeded_ones_are_refused(
        open_loop: ResultsFile) -> None:
    run = open_loop.runs[0]
    assert run.serving is not None
    requests = list(run.serving.requests)
    late = requests[1]
    requests[1] = replaced(late, arrival_s=late.arrival_s + 0.25, admission_s=late.admission_s
                           + 0.25 if late.admission_s < late.arrival_s + 0.25 else
                           late.admission_s)
    tampered = replaced(open_loop, runs=[replaced(run, serving=replaced(
        run.serving, requests=requests)), *open_loop.runs[1:]])
    found = _blocking(tampered)
    assert any(path == "$.runs[0].serving.requests[1].arrival_s" and "seeded arrivals" in msg
               for path, msg in found), found


def test_a_closed_loop_request_that_waited_is_refused() -> None:
    results = serving_campaign(repeats=2)
    run = results.runs[5]
    assert run.serving is not None
    requests = list(run.serving.requests)
    requests[2] = replaced(requests[2], arrival_s=max(0.0, requests[2].admission_s - 0.1))
    tampered = replaced(results, runs=[*results.runs[:5], replaced(run, serving=replaced(
        run.serving, requests=requests)), *results.runs[6:]])
    found = _blocking(tampered)
    assert any(path == "$.runs[5].serving.requests[2].arrival_s" and "closed loop" in msg
               for path, msg in found), found


def test_more_requests_in_flight_than_the_level_are_refused() -> None:
    results = serving_campaign(repeats=2, levels=(2,))
    run = results.runs[0]
    assert run.serving is not None and run.serving.concurrency == 2
    requests = list(run.serving.requests)
    # The third request admitted as early as the first: three in flight at a level of two.
    first = requests[0]
    requests[2] = replaced(requests[2], arrival_s=first.arrival_s,
                           admission_s=first.admission_s)
    tampered = replaced(results, runs=[replaced(run, serving=replaced(
        run.serving, requests=requests)), *results.runs[1:]])
    found = _blocking(tampered)
    assert any(path == "$.runs[0].serving.requests" and "in flight at once" in msg
               for path, msg in found), found


def test_a_request_rate_is_refused_outside_a_serving_study(tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    runner = CliRunner()
    result = runner.invoke(main, ["measure", "speculative", "--quick", "--request-rate", "2",
                                  "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert "plan.serving_request_rate" in result.output
    zero = runner.invoke(main, ["measure", SERVING, "--quick", "--request-rate", "0",
                                "-o", str(out)])
    assert zero.exit_code == 2 and "--request-rate" in zero.output
    assert not out.exists()
