"""A campaign: prepare (every check that can fail, before anything is written) -> run (a plain
reference per prompt, then the shuffled schedule) -> write (each finished run at once).

    campaign = prepare(experiment, plan, Destination(path), discover_sensors(options), observer)
    with campaign:
        results = campaign.run()

Models load once; a plain reference per prompt (which also warms the caches) precedes the
measured runs. Each finished run is written at once (`results.CampaignWriter`): an interruption
loses at most the run in progress, and `Destination(path, resume=True)` picks up from there.

This module holds the campaign and its order of steps; each step is another module's job:
    opening     before the measured runs: quiet check, cost profile, window size
    loop        the measured runs in order: repeats, re-runs, adaptive extra rounds
    reruns      which runs are disturbed, and which are re-run when
    recording   one run: execute, judge, write at once
    execute     one run: levels, decoding inside the sensors' window, what the machine did
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from phase.base.errors import PhaseError
from phase.campaign import duration, machine, opening, windows
from phase.campaign.bandwidth_record import measure_bandwidth
from phase.campaign.destination import Destination
from phase.campaign.execute import Executor
from phase.campaign.experiment import Experiment
from phase.campaign.loop import run_schedule
from phase.campaign.observer import Observer, QuietObserver
from phase.campaign.plan import CampaignPlan
from phase.campaign.recording import Recorder
from phase.campaign.references import decode_references
from phase.campaign.schedule import ScheduledRun
from phase.campaign.shards import CampaignIdentity, keep
from phase.decode import Engine
from phase.policy.strategies import Strategy
from phase.results import (
    CampaignWriter,
    Level,
    ModelInfo,
    PromptSpec,
    ResultsFile,
    ShardInfo,
    UnavailableBackend,
)
from phase.results.schedule import planned_schedule
from phase.sensors import Sampler
from phase.storage.claim import Claim

# Defined beside it, imported from here by prepare and the tests.
__all__ = ["Campaign", "CampaignFailed", "Destination", "Observer", "QuietObserver"]


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
        self.start.status = "running"
        if self.resumed:
            self._add_this_host()
        writer = CampaignWriter(self.claim, self.start, exists=self.resumed)
        done = {r.id for r in writer.results.runs}
        whole = planned_schedule(writer.results.config)
        runs = keep(whole, self._shard)
        try:
            self._measure(writer, done, runs, len(whole))
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

    def _measure(self, writer: CampaignWriter, done: set[str], runs: list[ScheduledRun],
                 length: int) -> None:
        """The steps in order: quiet check, plain references, cost profile, window size, the
        runs of this machine's part of the schedule (of `length` runs) that `done` lacks,
        the machine's bandwidth."""
        plan, message = self.plan, self.observer.message
        executor = Executor(plan, self.start, self.engine, self.level_engines, self.strategies,
                            self.prompt_tokens, self.sampler)
        opening.warn_if_busy(plan, self.sampler, message)
        refs, plain_s, prefill_s = decode_references(
            executor.engine_for, writer.results.config, self.prompts, self.prompt_tokens,
            writer.results.references, self._shard, message, self.output)
        opening.cost_profile(writer, refs, plan=plan, engine=self.engine,
                             prompt_tokens=self.prompt_tokens, strategies=self.strategies,
                             sampler=self.sampler, unavailable=self.unavailable,
                             message=message)
        size, planned = opening.size_windows(
            writer, plain_s, plan=plan, resumed=self.resumed, prompts=self.prompts,
            prompt_tokens=self.prompt_tokens, shard=self._shard, strategies=self.strategies,
            message=message)
        self._state_duration(writer, runs, planned, done, prefill_s)
        self.observer.campaign_started(len(runs), len(done & {r.run_id for r in runs}))
        recorder = Recorder(executor, writer, self.observer, refs, size)
        run_schedule(recorder, runs, length, done, plan)
        if plan.measure_bandwidth and writer.results.bandwidth is None:
            writer.results.bandwidth = measure_bandwidth(
                plan.factors, self.engine.n_threads, plan.bandwidth_repeats,
                plan.bandwidth_array_bytes, message)

    def _state_duration(self, writer: CampaignWriter, runs: list[ScheduledRun],
                        planned: list[windows.PlannedWindow], done: set[str],
                        prefill_s: dict[str, float]) -> None:
        """Say how long the runs left will take, and keep the statement in the file (written
        with the next run) so that what they took can be checked against it."""
        lengths = {name: len(tokens) for name, tokens in self.prompt_tokens.items()}
        prices = duration.decode_prices(writer.results.profile, lengths, self.strategies,
                                        self.plan.tokens)
        stated = duration.estimate(runs, planned, writer.results.config, done, prices,
                                   prefill_s)
        self.observer.message(stated.line())
        writer.results.stated_duration = stated.record()

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
