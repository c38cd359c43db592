"""One scheduled run, executed: its levels applied, its prompt decoded (greedy or sampled)
inside the sensors' window, and what the machine did around it (foreign load, GPU activity,
temperatures) recorded on the Run. It neither judges nor writes the run
(phase.campaign.recording does)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from phase.campaign import machine
from phase.campaign.disturbance import LoadProbe
from phase.campaign.factors import apply_levels
from phase.campaign.plan import CampaignPlan
from phase.campaign.run_context import stamp_context
from phase.campaign.sampling import sampling_settings
from phase.campaign.schedule import ScheduledRun
from phase.campaign.sensing import WindowCallbacks
from phase.campaign.windows import WindowSize
from phase.decode import Engine
from phase.decode.sampled_timed import run_sampled
from phase.policy.strategies import Strategy
from phase.results import Level, PlainReference, ResultsFile, Run
from phase.results.levels import fill_tokens, filled, level_of, run_tokens
from phase.sensors import Sampler
from phase.sensors.nvidia.gpu_activity import gpu_activity


@dataclass(frozen=True)
class Executor:
    """What running one scheduled run needs from a prepared campaign. `start` is the file
    being written: its config is read at each run (the window size is recorded in it)."""

    plan: CampaignPlan
    start: ResultsFile
    engine: Engine
    level_engines: Mapping[Level, Engine]
    strategies: Mapping[str, Strategy]
    prompt_tokens: Mapping[str, list[int]]
    sampler: Sampler | None

    def engine_for(self, levels: Mapping[str, Level]) -> Engine:
        """The engine a run at these levels decodes with: its model level's, else the plan's."""
        model = level_of(self.start.config, levels, "model")
        return self.level_engines[model] if model is not None else self.engine

    def run(self, scheduled: ScheduledRun, reference: PlainReference, size: WindowSize) -> Run:
        window = WindowCallbacks(
            self.sampler.begin(idle_s=self.plan.idle_window_s, align_to=size.align_to)
            if self.sampler else None
        )
        # After the idle window: this process has run no kernel for cooldown + idle seconds.
        gpu = gpu_activity(self.sampler.sensors) if self.sampler else None
        config, levels = self.start.config, dict(scheduled.levels)
        engine = self.engine_for(levels)
        apply_levels(engine, self.plan.factors, scheduled.levels)
        probe = LoadProbe()
        sampling = sampling_settings(self.plan, config, levels, scheduled)
        before = probe.read()  # around prefill and decode: the longer window, the finer
        try:
            prompt = filled(self.prompt_tokens[scheduled.prompt], fill_tokens(config, levels))
            strategy, tokens = self.strategies[scheduled.strategy], run_tokens(config, levels)
            if sampling is None:
                result = engine.run(
                    prompt, strategy, tokens,
                    on_decode_start=window.start,
                    on_decode_end=window.stop,
                    reference=reference.token_ids,
                    min_window_s=size.min_s or 0.0,
                    max_passes=self.plan.max_passes,
                )
            else:
                result = run_sampled(engine, prompt, strategy, tokens, sampling,
                                     on_decode_start=window.start, on_decode_end=window.stop,
                                     min_window_s=size.min_s or 0.0,
                                     max_passes=self.plan.max_passes)
        finally:
            window.stop()  # also when decoding failed: the sampler's window must not stay open
        load, load_reason = probe.foreign_load(before, probe.read())
        energy, samples = window.outcome()
        run = result.to_run(
            run_id=scheduled.run_id,
            repeat=scheduled.repeat,
            order=scheduled.order,
            prompt=scheduled.prompt,
            strategy=scheduled.strategy,
            reference=reference.token_ids,
            reference_gaps=reference.top2_gaps,
            energy=energy,
            samples=samples,
            temperatures_c=machine.temperatures_c(),
            sampled_seed=sampling.seed if sampling is not None else None,
        )
        return stamp_context(run, scheduled, dict(scheduled.levels), load, load_reason, gpu)
