"""A campaign: prepare (every check that can fail, before anything is written) -> run (a plain
reference per prompt, then the shuffled schedule) -> write (each finished run at once).

    campaign = prepare(experiment, plan, Destination(path), discover_sensors(options), observer)
    with campaign:
        results = campaign.run()

Models load once; a plain reference per prompt (which also warms the caches) precedes the
measured runs. Each finished run is written at once (`results.CampaignWriter`): an interruption
loses at most the run in progress, and `Destination(path, resume=True)` picks up from there.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from phase.analysis import adaptive
from phase.campaign import duration, machine, profiling, windows
from phase.campaign.bandwidth_record import measure_bandwidth
from phase.campaign.disturbance import LoadProbe, quiet_check
from phase.campaign.experiment import Experiment
from phase.campaign.factors import apply_levels
from phase.campaign.plan import CampaignPlan
from phase.campaign.references import RefKey, decode_references, first_per_prompt, ref_key
from phase.campaign.reruns import due_reruns, judge_run, repeats_of
from phase.campaign.sampling import sampling_settings
from phase.campaign.schedule import Rerun, ScheduledRun
from phase.campaign.sensing import WindowCallbacks
from phase.campaign.shards import CampaignIdentity, keep
from phase.decode import Engine
from phase.decode.sampled_timed import run_sampled
from phase.errors import PhaseError
from phase.policy.strategies import Strategy
from phase.results import (
    CampaignWriter,
    Claim,
    Level,
    ModelInfo,
    PlainReference,
    PromptSpec,
    ResultsFile,
    Run,
    ShardInfo,
    UnavailableBackend,
)
from phase.results.levels import fill_tokens, filled, level_of, reference_levels, run_tokens
from phase.results.schedule import planned_schedule
from phase.sensors import Sampler
from phase.sensors.gpu_activity import describe as describe_gpu
from phase.sensors.gpu_activity import gpu_activity


class Observer(Protocol):
    """What a front end (the terminal's progress bar) is told as the campaign goes."""

    def message(self, text: str) -> None: ...
    def campaign_started(self, total: int, already_done: int) -> None: ...
    def run_started(self, index: int, scheduled: ScheduledRun) -> None: ...
    def run_finished(self, index: int, run: Run) -> None: ...
    def extra_runs(self, count: int) -> None: ...


class QuietObserver:
    def message(self, text: str) -> None:
        pass

    def campaign_started(self, total: int, already_done: int) -> None:
        pass

    def run_started(self, index: int, scheduled: ScheduledRun) -> None:
        pass

    def run_finished(self, index: int, run: Run) -> None:
        pass

    def extra_runs(self, count: int) -> None:
        pass


@dataclass(frozen=True)
class Destination:
    """The results file: a new one (never overwritten), or an interrupted one to continue.
    `numbered`: `path` is a default name; when it is taken, the first free of path-2.json,
    path-3.json... is claimed instead (atomically: two campaigns never pick the same one)."""

    path: Path
    resume: bool = False
    numbered: bool = False


class CampaignFailed(PhaseError):
    """A run failed after the file was started; the message says the finished runs are kept."""


@dataclass(frozen=True)
class Campaign:
    """A prepared campaign: models loaded, prompts tokenized, sensors sampling. `run` it once,
    then `close` it (or use it as a context manager)."""

    experiment: Experiment
    plan: CampaignPlan
    destination: Destination
    observer: Observer
    prompts: list[PromptSpec]
    strategies: dict[str, Strategy]
    engine: Engine
    models: list[ModelInfo]
    prompt_tokens: dict[str, list[int]]
    # The file to write: the new header, or the interrupted campaign read under the claim.
    start: ResultsFile
    resumed: bool
    sampler: Sampler | None
    # The lock on the results file, held from prepare() until close().
    claim: Claim
    # The campaign id and, for a shard, its part of the plan (phase.campaign.shards); the
    # header (`start`) records them, with the primary energy sensors and the hosts.
    identity: CampaignIdentity | None = None
    # A model factor's engines, by level (phase.campaign.model_levels); empty without one.
    level_engines: dict[Level, Engine] = field(default_factory=dict)

    @property
    def output(self) -> Path:
        return self.claim.path

    @property
    def unavailable(self) -> list[UnavailableBackend]:
        return self.start.sensors_unavailable

    def __enter__(self) -> Campaign:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.sampler is not None:
            self.sampler.close()
        for engine in self.level_engines.values():
            engine.close()
        self.engine.close()
        self.claim.release()

    def run(self) -> ResultsFile:
        """Run every scheduled run not yet recorded. Ctrl-C saves and re-raises; any other
        failure saves and raises CampaignFailed saying where the finished runs are."""
        plan = self.plan
        self.start.status = "running"
        if self.resumed:
            self._add_this_host()
        writer = CampaignWriter(self.claim, self.start, exists=self.resumed)
        done = {r.id for r in writer.results.runs}
        whole = planned_schedule(writer.results.config)
        runs = keep(whole, self._shard)
        try:
            self._quiet_check()
            refs, plain_s = self._references(writer)
            self._profile(writer, refs)
            size, planned = self._size_windows(writer, plain_s)
            self.observer.message(duration.estimate(runs, planned, writer.results.config,
                                                    done).line())
            self.observer.campaign_started(len(runs), len(done & {r.run_id for r in runs}))
            index = 0
            for block in repeats_of(runs):
                for scheduled in block:
                    if scheduled.run_id not in done:
                        self._record(index, scheduled, refs, writer, size)
                    index += 1
                index = self._reruns(index, block, len(whole), refs, writer, size)
            if plan.target_half_width is not None:
                self._extra_rounds(index, done, refs, writer, size)
            if plan.measure_bandwidth and writer.results.bandwidth is None:
                writer.results.bandwidth = measure_bandwidth(
                    plan.factors, self.engine.n_threads, plan.bandwidth_repeats,
                    plan.bandwidth_array_bytes, self.observer.message)
            writer.finish("complete")
        except PhaseError as exc:
            writer.try_finish("interrupted")
            raise CampaignFailed(
                f"{exc}; {writer.saved_runs} finished run(s) are kept in {self.output}, "
                "and --resume continues it", exit_code=exc.exit_code) from exc
        except BaseException:
            writer.try_finish("interrupted")
            raise
        finally:
            if self.sampler is not None:
                self.sampler.close()
        return writer.results

    def _reruns(self, index: int, block: list[ScheduledRun], length: int,
                refs: dict[RefKey, PlainReference], writer: CampaignWriter,
                size: windows.WindowSize) -> int:
        """Disturbed runs of this repeat get a fresh slot at its end, until undisturbed or out
        of retries; worked out from the file, so a resumed campaign knows."""
        while due := due_reruns(writer.results.runs, block, self.plan, length):
            self.observer.message(f"re-running {len(due)} disturbed run(s) of repeat "
                                  f"{block[0].repeat}")
            for rerun in due:
                self._record(index, rerun, refs, writer, size)
                index += 1
        return index

    def _extra_rounds(self, index: int, done: set[str], refs: dict[RefKey, PlainReference],
                      writer: CampaignWriter, size: windows.WindowSize) -> None:
        """Adaptive repeats: after the planned ones, a round of the conditions whose ratio to
        plain is still too wide (phase.analysis.adaptive), until all are narrow or the budget
        is spent. Each decision rests on the runs of the rounds before it only, so a resumed
        campaign decides every round again exactly as before and runs what is missing."""
        results = writer.results
        decisions: list[adaptive.Decision] = []
        repeat = results.config.repeats
        while True:
            decision = adaptive.decide(results, repeat)
            decisions.append(decision)
            results.adaptive = adaptive.record(results, decisions)  # written with the next run
            if decision.stopped is not None:
                self.observer.message(f"adaptive repeats stop: {decision.reason}")
                return
            block = list(decision.slots)
            todo = [s for s in block if s.run_id not in done]
            if todo:
                self.observer.message(
                    f"extra round {repeat - results.config.repeats + 1} (repeat {repeat}): "
                    f"{len(decision.wide)} ratio(s) still wider than "
                    f"±{results.config.target_half_width:.0%}, {len(block)} runs")
                self.observer.extra_runs(len(todo))
            for scheduled in todo:
                self._record(index, scheduled, refs, writer, size)
                index += 1
            # A re-run's order is its slot's plus its attempt: extra_round leaves room.
            index = self._reruns(index, block, 1, refs, writer, size)
            repeat += 1

    def _record(self, index: int, scheduled: ScheduledRun, refs: dict[RefKey, PlainReference],
                writer: CampaignWriter, size: windows.WindowSize) -> None:
        self.observer.run_started(index, scheduled)
        if self.plan.cooldown_s > 0:
            time.sleep(self.plan.cooldown_s)
        run = self._one_run(scheduled, refs[self._ref_key(scheduled)], size)
        judge_run(writer.results, run)
        writer.add_run(run)
        self.observer.run_finished(index, run)

    def _quiet_check(self) -> None:
        """Warn (pyperf's `system show` is the model) when other work already keeps the
        machine busy: its runs would be disturbed and re-run, or their figures shifted."""
        if self.plan.quiet_check_s <= 0:
            return
        found = quiet_check(self.plan.quiet_check_s)
        warning = found.warning(self.plan.disturbed_load)
        if warning is not None:
            self.observer.message(warning)
        busy_gpu = describe_gpu(gpu_activity(self.sampler.sensors) if self.sampler else None)
        if busy_gpu is not None:
            self.observer.message(f"the GPU is not quiet before the campaign: {busy_gpu}. "
                                  "Runs it keeps busy are re-run.")

    def _engine_for(self, levels: Mapping[str, Level]) -> Engine:
        """The engine a run at these levels decodes with: its model level's, else the plan's."""
        model = level_of(self.start.config, levels, "model")
        return self.level_engines[model] if model is not None else self.engine

    def _ref_key(self, scheduled: ScheduledRun) -> RefKey:
        return ref_key(scheduled.prompt,
                       reference_levels(self.start.config, dict(scheduled.levels)))

    @property
    def _shard(self) -> ShardInfo | None:
        return self.identity.shard if self.identity is not None else None

    def _add_this_host(self) -> None:
        host = machine.host_info(self.engine.system_info(),
                                 [self._shard.index] if self._shard is not None else [])
        if all(h.hostname != host.hostname for h in self.start.hosts):
            # Resumed on another machine (of the same class: prepare compared the identity):
            # its runs say so (Run.host), and so does the file.
            self.start.hosts = [*self.start.hosts, host]

    def _references(self, writer: CampaignWriter
                    ) -> tuple[dict[RefKey, PlainReference], dict[str, float]]:
        return decode_references(self._engine_for, writer.results.config, self.prompts,
                                 self.prompt_tokens, writer.results.references, self._shard,
                                 self.observer.message, self.output)

    def _size_windows(self, writer: CampaignWriter,
                      plain_s: dict[str, float]
                      ) -> tuple[windows.WindowSize, list[windows.PlannedWindow]]:
        """The energy window every run decodes to (phase.campaign.windows), recorded in the
        file's config, and each condition's expected passes. A resumed file keeps its window."""
        results = writer.results
        size = windows.size_window(results.sensors, results.primary_energy,
                                   enabled=self.plan.size_windows)
        config = results.config
        if self.resumed and config.window_min_s is not None:
            size = windows.WindowSize(config.window_min_s, config.window_min_reason or "",
                                      size.align_to, size.needs)
        results.config = config.model_copy(update={
            "window_min_s": size.min_s,
            "window_min_reason": size.reason,
        })
        shard = self._shard
        lengths = {p.name: len(self.prompt_tokens[p.name]) for p in self.prompts
                   if shard is None or p.name in shard.prompts}
        planned = windows.plan_windows(size, self.strategies, lengths, self.plan.tokens,
                                       self.plan.max_passes, results.profile, plain_s)
        for line in windows.table_lines(size, planned):
            self.observer.message(line)
        return size, planned

    def _profile(self, writer: CampaignWriter, refs: dict[RefKey, PlainReference]) -> None:
        """Measure the cost profile once per file (a resumed campaign keeps the one its
        earlier runs were decided with), and hand it to `auto`."""
        if not self.plan.profile:
            return
        profile = writer.results.profile
        if profile is None:
            self.observer.message("cost profile: timing target and draft passes of 1..17 "
                                  "tokens")
            profile = profiling.measure(self.engine, self.plan, self.prompt_tokens,
                                        first_per_prompt(refs),
                                        self.sampler, self.unavailable)
            writer.results.profile = profile  # written with the first run
            self.observer.message(profiling.summary_line(profile))
        if any(s.family.needs_profile for s in self.strategies.values()):
            primary = writer.results.primary_energy
            self.engine.use_profile(profile, self.plan.auto_objective,
                                    primary.sensors if primary is not None else None)

    def _one_run(self, scheduled: ScheduledRun, reference: PlainReference,
                 size: windows.WindowSize) -> Run:
        window = WindowCallbacks(
            self.sampler.begin(idle_s=self.plan.idle_window_s, align_to=size.align_to)
            if self.sampler else None
        )
        # After the idle window: this process has run no kernel for cooldown + idle seconds.
        gpu = gpu_activity(self.sampler.sensors) if self.sampler else None
        config, levels = self.start.config, dict(scheduled.levels)
        engine = self._engine_for(levels)
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
        run.host = machine.hostname()
        run.factors = dict(scheduled.levels)
        run.foreign_load, run.foreign_load_reason = load, load_reason
        if gpu is not None:
            run.gpu_busy_before = gpu.busy
            run.gpu_other_processes = gpu.other_processes
            run.gpu_activity_reason = gpu.reason
        run.rerun_of = scheduled.of if isinstance(scheduled, Rerun) else None
        return run


def default_output(experiment: str, *, quick: bool = False,
                   results_dir: Path = Path("results")) -> Path:
    """results/<experiment>-<host class>-<date>.json: the base of a numbered Destination
    (-2, -3... when taken). A quick smoke campaign is not a study: it goes under
    results/quick/, which the site does not publish (the directory is created)."""
    directory = results_dir / "quick" if quick else results_dir
    directory.mkdir(parents=True, exist_ok=True)
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    return directory / f"{experiment}-{machine.host_class()}-{day}.json"
