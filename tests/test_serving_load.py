"""The load generators (phase.serving.load) driving a scripted decoder on a simulated clock:
the closed loop keeps exactly C requests active and serves them all in the seeded order; the
open loop sends at the seeded Poisson times, queues past its cap and sleeps to the next
arrival when idle. No model: the decoder's steps are scripted (tests/scripted_batch.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scripted_batch import ScriptedDecoder, SimClock, prompts

from phase.base.errors import UsageProblem
from phase.policy.batching import Request, StepReport
from phase.serving.load import draw_order, run_closed, run_load, run_open
from phase.serving.records import ClosedLoop, OpenLoop, RunRecord, run_from_json, run_to_json

# prompt p: p + 1 steps of one plain token each, so requests end at different times
SCRIPTS = {p: [(1, 0, 0)] * (p + 1) for p in range(6)}


def _closed(concurrency: int, n: int = 10, seed: int = 3) -> tuple[RunRecord, ScriptedDecoder]:
    clock = SimClock()
    decoder = ScriptedDecoder(clock, SCRIPTS, capacity_=4)
    load = ClosedLoop(concurrency=concurrency, n_requests=n, max_new_tokens=16, seed=seed)
    return run_closed(decoder, prompts(6), load, clock=clock), decoder


@pytest.mark.parametrize("concurrency", [1, 3, 4])
def test_closed_loop_keeps_exactly_c_active_until_the_queue_runs_out(concurrency: int) -> None:
    run, decoder = _closed(concurrency)
    assert [s.active for s in run.steps] == decoder.active_per_step
    for step in run.steps:
        finished_before = sum(1 for r in run.requests if r.finish <= step.started)
        assert step.active == min(concurrency, 10 - finished_before)
    assert max(decoder.active_per_step) == concurrency


def test_closed_loop_serves_every_request_in_the_seeded_order() -> None:
    run, decoder = _closed(3)
    order = draw_order(6, 10, seed=3)
    assert decoder.admitted == list(range(10))
    assert [r.id for r in sorted(run.requests, key=lambda r: r.id)] == list(range(10))
    assert tuple(r.prompt_index for r in sorted(run.requests, key=lambda r: r.id)) == order
    for r in run.requests:
        assert r.output_tokens == len(SCRIPTS[r.prompt_index])
        assert r.arrival == r.admission  # a closed loop's client sends when a slot is free
    admissions = [r.admission for r in sorted(run.requests, key=lambda r: r.id)]
    assert admissions == sorted(admissions)


def test_the_prompt_order_is_a_seeded_permutation_repeated() -> None:
    first = np.random.default_rng(np.random.SeedSequence(3).spawn(2)[0]).permutation(6)
    order = draw_order(6, 10, seed=3)
    assert order[:6] == tuple(int(i) for i in first)
    assert len(set(order[6:])) == 4  # the second pass is a fresh permutation, no repeats
    assert draw_order(6, 10, seed=3) == order
    assert draw_order(6, 10, seed=4) != order


def test_a_concurrency_past_the_decoders_sequences_is_refused() -> None:
    with pytest.raises(UsageProblem, match="concurrency: 5 is more than the decoder's 4"):
        _closed(5)
    with pytest.raises(UsageProblem, match="concurrency: 0"):
        ClosedLoop(concurrency=0, n_requests=1, max_new_tokens=1, seed=0)


def _open(rate: float | None, cap: int | None, seed: int = 11, n: int = 8,
          step_s: float = 1.0) -> tuple[RunRecord, ScriptedDecoder, SimClock]:
    clock = SimClock()
    decoder = ScriptedDecoder(clock, SCRIPTS, capacity_=4, step_s=step_s)
    load = OpenLoop(request_rate=rate, n_requests=n, max_new_tokens=16, seed=seed,
                    max_concurrency=cap)
    return run_open(decoder, prompts(6), load, clock=clock, sleep=clock.sleep), decoder, clock


def _expected_arrivals(rate: float, n: int, seed: int, start: float) -> list[float]:
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])
    gaps = rng.exponential(1.0 / rate, n)
    return [start + float(t) for t in np.concatenate(([0.0], np.cumsum(gaps[:-1])))]


def test_open_loop_arrivals_are_the_seeded_exponential_draws() -> None:
    run, _, _ = _open(rate=0.5, cap=None)
    arrivals = [r.arrival for r in sorted(run.requests, key=lambda r: r.id)]
    assert arrivals == pytest.approx(_expected_arrivals(0.5, 8, 11, run.started), abs=1e-12)
    again, _, _ = _open(rate=0.5, cap=None)
    assert again == run
    other, _, _ = _open(rate=0.5, cap=None, seed=12)
    assert [r.arrival for r in other.requests] != [r.arrival for r in run.requests]


def test_open_loop_sleeps_to_the_next_arrival_when_idle() -> None:
    # mean gap 20 s against 1 s steps: the decoder is mostly idle between arrivals
    run, _, clock = _open(rate=0.05, cap=None, n=5)
    assert clock.slept, "an idle decoder should have slept to the next arrival"
    by_id = sorted(run.requests, key=lambda r: r.id)
    idle = [r for p, r in itertools.pairwise(by_id) if r.arrival > p.finish]
    assert len(idle) >= 2
    for request in idle:
        assert request.admission == pytest.approx(request.arrival, abs=1e-9)


def test_arrivals_past_the_cap_queue_and_wait_in_order() -> None:
    # 50 requests/s against 1 s steps: all eight arrive during the first step
    run, decoder, _ = _open(rate=50.0, cap=2)
    assert max(decoder.active_per_step) == 2
    assert all(s.active <= 2 for s in run.steps)
    by_id = sorted(run.requests, key=lambda r: r.id)
    assert [r.admission for r in by_id] == sorted(r.admission for r in by_id)
    assert all(r.admission >= r.arrival for r in by_id)
    assert sum(1 for r in by_id if r.admission > r.arrival) >= 6
    for later in by_id[2:]:
        # a queued request is admitted only on a step where an earlier one finished
        assert any(r.finish == later.admission for r in by_id if r.id < later.id)


def test_no_rate_sends_everything_at_the_start() -> None:
    run, decoder, clock = _open(rate=None, cap=3)
    assert {r.arrival for r in run.requests} == {run.started}
    assert max(decoder.active_per_step) == 3
    assert clock.slept == []


def test_on_the_real_clock_the_open_loop_really_waits_for_arrivals() -> None:
    # the defaults: time.perf_counter and time.sleep; 200 requests/s keeps it to milliseconds
    decoder = ScriptedDecoder(SimClock(), SCRIPTS, step_s=0.0)
    load = OpenLoop(request_rate=200.0, n_requests=4, max_new_tokens=16, seed=5)
    run = run_open(decoder, prompts(6), load)
    offsets = [r.arrival - run.started for r in sorted(run.requests, key=lambda r: r.id)]
    assert offsets == pytest.approx(_expected_arrivals(200.0, 4, 5, 0.0), abs=1e-9)
    assert all(r.admission >= r.arrival for r in run.requests)
    assert run.ended - run.started >= offsets[-1]


def test_open_loop_cap_and_rate_are_checked() -> None:
    with pytest.raises(UsageProblem, match="max_concurrency: 9 is more than"):
        _open(rate=1.0, cap=9)
    with pytest.raises(UsageProblem, match=r"request_rate: -1\.0"):
        OpenLoop(request_rate=-1.0, n_requests=1, max_new_tokens=1, seed=0)


def test_run_load_dispatches_and_the_record_reads_back_from_json() -> None:
    clock = SimClock()
    decoder = ScriptedDecoder(clock, {0: [(2, 3, 1), (1, 0, 0)], 1: [(1, 0, 0)]})
    load = OpenLoop(request_rate=2.0, n_requests=3, max_new_tokens=4, seed=1, max_concurrency=2)
    run = run_load(decoder, prompts(2), load, clock=clock, sleep=clock.sleep)
    assert run.load == load
    assert run_from_json(run_to_json(run)) == run


class _Stuck(ScriptedDecoder):
    def step(self) -> StepReport:
        return StepReport((), 0)


def test_a_decoder_that_emits_nothing_stops_the_run() -> None:
    clock = SimClock()
    decoder = _Stuck(clock, SCRIPTS)
    decoder.admit(Request(99, (0,), 1))
    with pytest.raises(RuntimeError, match="emitted nothing with 1 active"):
        run_closed(decoder, prompts(1), ClosedLoop(1, 1, 1, 0), clock=clock)
