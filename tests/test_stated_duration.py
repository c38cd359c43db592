"""The time a campaign states before its runs, priced by strategy from a real cost profile,
kept in the results file, and checked against what the runs took (rule `duration`)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from phase.analysis.duration import took
from phase.campaign import load_experiment
from phase.campaign.duration import ASSUMED_RATE, decode_prices, estimate
from phase.campaign.plan import DEFAULT_PLAN, campaign_config
from phase.campaign.windows import PlannedWindow
from phase.costmodel import cost_table
from phase.costmodel.predict import expected_draft
from phase.policy.strategies import parse_strategy
from phase.results import PromptSpec, ResultsFile, StatedDuration, dump_json, load, parse
from phase.results.schedule import planned_schedule
from phase.validate import validate_results

REPO = Path(__file__).resolve().parent.parent
# A real campaign (1.5B target, 0.5B draft, x86_64-2c): its profile prices the runs.
QUIET = REPO / "bench" / "results" / "hog-campaigns-2026-12-05" / "quiet-a.json"


def _quiet() -> ResultsFile:
    results = load(QUIET)
    assert isinstance(results, ResultsFile)
    return results


def test_a_draft_plan_is_stated_longer_than_plain_by_the_predicted_factor() -> None:
    results = _quiet()
    assert results.profile is not None
    tokens, length = 64, 100
    plan = replace(DEFAULT_PLAN, strategies=("plain", "draft-4"), repeats=3, tokens=tokens,
                   cooldown_s=0.0, idle_window_s=0.0)
    config = campaign_config(plan, [PromptSpec(name="code", text="x")])
    strategies = {s: parse_strategy(s) for s in plan.strategies}
    prices = decode_prices(results.profile, {"code": length}, strategies, tokens)
    plain_s = prices[("code", "plain")]
    planned = [PlannedWindow("code", "plain", plain_s, "cost profile", 1)]
    runs = planned_schedule(config)
    by_plain = estimate(runs, planned, config)
    by_strategy = estimate(runs, planned, config, prices=prices)
    table = cost_table(results.profile, length + tokens // 2)
    factor = expected_draft(table, [ASSUMED_RATE] * 4, 4).cost_per_token / table.plain()
    assert factor > 1.5  # draft-4 at the assumed rate is far slower than plain on 2 cores
    assert by_plain.estimated_s is not None and by_strategy.estimated_s is not None
    assert by_plain.estimated_s == pytest.approx(6 * plain_s)
    assert by_strategy.estimated_s == pytest.approx(3 * plain_s * (1 + factor))
    assert f"an assumed {ASSUMED_RATE:g}" in by_strategy.line()
    assert "plain decoding's expected speed" in by_plain.line()
    # Each run's prefill, as the plain reference took it, is counted once per run.
    with_prefill = estimate(runs, planned, config, prices=prices, prefill_s={"code": 0.5})
    assert with_prefill.estimated_s == pytest.approx(by_strategy.estimated_s + 6 * 0.5)
    assert "prefill" in with_prefill.line() and "prefill" not in by_strategy.line()


def test_the_statement_round_trips_through_the_file(tmp_path: Path) -> None:
    results = _quiet()
    stated = StatedDuration(stated_unix_s=1.5, runs=24, estimated_s=300.0,
                            extra_budget_s=None, extra_budget_runs=None, max_reruns=2,
                            statement="time: about 5 min")
    results.stated_duration = stated
    path = tmp_path / "r.json"
    path.write_text(dump_json(results))
    again = load(path)
    assert isinstance(again, ResultsFile) and again.stated_duration == stated
    # A file without one writes none, and older files read with none.
    assert "stated_duration" not in dump_json(_quiet())
    old = json.loads(QUIET.read_text())
    loaded = parse(old)
    assert isinstance(loaded, ResultsFile) and loaded.stated_duration is None


def _stated(results: ResultsFile, estimated_s: float) -> ResultsFile:
    first = min(r.started_unix_s for r in results.runs)
    results.stated_duration = StatedDuration(
        stated_unix_s=first - 1.0, runs=len(results.runs), estimated_s=estimated_s,
        extra_budget_s=None, extra_budget_runs=None, max_reruns=2, statement="time: ...")
    return results


def _duration_findings(results: ResultsFile) -> list[str]:
    return [f.message for f in validate_results(results, "r.json").findings
            if f.rule == "duration"]


def test_the_rule_warns_where_the_runs_took_longer_than_stated() -> None:
    results = _quiet()
    span = (max(r.ended_unix_s for r in results.runs)
            - min(r.started_unix_s for r in results.runs))
    over = _stated(_quiet(), span / 2)
    found = took(over)
    assert found is not None and found.over_s is not None
    assert abs(found.over_s - span / 2) < 1e-6
    messages = _duration_findings(over)
    assert len(messages) == 1 and "took" in messages[0] and "100% past it" in messages[0]
    assert _duration_findings(_stated(results, span * 1.1)) == []
    assert _duration_findings(_quiet()) == []  # nothing stated: nothing to check


def test_re_runs_are_left_out_and_adaptive_rounds_get_their_budget() -> None:
    # A campaign whose hog disturbed two runs, re-run at the end of their repeat.
    hog = load(QUIET.parent / "runs-hog.json")
    assert isinstance(hog, ResultsFile)
    reruns = [r for r in hog.runs if r.rerun_of is not None]
    assert len(reruns) == 2
    rerun_s = sum(r.ended_unix_s - r.started_unix_s for r in reruns)
    span = max(r.ended_unix_s for r in hog.runs) - min(r.started_unix_s for r in hog.runs)
    # Stated a second short of the runs without their re-runs: over; a second more: within.
    assert len(_duration_findings(_stated(hog, span - rerun_s - 1.0))) == 1
    within = _stated(hog, span - rerun_s + 1.0)
    assert _duration_findings(within) == []
    found = took(within)
    assert found is not None and found.reruns == 2 and "2 re-run(s)" in found.line()
    # An adaptive plan may add its time budget; with a budget of runs only, that many runs at
    # the statement's mean time per run; with neither, nothing holds the runs.
    short = _stated(hog, span / 2)
    adaptive = short.config.model_copy(update={"target_half_width": 0.05})
    short.config = adaptive
    assert short.stated_duration is not None
    short.stated_duration = short.stated_duration.model_copy(update={"extra_budget_s": span})
    assert _duration_findings(short) == []
    by_runs = short.stated_duration.model_copy(update={"extra_budget_s": None,
                                                       "extra_budget_runs": 1})
    short.stated_duration = by_runs
    found = took(short)
    assert found is not None and found.extra_s == pytest.approx(span / 2 / len(hog.runs))
    assert len(_duration_findings(short)) == 1
    short.stated_duration = by_runs.model_copy(update={"extra_budget_runs": None})
    unlimited = took(short)
    assert unlimited is not None and unlimited.over_s is None
    assert _duration_findings(short) == []


def test_a_serving_run_is_stated_with_its_requests_prefills() -> None:
    plan = replace(load_experiment("serving").plan, cooldown_s=0.0, idle_window_s=0.0,
                   repeats=1, strategies=("plain",))
    prompts = [PromptSpec(name=p, text="x") for p in plan.prompts[:2]]
    config = campaign_config(replace(plan, prompts=tuple(p.name for p in prompts)), prompts)
    assert config.serving is not None
    runs = planned_schedule(config)
    planned = [PlannedWindow(p.name, "plain", 2.0 + i, "cost profile", 1)
               for i, p in enumerate(prompts)]
    bare = estimate(runs, planned, config)
    # each request decodes at the prompts' mean plain decode (2.5 s) and prefills at their
    # mean reference prefill (0.75 s), once per request of every run
    prefilled = estimate(runs, planned, config, prefill_s={prompts[0].name: 0.5,
                                                           prompts[1].name: 1.0})
    requests = config.serving.requests
    assert bare.estimated_s == pytest.approx(len(runs) * requests * 2.5)
    assert prefilled.estimated_s == pytest.approx(len(runs) * requests * (2.5 + 0.75))
    assert "prefill" in prefilled.line() and "prefill" not in bare.line()
