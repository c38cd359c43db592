"""Serving campaigns (issue 46): the serving experiment's quick plan measured end to end on the
real test model through the library and through `phase measure`, every request compared with
plain single-request decoding, the Run's fields against its requests' sums, the file
validated, and the serving rule failing on tampered files, naming the JSON path."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from phase.base.errors import UsageProblem
from phase.campaign import (
    Destination,
    Factor,
    SensorOptions,
    discover_sensors,
    load_experiment,
    prepare,
)
from phase.cli import main
from phase.results import ResultsFile, load_raw
from phase.results.schedule import planned_schedule
from phase.results.serving import ServingWindow
from phase.serving.windows import NO_SENSOR
from phase.validate import validate_results
from phase.validate.settings import RuleSettings

REPO = Path(__file__).resolve().parent.parent
SERVING = str(REPO / "experiments" / "serving.py")
# Four one-line requests (tests/fixtures/workloads/README.md): a serving run's time on a CPU is
# mostly its requests' prefill, and these are 40-46 tokens under the test model's chat template
# against the quick plan's 69-78 HumanEval prompts. The tests below are about a campaign's
# machinery, not its prompts; `phase measure serving --quick` with its own HumanEval prompts runs
# end to end in tests/test_serving_open_loop.py.
SHORT = REPO / "tests" / "fixtures" / "workloads" / "short-code.jsonl"
SHORT_IDS = ("add", "rev", "evens", "count")

pytestmark = pytest.mark.model
E2E_TARGET_S = 1.0
NEAR_TIE = RuleSettings().near_tie_gap


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ResultsFile]:
    experiment = load_experiment("serving")
    quick = experiment.quick_plan()
    assert quick is not None
    # disturbed_load None: a shared test machine's background load must not leave runs out
    # (tests/test_slowdown.py judges disturbance); no waits between runs.
    # A latency target on E2E only, so goodput is recorded (and recomputed below).
    # A request may leave plain decoding at a near tie the batch's numerics flip (auto's
    # request 4 at concurrency 2 once did at its second token, a full make test, 2026-12-06),
    # which the requests' recorded gaps tell from a fault (the equality test below allows it).
    plan = replace(quick, workload=str(SHORT), prompts=SHORT_IDS, quiet_check_s=0.0,
                   disturbed_load=None, cooldown_s=0.0, idle_window_s=0.0,
                   serving_e2e_s=E2E_TARGET_S)
    out = tmp_path_factory.mktemp("serving") / "serving-quick.json"
    with prepare(experiment, plan, Destination(out),
                 discover_sensors(SensorOptions(use=False))) as c:
        results = c.run()
    return out, results


def test_quick_plan_is_the_briefs_smoke_campaign() -> None:
    quick = load_experiment("serving").quick_plan()
    assert quick is not None
    assert quick.factors[0].kind == "concurrency" and quick.factors[0].levels == (1, 2)
    assert (quick.serving_requests, quick.tokens, quick.repeats) == (5, 8, 1)
    assert quick.target == quick.draft  # the test model drafts for itself
    # Fewer prompts than requests: every run serves some prompt twice.
    assert len(quick.prompts) == 4 < quick.serving_requests


def test_one_serving_run_per_strategy_level_and_repeat(
        campaign: tuple[Path, ResultsFile]) -> None:
    out, results = campaign
    assert load_raw(out).model_dump() == results.model_dump()
    config = results.config
    assert config.serving is not None and config.serving.requests == 5
    assert results.status == "complete"
    assert sorted(r.id for r in results.runs) == sorted(
        s.run_id for s in planned_schedule(config))
    assert len(results.runs) == 4 * 2  # strategies x concurrency levels x 1 repeat
    # In blocks of one concurrency level: every strategy at a level runs before the next level.
    assert config.blocked_by == "concurrency"
    by_order = [r.factors["concurrency"] for r in sorted(results.runs, key=lambda r: r.order)]
    assert by_order[:4] == [by_order[0]] * 4 and by_order[4:] == [by_order[4]] * 4
    assert {r.prompt for r in results.runs} == {config.serving.pool} == {"short-code-4"}
    # One load per level (schema 17, order_seed "load"): every strategy there served the same
    # requests in the same order, and the two levels drew different orders.
    assert config.serving.order_seed == "load"
    loads = {(r.factors["concurrency"], r.serving.seed,  # type: ignore[union-attr]
              tuple(q.prompt for q in r.serving.requests))  # type: ignore[union-attr]
             for r in results.runs}
    assert len(loads) == 2 and len({seed for _, seed, _ in loads}) == 2
    names = {p.name for p in config.prompts}
    for run in results.runs:
        serving = run.serving
        assert serving is not None and serving.concurrency == run.factors["concurrency"]
        assert [q.id for q in serving.requests] == list(range(5))
        assert {q.prompt for q in serving.requests} <= names
        assert len({q.prompt for q in serving.requests}) < 5  # a prompt served twice
        # The Run describes the whole load: its fields are the requests' sums.
        assert run.tokens == sum(q.output_tokens for q in serving.requests)
        assert run.prompt_tokens == sum(q.prompt_tokens for q in serving.requests)
        assert run.drafted == sum(q.proposed for q in serving.requests)
        assert run.accepted == sum(q.accepted for q in serving.requests)
        assert run.token_ids == [t for q in serving.requests for t in q.token_ids]
        assert run.tokens_per_s == pytest.approx(run.tokens / run.decode_s)
        assert serving.mean_batch <= serving.concurrency
        assert serving.whole_run.output_tokens == run.tokens
        assert serving.ttft_s.n == 5 and serving.e2e_s.p99 is not None
        met = sum(1 for q in serving.requests if q.e2e_s <= E2E_TARGET_S)
        assert serving.goodput_met == met
        assert serving.goodput_requests_per_s == pytest.approx(
            met / serving.whole_run.duration_s)
        if run.strategy == "draft-4":  # the test model drafting for itself drafts
            assert run.drafted > 0 and serving.mean_accepted_length is not None


def assert_plain_or_near_tie(results: ResultsFile) -> None:
    """Batched rows add in another order than one-token plain steps, which can flip a near
    tie (tests/test_batched.py): a request equals plain decoding, or records where it parts
    from it and both passes' top-2 logit gaps there, both below near_tie_gap, the plain one
    being the reference's own."""
    refs = {r.prompt: r for r in results.references}
    assert set(refs) == {p.name for p in results.config.prompts}
    for run in results.runs:
        assert run.serving is not None
        at, first = 0, None
        for q in run.serving.requests:
            ref = refs[q.prompt]
            assert ref.top2_gaps is not None
            where = next((i for i, (a, b) in enumerate(zip(q.token_ids, ref.token_ids,
                                                             strict=False)) if a != b), None)
            if where is None:
                assert q.token_ids == ref.token_ids[:len(q.token_ids)], (run.id, q.id)
                assert q.matches_plain is True and q.first_divergence is None
                assert q.divergence_gap_verify is q.divergence_gap_reference is None
            else:
                assert q.matches_plain is False and q.first_divergence == where, (run.id, q.id)
                assert q.divergence_gap_reference == ref.top2_gaps[where]
                assert q.divergence_gap_verify is not None
                assert max(q.divergence_gap_verify, q.divergence_gap_reference) < NEAR_TIE
                first = at + where if first is None else first
            at += len(q.token_ids)
        assert run.matches_plain is (first is None) and run.first_divergence == first


def test_every_request_matches_plain_or_parts_from_it_at_a_recorded_near_tie(
        campaign: tuple[Path, ResultsFile]) -> None:
    assert_plain_or_near_tie(campaign[1])


def test_windows_and_energy_are_null_with_a_reason_without_a_sensor(
        campaign: tuple[Path, ResultsFile]) -> None:
    _, results = campaign
    for run in results.runs:
        assert run.serving is not None and run.energy == []
        windows = [run.serving.whole_run]
        if run.serving.steady_state is None:
            assert run.serving.steady_state_reason
        else:
            windows.append(run.serving.steady_state)
            assert run.serving.steady_state.duration_s > 0
        for w in windows:
            assert (w.energy_j, w.energy_per_token_j, w.energy_per_request_j) == (None,) * 3
            assert w.energy_reason == NO_SENSOR


def test_the_file_validates_and_tampering_fails_naming_the_path(
        campaign: tuple[Path, ResultsFile]) -> None:
    out, results = campaign
    report = validate_results(results, str(out))
    assert not report.blocking, [f.message for f in report.findings]
    for where, change in (("serving.ttft_s.p50", _shift_p50),
                          ("serving.concurrency", _bump_concurrency),
                          ("matches_plain", _claim_mismatch),
                          ("serving.requests[0].divergence_gap_verify", _clear_margin_gap),
                          ("serving.goodput_met", _inflate_goodput),
                          ("serving.whole_run.energy_j", _energy_without_a_sensor),
                          ("serving.steady_state.energy_j", _steady_energy_alone)):
        tampered = results.model_copy(deep=True)
        change(tampered)
        found = [f for f in validate_results(tampered, "t.json").findings
                 if f.severity == "blocking"]
        assert any(f.json_path == f"$.runs[0].{where}" for f in found), \
            (where, [(f.rule, f.json_path) for f in found])


def _shift_p50(results: ResultsFile) -> None:
    serving = results.runs[0].serving
    assert serving is not None and serving.ttft_s.p50 is not None
    serving.ttft_s.p50 += 1.0


def _bump_concurrency(results: ResultsFile) -> None:
    assert results.runs[0].serving is not None
    results.runs[0].serving.concurrency += 1


def _inflate_goodput(results: ResultsFile) -> None:
    serving = results.runs[0].serving
    assert serving is not None and serving.goodput_met is not None
    serving.goodput_met += 1


def _fill_energy(window: ServingWindow, joules: float) -> None:
    # A figure made consistent with its own counts: only its source can refuse it.
    window.energy_j, window.energy_reason = joules, None
    window.energy_per_token_j = joules / window.output_tokens
    window.energy_per_request_j = joules / window.finished_requests \
        if window.finished_requests else None


def _energy_without_a_sensor(results: ResultsFile) -> None:
    serving = results.runs[0].serving
    assert serving is not None and results.primary_energy is None
    _fill_energy(serving.whole_run, 5.0)


def _steady_energy_alone(results: ResultsFile) -> None:
    serving = results.runs[0].serving
    assert serving is not None and serving.steady_state is not None
    _fill_energy(serving.steady_state, 1.0)


def _clear_margin_gap(results: ResultsFile) -> None:
    # On a request that matches plain: evidence of nothing; on one that differs: a mismatch.
    serving = results.runs[0].serving
    assert serving is not None
    serving.requests[0].divergence_gap_verify = 5.0


def _claim_mismatch(results: ResultsFile) -> None:
    run = results.runs[0]
    run.first_divergence = 0  # first: the schema wants a divergence with a false match
    run.matches_plain = False


def test_a_serving_plan_refuses_what_its_runs_cannot_apply(tmp_path: Path) -> None:
    experiment = load_experiment("serving")
    quick = experiment.quick_plan()
    assert quick is not None
    bad = [
        (replace(quick, factors=(*quick.factors, Factor("t", "temperature", (0, 0.7)))),
         "cannot vary with a concurrency factor"),
        (replace(quick, serving_pool="humaneval-53"), "plan.serving_pool"),
        (replace(quick, n_ctx=160), "plan.n_ctx"),  # one request fits (103), two do not
        (replace(quick, blocked_by="threads"), r"plan.blocked_by .*'concurrency' or None"),
    ]
    for plan, needle in bad:
        out = tmp_path / "x.json"
        with pytest.raises(UsageProblem, match=needle):
            prepare(experiment, plan, Destination(out),
                    discover_sensors(SensorOptions(use=False)))
        assert not out.exists()


def test_a_disturbed_serving_run_is_re_run_with_the_same_requests(tmp_path: Path) -> None:
    experiment = load_experiment("serving")
    quick = experiment.quick_plan()
    assert quick is not None
    # A threshold of 0: any foreign load at all (always measured on Linux) disturbs a run,
    # so every run is disturbed and its slot re-run once.
    plan = replace(quick, workload=str(SHORT), prompts=SHORT_IDS[:3], strategies=("plain",),
                   profile=False, tokens=4, serving_requests=3,
                   factors=(Factor("concurrency", "concurrency", (2,)),),
                   disturbed_load=0.0, slow_vs_profile=None, slow_vs_condition=None,
                   max_reruns=1, quiet_check_s=0.0, cooldown_s=0.0, idle_window_s=0.0)
    out = tmp_path / "rerun.json"
    with prepare(experiment, plan, Destination(out),
                 discover_sensors(SensorOptions(use=False))) as c:
        results = c.run()
    first, again = results.runs
    assert first.disturbed and first.foreign_load is not None
    assert again.rerun_of == first.id and again.id == f"{first.id}-rerun1"
    assert first.serving is not None and again.serving is not None
    assert again.serving.seed == first.serving.seed
    assert [q.prompt for q in again.serving.requests] == \
        [q.prompt for q in first.serving.requests]
    assert again.token_ids == first.token_ids
    assert not validate_results(results, str(out)).blocking


def test_a_serving_campaign_is_not_sharded(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, [
        "measure", SERVING, "--quick", "--no-sensor", "--repeats", "2", "--shard", "1/2",
        "--job-id", "t", "--out-dir", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "--shard: a serving campaign" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_sensor_s_windows_and_samples_become_the_serving_windows_energy(
        tmp_path: Path, sysfs_tree: Callable[..., Path]) -> None:
    """With a (fixture) RAPL counter as the chip sensor: the whole-run window's energy is the
    sensors' own window around the run, and the steady state's never a number the sensor did
    not give (tests/test_serving_energy.py integrates moving samples)."""
    powercap = sysfs_tree("powercap")
    experiment = load_experiment("serving")
    quick = experiment.quick_plan()
    assert quick is not None
    plan = replace(quick, workload=str(SHORT), prompts=SHORT_IDS[:3], strategies=("plain",),
                   profile=False, tokens=4, serving_requests=5,
                   factors=(Factor("concurrency", "concurrency", (1,)),), repeats=1,
                   disturbed_load=None, quiet_check_s=0.0, cooldown_s=0.0, idle_window_s=0.2)
    options = SensorOptions(rapl_root=str(powercap), hwmon_root=str(tmp_path / "none"))
    out = tmp_path / "sensed.json"
    with prepare(experiment, plan, Destination(out), discover_sensors(options)) as c:
        results = c.run()
    assert results.primary_energy is not None
    (run,) = results.runs
    assert run.serving is not None and run.energy and run.samples
    primary = results.primary_energy.sensors
    own = [w.energy_j for w in run.energy if w.sensor in primary]
    whole = run.serving.whole_run
    expected = None if any(j is None for j in own) else sum(j for j in own if j is not None)
    assert whole.energy_j == expected
    assert (whole.energy_j is None) == (whole.energy_reason is not None)
    steady = run.serving.steady_state
    assert steady is not None  # 5 requests at B = 1
    # The fixture's counters never move: the sampler finds no energy in the run, and the
    # steady state, inside it, has none either (its flat samples would read as 0 J).
    assert all(w.energy_j is None for w in run.energy)
    assert whole.energy_j is None and steady.energy_j is None
    assert steady.energy_per_token_j is None and steady.energy_reason
    assert not validate_results(results, str(out)).blocking


def test_the_cli_serves_a_users_workload_and_writes_a_file_that_validates(
        tmp_path: Path) -> None:
    """`phase measure serving --quick --workload FILE` end to end: the study's HumanEval
    prompts are replaced by the file's, every request draws from them, the pool is named after
    it; the time estimate is said, no latency target means no goodput, every request matches
    plain decoding (or parts at a recorded near tie), and `phase validate` passes the file. A
    malformed line is refused by line and field before anything is written."""
    mine = tmp_path / "mine.jsonl"
    mine.write_text("\n".join(json.dumps(p) for p in (
        {"id": "add", "prompt": "Write a Python function that adds two numbers."},
        {"id": "rev", "prompt": "Write a Python function that reverses a string."},
        {"prompt": "Name three primary colours."})) + "\n", encoding="utf-8")
    out = tmp_path / "mine-serving.json"
    args = ["measure", SERVING, "--quick", "--no-sensor", "--strategies", "plain,ngram",
            "--no-profile", "--cooldown", "0", "--idle-window", "0", "--no-disturbance"]
    runner = CliRunner()
    result = runner.invoke(main, [*args, "--workload", str(mine), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "time: about" in result.output  # estimated from the prompts' plain decodes
    results = load_raw(out)
    assert {(r.strategy, r.factors["concurrency"]) for r in results.runs} == {
        (s, c) for s in ("plain", "ngram") for c in (1, 2)}
    serving = results.config.serving
    assert serving is not None and serving.pool == "mine-3"
    asked = {q.prompt for r in results.runs if r.serving for q in r.serving.requests}
    assert asked <= {p.name for p in results.config.prompts} and len(asked) >= 2
    assert {p.name for p in results.config.prompts} == {"add", "rev", "line-3"}
    assert_plain_or_near_tie(results)
    assert all(r.serving and r.serving.goodput_met is None for r in results.runs)  # no target
    checked = runner.invoke(main, ["validate", str(out)])
    assert checked.exit_code == 0, checked.output
    assert "0 blocking" in checked.output

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "prompt": "fine"}\n{"id": "b", "prompt": 7}\n', encoding="utf-8")
    refused = tmp_path / "refused.json"
    result = runner.invoke(main, [*args, "--workload", str(bad), "-o", str(refused)])
    assert result.exit_code == 2, result.output
    assert f"{bad}:2" in result.output and "prompt" in result.output
    assert not refused.exists()
