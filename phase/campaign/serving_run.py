"""One scheduled serving run, executed: `config.serving.requests` requests drawn in a seeded
order from the campaign's prompts, up to `concurrency` of them decoded together by phase's
batched decoder (phase.decode.batched) through the load generator config.serving names
(phase.serving.load: a closed loop, or an open loop of seeded Poisson arrivals), inside the
sensors' window, with what the machine did around it recorded as for any run
(phase.campaign.execute). It neither judges nor writes the run.

The request order's seed is the load's (phase.results.levels.serving_seed: the campaign's
seed, the repeat and the levels), so every strategy of one repeat at one level serves the same
requests in the same order, and a re-run of a disturbed run serves them again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from phase.campaign import machine
from phase.campaign.disturbance import LoadProbe
from phase.campaign.factors import apply_levels
from phase.campaign.references import RefKey, ref_key
from phase.campaign.run_context import stamp_context
from phase.campaign.schedule import Rerun, ScheduledRun
from phase.campaign.sensing import WindowCallbacks
from phase.campaign.serving_energy import serving_reading
from phase.campaign.serving_plan import (
    latency_target,
    load_of_run,
    run_concurrency,
    run_steady_b,
)
from phase.campaign.serving_record import (
    RunIdentity,
    ServedRun,
    expected_output,
    whole_load_run,
)
from phase.policy.batching import BatchDecoder, Request, StepReport
from phase.results import PlainReference, Run
from phase.results.levels import reference_levels, run_tokens, serving_seed
from phase.sensors.nvidia.gpu_activity import gpu_activity
from phase.serving.load import run_load
from phase.serving.metrics import serving_metrics

if TYPE_CHECKING:
    from phase.campaign.execute import Executor


class TokenTap:
    """A BatchDecoder that passes everything through and keeps each request's tokens (the
    load generator records counts and times only)."""

    def __init__(self, decoder: BatchDecoder) -> None:
        self.decoder = decoder
        self.tokens: dict[int, list[int]] = {}

    @property
    def capacity(self) -> int:
        return self.decoder.capacity

    def active(self) -> int:
        return self.decoder.active()

    def admit(self, request: Request) -> None:
        self.decoder.admit(request)

    def step(self) -> StepReport:
        report = self.decoder.step()
        for e in report.emissions:
            self.tokens.setdefault(e.request_id, []).extend(e.tokens)
        return report


def run_references(executor: Executor, refs: Mapping[RefKey, PlainReference],
                   levels: Mapping[str, object],
                   names: Sequence[str]) -> dict[str, PlainReference]:
    """Every prompt's plain reference at the run's output levels."""
    at = reference_levels(executor.start.config, dict(levels))  # type: ignore[arg-type]
    return {n: refs[ref_key(n, at)] for n in names}


def run_serving(executor: Executor, scheduled: ScheduledRun,
                refs: Mapping[RefKey, PlainReference], align_to: Sequence[str]) -> Run:
    """Serve the run's load once and record it (module docstring)."""
    plan, config, sampler = executor.plan, executor.start.config, executor.sampler
    assert config.serving is not None
    window = WindowCallbacks(sampler.begin(idle_s=plan.idle_window_s, align_to=align_to)
                             if sampler else None)
    gpu = gpu_activity(sampler.sensors) if sampler else None
    levels = dict(scheduled.levels)
    engine = executor.engine
    apply_levels(engine, plan.factors, scheduled.levels)
    concurrency = run_concurrency(config, levels)
    slot = scheduled.of if isinstance(scheduled, Rerun) else scheduled.run_id
    seed = serving_seed(config, slot, scheduled.repeat, levels)
    names = [p.name for p in config.prompts]
    prompts = [tuple(executor.prompt_tokens[n]) for n in names]
    load = load_of_run(config, concurrency, run_tokens(config, levels), seed)
    strategy = executor.strategies[scheduled.strategy]
    references = run_references(executor, refs, levels, names)
    is_end = engine.target.is_end
    expected = {n: expected_output(ref.token_ids, is_end) for n, ref in references.items()}
    # The decoder watches each request against its prompt's expected output, so the
    # evidence of a divergence costs one top-2 gap per differing request inside the window.
    decoder = engine.batched(strategy, expected={
        p: expected[n] for p, n in zip(prompts, names, strict=True)})
    tap = TokenTap(decoder)
    probe = LoadProbe()
    before, started_unix, cpu0 = probe.read(), time.time(), time.process_time()
    try:
        window.start()
        record = run_load(tap, prompts, load)
    finally:
        window.stop()  # also when decoding failed: the sampler's window must not stay open
        decoder.close()  # frees its sequences
    clocks = (started_unix, time.time(), time.process_time() - cpu0)
    foreign, foreign_reason = probe.foreign_load(before, probe.read())
    energy, samples = window.outcome()
    start = executor.start
    offset = (window.window.edges.start_unix_s - window.window.edges.idle_start_unix_s
              if window.window is not None else 0.0)
    reading = serving_reading(start.primary_energy, start.sensors, energy, samples,
                              (record.started, record.ended), offset)
    metrics = serving_metrics(record, steady_b=run_steady_b(config, concurrency),
                              target=latency_target(config), energy=reading)
    served = ServedRun(record, metrics, tap.tokens, names, expected,
                       decoder.divergences,
                       {n: ref.top2_gaps for n, ref in references.items()},
                       decoder.prefill_s)
    serving = served.serving(concurrency, seed)
    who = RunIdentity(scheduled.run_id, scheduled.repeat, scheduled.order,
                      config.serving.pool, scheduled.strategy, strategy.k,
                      strategy.family.takes_k)
    text = engine.detokenize([t for r in serving.requests for t in r.token_ids])
    run = whole_load_run(who, serving, record, expected, text=text, clocks=clocks)
    run.energy, run.samples = energy, samples
    run.temperatures_c = machine.temperatures_c()
    return stamp_context(run, scheduled, levels, foreign, foreign_reason, gpu)
