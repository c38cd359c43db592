"""Synthetic serving campaigns (schema 14) that are internally consistent: per-request timings
are simulated first (a closed loop of `concurrency` clients over a shared decoder step), then
every aggregate is derived from them by phase.serving.metrics / phase.serving.windows, as the
load generator does, never written by hand. Nothing here is a measurement.

    from serving_factories import serving_campaign

    # plain, draft-4 (1.3x plain's throughput at 1 and 2, 0.8x at 4 and 8), 3 repeats
    results = serving_campaign(speedup=lambda s, c: 1.3 if c <= 2 else 0.8)

The true throughput ratio of a non-plain strategy to plain at a level is
`speedup(strategy, level)`;
each run's step time also carries lognormal noise (`cv`), seeded, so intervals are real ones.
With `power_w` set, a chip counter reads power_w x seconds over any window; None: no sensor.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime

from factories import make_config, make_model, make_provenance, make_sensor, make_window

from phase.policy.strategies import is_baseline
from phase.results import (
    SCHEMA_VERSION,
    FactorSpec,
    PlainReference,
    ResultsFile,
    Run,
    Step,
    token_sha256,
)
from phase.results.covers import PrimaryEnergy
from phase.results.levels import load_seed
from phase.results.serving import (
    ServingConfig,
    ServingPercentiles,
    ServingRequest,
    ServingRun,
    ServingWindow,
)
from phase.serving.load import draw_order
from phase.serving.metrics import serving_metrics
from phase.serving.records import (
    ClosedLoop,
    EmissionRecord,
    RequestRecord,
    RunRecord,
    StepRecord,
)
from phase.serving.windows import EnergyReading, Window

T0 = 1_767_225_600.0
PREFILL_S = 0.004  # per admitted request, on the load generator's clock
GAP_S = 1.0
POOL = "pool"  # the default name of the set requests draw from
FACTOR = "concurrency"
Speedup = Callable[[str, int], float]


def _step_s(level: int) -> float:
    """Plain decoding's step time at a batch of `level`: batching costs a little per row."""
    return 0.02 * (1 + 0.1 * (level - 1))


def simulate(level: int, requests: int, tokens: int, per_step: int, step_s: float,
             seed: int, n_prompts: int = 3) -> RunRecord:
    """A closed loop: `level` requests at a time, each step emitting up to `per_step` tokens
    to every active request (proposing per_step - 1 and keeping them), until all are served.
    Request i serves the prompt the order seeded by `seed` draws for it, as the campaign's
    load generator does (phase.serving.load.draw_order)."""
    drawn = draw_order(n_prompts, requests, seed)
    clock, queue, active = 0.0, list(range(requests)), {}
    done: list[RequestRecord] = []
    steps: list[StepRecord] = []

    def admit() -> None:
        nonlocal clock
        while queue and len(active) < level:
            rid = queue.pop(0)
            active[rid] = {"arrival": clock, "emissions": []}
            clock += PREFILL_S
            active[rid]["admission"] = clock - PREFILL_S

    admit()
    while active:
        start, clock = clock, clock + step_s
        steps.append(StepRecord(start, clock, len(active), per_step * len(active)))
        for rid in list(active):
            got = active[rid]["emissions"]
            n = min(per_step, tokens - sum(e.tokens for e in got))
            got.append(EmissionRecord(clock, n, per_step - 1, n - 1))
            if sum(e.tokens for e in got) >= tokens:
                a = active.pop(rid)
                done.append(RequestRecord(rid, drawn[rid], 10 + rid % 5, tokens, a["arrival"],
                                          a["admission"], clock, tuple(got)))
        admit()
    done.sort(key=lambda r: r.id)
    return RunRecord(ClosedLoop(level, requests, tokens, seed), 0.0, clock, tuple(done),
                     tuple(steps))


def _window(w: Window, started: float) -> ServingWindow:
    return ServingWindow(
        name=w.name, start_s=w.start - started, end_s=w.end - started, duration_s=w.duration_s,  # type: ignore[arg-type]
        output_tokens=w.output_tokens, finished_requests=w.finished_requests,
        output_tokens_per_s=w.output_tokens_per_s, requests_per_s=w.requests_per_s,
        energy_j=w.energy.joules, energy_per_token_j=w.energy.per_token_j,
        energy_per_request_j=w.energy.per_request_j, energy_reason=w.energy.reason)


def _trace(record: RunRecord) -> list[Step]:
    """One Step per decoder step: what it proposed and kept over the requests it served."""
    by_step: dict[float, list[EmissionRecord]] = {}
    for r in record.requests:
        for e in r.emissions:
            by_step.setdefault(e.at, []).append(e)
    return [Step(proposed=sum(e.proposed for e in by_step.get(s.ended, [])),
                 accepted=sum(e.accepted for e in by_step.get(s.ended, [])), propose_ms=0.0,
                 verify_ms=(s.ended - s.started) * 1e3) for s in record.steps]


def _ids(prompt: int, n: int) -> list[int]:
    """A prompt's tokens: every request of it outputs them, as greedy decoding does, and
    they are its plain reference."""
    return [(11 * prompt + 7 * i + 3) % 49152 for i in range(n)]


def serving_run(record: RunRecord, *, strategy: str, repeat: int, order: int, level: int,
                prompts: Sequence[str], steady_b: int, started_unix_s: float,
                reading: EnergyReading | None, sensor: str | None, pool: str = POOL,
                seed: int = 0) -> Run:
    """The Run a serving load generator writes for `record`: aggregates from the metrics."""
    # B is at most the run's concurrency, as the campaign sets it (phase.campaign.
    # serving_plan.run_steady_b)
    m = serving_metrics(record, steady_b=min(steady_b, level), energy=reading)
    requests = []
    for r, rm in zip(record.requests, m.requests, strict=True):
        requests.append(ServingRequest(
            id=r.id, prompt=prompts[r.prompt_index], prompt_tokens=r.prompt_tokens,
            arrival_s=r.arrival, admission_s=r.admission, first_token_s=r.first_token_at,
            finish_s=r.finish, output_tokens=r.output_tokens,
            token_ids=_ids(r.prompt_index, r.output_tokens),
            proposed=sum(e.proposed for e in r.emissions),
            accepted=sum(e.accepted for e in r.emissions), ttft_s=rm.ttft_s, tpot_s=rm.tpot_s,
            e2e_s=rm.e2e_s, matches_plain=True))
    ids = [t for q in requests for t in q.token_ids]
    tokens, decode_s = len(ids), record.ended - record.started
    drafted, accepted = m.acceptance.proposed, m.acceptance.accepted
    serving = ServingRun(
        concurrency=level, seed=seed, requests=requests, steps=len(record.steps),
        mean_batch=sum(s.active for s in record.steps) / len(record.steps),
        ttft_s=ServingPercentiles(**asdict(m.ttft_s)),
        tpot_s=ServingPercentiles(**asdict(m.tpot_s)),
        itl_s=ServingPercentiles(**asdict(m.itl_s)),
        e2e_s=ServingPercentiles(**asdict(m.e2e_s)),
        whole_run=_window(m.whole_run, record.started),
        steady_state=_window(m.steady_state, record.started) if m.steady_state else None,
        steady_state_reason=m.steady_state_reason,
        mean_accepted_length=m.acceptance.mean_accepted_length)
    energy = [] if sensor is None or reading is None else [make_window(
        sensor, start_unix_s=started_unix_s, window_s=decode_s,
        energy_j=reading(record.started, record.ended))]
    return Run(
        id=f"r{repeat}-{pool}-{strategy}-{FACTOR}={level}", repeat=repeat, order=order,
        prompt=pool, strategy=strategy, k=None if is_baseline(strategy) else 4,
        started_unix_s=started_unix_s, ended_unix_s=started_unix_s + decode_s,
        prompt_tokens=sum(q.prompt_tokens for q in requests),
        prefill_s=PREFILL_S * len(requests), decode_s=decode_s, tokens=tokens,
        tokens_per_s=tokens / decode_s, steps=len(record.steps), drafted=drafted,
        accepted=accepted, acceptance=accepted / drafted if drafted else None,
        acceptance_reason=None if drafted else "nothing proposed",
        trace=_trace(record),
        cpu_s=decode_s, energy=energy, temperatures_c={}, output_sha256=token_sha256(ids),
        output_text="synthetic serving output", token_ids=ids, matches_plain=True,
        samples=[], factors={FACTOR: level}, serving=serving)


def serving_campaign(
    *,
    speedup: Speedup = lambda s, c: 1.0,
    strategies: Sequence[str] = ("plain", "draft-4"),
    levels: Sequence[int] = (1, 2, 4, 8),
    repeats: int = 3,
    requests: int = 12,
    tokens: int = 16,
    cv: float = 0.05,
    power_w: float | None = 10.0,
    steady_b: int = 2,
    seed: int = 0,
    prompts: Sequence[str] = ("q1", "q2", "q3"),
    experiment: str = "serving",
    pool: str = POOL,
) -> ResultsFile:
    """A complete serving campaign (module doc): every repeat x strategy x level."""
    rng = random.Random(seed)
    sensor = make_sensor() if power_w is not None else None
    config = make_config(
        prompts=prompts, strategies=strategies, repeats=repeats, tokens=tokens,
        factors=[FactorSpec(name=FACTOR, kind="concurrency", levels=list(levels),
                            labels=[str(v) for v in levels])],
        serving=ServingConfig(requests=requests, steady_state_b=steady_b, pool=pool,
                              order_seed="load"))
    runs, clock, order = [], T0, 0
    for repeat in range(repeats):
        for strategy in strategies:
            for level in levels:
                per_step = 1 if is_baseline(strategy) else 2
                noise = rng.lognormvariate(0.0, cv)
                true = 1.0 if is_baseline(strategy) else speedup(strategy, level)
                step_s = _step_s(level) * per_step / true * noise
                # Every strategy of a repeat at a level serves the same load (order_seed).
                load = load_seed(config.seed, repeat, {FACTOR: level})
                record = simulate(level, requests, tokens, per_step, step_s, load, len(prompts))
                reading = (None if power_w is None
                           else (lambda a, b, w=power_w: w * (b - a)))
                runs.append(serving_run(
                    record, strategy=strategy, repeat=repeat, order=order, level=level,
                    prompts=prompts, steady_b=steady_b, started_unix_s=clock,
                    reading=reading, sensor=sensor.name if sensor else None, pool=pool,
                    seed=load))
                clock += record.ended - record.started + GAP_S
                order += 1
    return ResultsFile(
        schema_version=SCHEMA_VERSION, id=f"serving-{seed}", experiment=experiment, note=None,
        created=datetime(2026, 1, 1, tzinfo=UTC),
        status="complete", provenance=make_provenance(), models=[make_model()],
        sensors=[sensor] if sensor else [], sensors_unavailable=[], config=config,
        # The chip energy the serving windows are read from (the serving rule checks it).
        primary_energy=PrimaryEnergy(sensors=[sensor.name], device="cpu", reason="synthetic",
                                     chosen_by="auto") if sensor else None,
        references=[PlainReference(prompt=p, output_sha256=token_sha256(_ids(i, tokens)),
                                   token_ids=_ids(i, tokens)) for i, p in enumerate(prompts)],
        runs=runs)
