"""Serving metrics (phase.serving.metrics, phase.serving.windows) against values worked out by
hand on small records: TTFT counts queueing, a multi-token step's tokens share its gap in
ITL, numpy's linear percentiles, goodput at and past its bounds, the steady-state window's
ends, and energy that is None, with its reason, when there is no sensor."""

from __future__ import annotations

import json

import pytest
from pydantic import TypeAdapter
from scripted_batch import ScriptedDecoder, SimClock, prompts

from phase.base.errors import UsageProblem
from phase.serving.load import run_open
from phase.serving.metrics import (
    LatencyTarget,
    ServingMetrics,
    acceptance,
    percentiles,
    request_metrics,
    serving_metrics,
)
from phase.serving.records import (
    ClosedLoop,
    EmissionRecord,
    OpenLoop,
    RequestRecord,
    RunRecord,
    to_jsonable,
)
from phase.serving.windows import NO_READING, NO_SENSOR, steady_bounds


def _req(rid: int, arrival: float, admission: float,
         emissions: list[tuple[float, int] | tuple[float, int, int, int]],
         finish: float | None = None) -> RequestRecord:
    made = tuple(EmissionRecord(e[0], e[1], *(e[2:] or (0, 0))) for e in emissions)
    return RequestRecord(id=rid, prompt_index=0, prompt_tokens=3, max_new_tokens=16,
                         arrival=arrival, admission=admission,
                         finish=made[-1].at if finish is None else finish, emissions=made)


def _run(*requests: RequestRecord, started: float = 0.0, ended: float | None = None) -> RunRecord:
    end = max(r.finish for r in requests) if ended is None else ended
    return RunRecord(load=ClosedLoop(concurrency=2, n_requests=len(requests),
                                     max_new_tokens=16, seed=0),
                     started=started, ended=end, requests=requests)


def test_per_request_latencies_count_queueing_and_share_a_steps_gap() -> None:
    # queued 1 s, first token at 12, then 3 tokens in one step after 1 s, then 1 after 2 s
    m = request_metrics(_req(0, 10.0, 11.0, [(12.0, 1), (13.0, 3), (15.0, 1)]))
    assert (m.queued_s, m.ttft_s, m.e2e_s, m.output_tokens) == (1.0, 2.0, 5.0, 5)
    assert m.tpot_s == pytest.approx(3.0 / 4)
    assert m.itl_s == pytest.approx([1 / 3, 1 / 3, 1 / 3, 2.0])
    assert sum(m.itl_s) / len(m.itl_s) == pytest.approx(m.tpot_s)


def test_tokens_out_with_the_first_wait_nothing_and_empty_steps_are_skipped() -> None:
    m = request_metrics(_req(0, 0.0, 0.0, [(1.0, 2), (2.0, 0), (3.0, 1)]))
    assert m.itl_s == (0.0, 2.0)
    assert m.tpot_s == pytest.approx(1.0)  # (3 - 1) / (3 - 1)
    one = request_metrics(_req(1, 0.0, 0.0, [(4.0, 1)]))
    assert (one.ttft_s, one.tpot_s, one.itl_s) == (4.0, None, ())
    none = request_metrics(_req(2, 0.0, 0.0, [(4.0, 0)]))
    assert (none.ttft_s, none.tpot_s, none.e2e_s) == (None, None, 4.0)


def test_percentiles_are_numpys_linear_ones() -> None:
    p = percentiles([4.0, 1.0, 3.0, 2.0])
    # linear: rank q/100 * (n - 1) between sorted values 1 2 3 4
    assert (p.n, p.mean, p.p50) == (4, 2.5, 2.5)
    assert p.p90 == pytest.approx(3.7)
    assert p.p99 == pytest.approx(3.97)
    assert percentiles([]) == percentiles(iter(()))
    assert percentiles([]).p50 is None


def test_run_percentiles_pool_itl_over_tokens_and_ttft_over_requests() -> None:
    run = _run(_req(0, 0.0, 0.0, [(1.0, 1), (2.0, 2)]),
               _req(1, 0.0, 0.0, [(3.0, 1), (7.0, 1)]))
    metrics = serving_metrics(run, steady_b=1)
    assert metrics.percentile_method == "linear"
    assert metrics.ttft_s.n == 2 and metrics.ttft_s.p50 == 2.0
    assert metrics.itl_s.n == 3  # 0.5, 0.5 and 4.0: three tokens after their first
    assert metrics.itl_s.p50 == 0.5
    assert metrics.e2e_s.mean == 4.5


def test_goodput_counts_requests_within_every_bound() -> None:
    run = _run(_req(0, 0.0, 0.0, [(2.0, 1), (5.0, 4)]),   # ttft 2, tpot 0.75: at both bounds
               _req(1, 0.0, 0.0, [(1.0, 1), (3.0, 2)]),   # tpot 1.0: too slow per token
               _req(2, 0.0, 0.0, [(3.0, 1)]),             # ttft 3: too late
               _req(3, 0.0, 1.0, [(1.5, 1)]),             # one token: no TPOT to miss
               ended=10.0)
    goodput = serving_metrics(run, steady_b=1,
                              target=LatencyTarget(ttft_s=2.0, tpot_s=0.75)).goodput
    assert goodput is not None
    assert (goodput.met, goodput.requests, goodput.requests_per_s) == (2, 4, 0.2)
    strict = serving_metrics(run, steady_b=1, target=LatencyTarget(e2e_s=0.5)).goodput
    assert strict is not None and (strict.met, strict.requests_per_s) == (0, 0.0)
    assert serving_metrics(run, steady_b=1).goodput is None
    with pytest.raises(UsageProblem, match="latency target: no bound"):
        LatencyTarget()


def test_acceptance_sums_proposals_over_the_run() -> None:
    run = _run(_req(0, 0.0, 0.0, [(1.0, 3, 4, 2), (2.0, 1, 4, 0)]),
               _req(1, 0.0, 0.0, [(1.0, 1), (2.0, 4, 3, 3)]))
    a = acceptance(run)
    assert (a.proposed, a.accepted, a.proposals) == (11, 5, 3)
    assert a.rate == pytest.approx(5 / 11)
    assert a.mean_accepted_length == pytest.approx(5 / 3)
    plain = acceptance(_run(_req(0, 0.0, 0.0, [(1.0, 1)])))
    assert (plain.rate, plain.mean_accepted_length) == (None, None)


def _six() -> RunRecord:
    # first tokens at 1..6 s, given out of order; each request then 1 more token 0.5 s later
    firsts = [4.0, 1.0, 6.0, 2.0, 5.0, 3.0]
    return _run(*(_req(i, 0.0, 0.0, [(t, 1), (t + 0.5, 1)]) for i, t in enumerate(firsts)),
                ended=8.0)


def test_the_steady_state_runs_from_the_bth_first_token_to_the_n_minus_bth() -> None:
    run = _six()
    assert steady_bounds(run, 1) == (1.0, 5.0)
    assert steady_bounds(run, 2) == (2.0, 4.0)
    metrics = serving_metrics(run, steady_b=2)
    steady = metrics.steady_state
    assert steady is not None and metrics.steady_state_reason is None
    # (2, 4]: first tokens at 3, 4 and second tokens at 2.5, 3.5; finishes at 2.5, 3.5
    assert (steady.output_tokens, steady.finished_requests, steady.duration_s) == (4, 2, 2.0)
    assert steady.output_tokens_per_s == 2.0
    assert metrics.whole_run.output_tokens == 12
    assert metrics.whole_run.output_tokens_per_s == 12 / 8
    assert metrics.whole_run.requests_per_s == 6 / 8


def test_a_run_too_short_for_b_has_no_steady_state_and_says_why() -> None:
    metrics = serving_metrics(_six(), steady_b=3)
    assert metrics.steady_state is None
    assert metrics.steady_state_reason == (
        "6 requests leave no steady state with B = 3: it needs more than 6 requests")
    same_step = _run(*(_req(i, 0.0, 0.0, [(1.0, 1)]) for i in range(3)), ended=2.0)
    assert "same step" in str(steady_bounds(same_step, 1))
    with pytest.raises(ValueError, match="B must be >= 1"):
        steady_bounds(_six(), 0)


def test_energy_is_none_with_its_reason_without_a_sensor() -> None:
    metrics = serving_metrics(_six(), steady_b=2)
    assert metrics.steady_state is not None
    for window in (metrics.whole_run, metrics.steady_state):
        assert (window.energy.joules, window.energy.per_token_j,
                window.energy.per_request_j, window.energy.reason) == (None, None, None,
                                                                       NO_SENSOR)
    blind = serving_metrics(_six(), steady_b=2, energy=lambda a, b: None)
    assert blind.whole_run.energy.reason == NO_READING and blind.whole_run.energy.joules is None


def test_energy_per_token_and_request_over_each_window() -> None:
    calls: list[tuple[float, float]] = []

    def ten_watts(start: float, end: float) -> float:
        calls.append((start, end))
        return 10.0 * (end - start)

    metrics = serving_metrics(_six(), steady_b=2, energy=ten_watts)
    assert (0.0, 8.0) in calls and (2.0, 4.0) in calls
    steady = metrics.steady_state
    assert steady is not None
    assert (steady.energy.joules, steady.energy.per_token_j, steady.energy.per_request_j) == (
        20.0, 5.0, 10.0)
    whole = metrics.whole_run.energy
    assert (whole.joules, whole.per_token_j, whole.per_request_j) == (80.0, 80 / 12, 80 / 6)
    # a window where nothing finished has energy per token but none per request
    late = _run(*(_req(i, 0.0, 0.0, [(t, 1), (t + 1, 1), (9.0, 1)]) for i, t in
                  enumerate([1.0, 2.0, 3.0, 4.0, 5.0])), ended=9.0)
    window = serving_metrics(late, steady_b=1, energy=ten_watts).steady_state
    assert window is not None and window.finished_requests == 0
    assert window.energy.per_request_j is None
    assert window.energy.reason == "no request finished inside the window"


def test_ttft_of_a_queued_request_includes_its_wait() -> None:
    clock = SimClock(now=0.0)
    decoder = ScriptedDecoder(clock, {0: [(1, 0, 0), (1, 0, 0)]}, prefill_s=0.5)
    load = OpenLoop(request_rate=None, n_requests=2, max_new_tokens=2, seed=0, max_concurrency=1)
    run = run_open(decoder, prompts(1), load, clock=clock, sleep=clock.sleep)
    first, second = (request_metrics(r) for r in sorted(run.requests, key=lambda r: r.id))
    # first: prefill 0.5 + one 1 s step; second: waits for both of first's steps (2.5 s)
    assert (first.queued_s, first.ttft_s, first.e2e_s) == (0.0, 1.5, 2.5)
    assert (second.queued_s, second.ttft_s, second.e2e_s) == (2.5, 4.0, 5.0)


def test_metrics_serialise_to_plain_json_and_read_back() -> None:
    metrics = serving_metrics(_six(), steady_b=2, target=LatencyTarget(ttft_s=3.0),
                              energy=lambda a, b: 2.0 * (b - a))
    text = json.dumps(to_jsonable(metrics), allow_nan=False)
    assert json.loads(text)["steady_state"]["energy"]["joules"] == 4.0
    assert TypeAdapter(ServingMetrics).validate_json(text) == metrics
