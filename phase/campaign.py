"""A measurement campaign: prompts × strategies × repeats, shuffled, sampled, saved run by run.

The campaign loads the models once, generates a plain reference per prompt (which also warms
the caches), then works through a schedule that is reshuffled for every repeat. Each finished
run is written to disk at once (see `results.CampaignWriter`), so an interruption loses at most
the run in progress and `resume` picks up where it stopped.
"""

from __future__ import annotations

import hashlib
import random
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from phase import machine
from phase.decode.strategy import NGRAM_K, NGRAM_N_MAX, NGRAM_N_MIN
from phase.errors import PhaseError, UsageProblem
from phase.models import resolve
from phase.results import (
    SCHEMA_VERSION,
    CampaignConfig,
    CampaignWriter,
    ModelInfo,
    PlainReference,
    PromptSpec,
    ResultsFile,
    Run,
    SensorInfo,
    Step,
    UnavailableBackend,
    load_raw,
)


@dataclass
class CampaignPlan:
    """Everything a campaign needs to know before it starts; checked by `prepare`."""

    experiment: str
    note: str | None
    output: Path
    target: str
    draft: str | None
    prompts: list[PromptSpec]
    strategies: list[str]
    tokens: int = 384
    repeats: int = 3
    seed: int = 0
    shuffle: bool = True
    n_ctx: int = 4096
    threads: int | None = None
    threads_batch: int | None = None
    cooldown_s: float = 2.0
    idle_window_s: float = 1.0
    sample_hz: float = 20.0
    chat_template: bool = True
    ngram_n_min: int = NGRAM_N_MIN
    ngram_n_max: int = NGRAM_N_MAX
    ngram_k: int = NGRAM_K
    use_sensors: bool = True
    meters: list[str] = field(default_factory=list)
    rapl_root: str | None = None
    hwmon_root: str | None = None
    resume: bool = False


@dataclass(frozen=True)
class ScheduledRun:
    repeat: int
    order: int
    prompt: str
    strategy: str

    @property
    def run_id(self) -> str:
        return f"r{self.repeat}-{self.prompt}-{self.strategy}"


class Observer(Protocol):
    """What a front end (the CLI's progress bar) is told as the campaign goes."""

    def message(self, text: str) -> None: ...
    def campaign_started(self, total: int, already_done: int) -> None: ...
    def run_started(self, index: int, scheduled: ScheduledRun) -> None: ...
    def run_finished(self, index: int, run: Run) -> None: ...


class QuietObserver:
    def message(self, text: str) -> None:
        pass

    def campaign_started(self, total: int, already_done: int) -> None:
        pass

    def run_started(self, index: int, scheduled: ScheduledRun) -> None:
        pass

    def run_finished(self, index: int, run: Run) -> None:
        pass


def schedule(
    prompts: list[str], strategies: list[str], repeats: int, seed: int, shuffle: bool
) -> list[ScheduledRun]:
    """Every prompt × strategy once per repeat; each repeat in its own shuffled order.

    The order depends only on the seed, so a resumed campaign replays the same schedule.
    """
    out: list[ScheduledRun] = []
    for repeat in range(repeats):
        block = [(p, s) for p in prompts for s in strategies]
        if shuffle:
            random.Random(f"{seed}:{repeat}").shuffle(block)
        for prompt, strategy in block:
            out.append(ScheduledRun(repeat, len(out), prompt, strategy))
    return out


_INCLUDE = re.compile(r"\{\{include:([^}]+)\}\}")


def load_prompt(path: Path) -> PromptSpec:
    """A prompt file; `{{include:FILE}}` pulls in a file relative to the prompt's experiment."""
    if not path.is_file():
        raise UsageProblem(f"{path}: prompt file not found")
    text = path.read_text(encoding="utf-8")

    def include(match: re.Match[str]) -> str:
        target = path.parent.parent / match.group(1).strip()
        if not target.is_file():
            raise UsageProblem(f"{path}: includes {target}, which does not exist")
        return target.read_text(encoding="utf-8")

    resolved = path.resolve()
    source = (
        str(resolved.relative_to(machine.REPO_ROOT))
        if resolved.is_relative_to(machine.REPO_ROOT) else str(resolved)
    )
    return PromptSpec(name=path.stem, text=_INCLUDE.sub(include, text).strip(), source=source)


def _config(plan: CampaignPlan) -> CampaignConfig:
    return CampaignConfig(
        tokens=plan.tokens,
        repeats=plan.repeats,
        seed=plan.seed,
        shuffle=plan.shuffle,
        strategies=plan.strategies,
        prompts=plan.prompts,
        n_ctx=plan.n_ctx,
        cooldown_s=plan.cooldown_s,
        idle_window_s=plan.idle_window_s,
        sample_hz=plan.sample_hz,
        chat_template=plan.chat_template,
        ngram_n_min=plan.ngram_n_min,
        ngram_n_max=plan.ngram_n_max,
        ngram_k=plan.ngram_k,
    )


def _differences(old: ResultsFile, config: CampaignConfig, models: list[ModelInfo]) -> list[str]:
    diffs = []
    old_cfg, new_cfg = old.config.model_dump(), config.model_dump()
    for key in old_cfg:
        if old_cfg[key] != new_cfg[key]:
            shown = "text differs" if key == "prompts" else f"{old_cfg[key]!r} → {new_cfg[key]!r}"
            diffs.append(f"config.{key}: {shown}")
    old_models = {m.role: m.sha256 for m in old.models}
    new_models = {m.role: m.sha256 for m in models}
    for role in sorted(set(old_models) | set(new_models)):
        if old_models.get(role) != new_models.get(role):
            diffs.append(
                f"{role} model sha256: {str(old_models.get(role))[:12]} → "
                f"{str(new_models.get(role))[:12]}"
            )
    return diffs


class Campaign:
    """Prepare (check everything, load models), then run. Nothing is written before `run`."""

    def __init__(
        self, plan: CampaignPlan, observer: Observer | None = None, sensors: list[Any] | None = None
    ) -> None:
        """`sensors` replaces discovery (same checks apply); by default every backend is probed."""
        self.plan = plan
        self.given_sensors = sensors
        self.observer: Observer = observer or QuietObserver()
        self.engine: Any = None
        self.sampler: Any = None
        self.sensor_infos: list[SensorInfo] = []
        self.unavailable: list[UnavailableBackend] = []
        self.models: list[ModelInfo] = []
        self.previous: ResultsFile | None = None
        self.strategies: dict[str, Any] = {}

    # -- preparation: every check that can fail before anything is written ---------------

    def prepare(self) -> None:
        from phase.decode import Engine, parse_strategy

        plan = self.plan
        self._check_output()
        names = [p.name for p in plan.prompts]
        if len(set(names)) != len(names):
            raise UsageProblem(f"prompt names repeat: {names}")
        self.strategies = {
            s: parse_strategy(s, ngram_n_min=plan.ngram_n_min, ngram_n_max=plan.ngram_n_max)
            for s in plan.strategies
        }
        if len(self.strategies) != len(plan.strategies):
            raise UsageProblem(f"strategy names repeat: {plan.strategies}")
        needs_draft = any(st.name == "draft" for st in self.strategies.values())
        if needs_draft and not plan.draft:
            raise UsageProblem("draft-k strategies need a draft model: pass --draft")

        say = self.observer.message
        target = resolve(plan.target, progress=lambda m: say(f"target: {m}"))
        draft = resolve(plan.draft, progress=lambda m: say(f"draft: {m}")) if needs_draft else None
        say(f"loading {target.path.name}" + (f" + {draft.path.name}" if draft else ""))
        self.engine = Engine(
            str(target.path),
            str(draft.path) if draft else None,
            n_ctx=plan.n_ctx,
            n_threads=plan.threads,
            n_threads_batch=plan.threads_batch or plan.threads,
            seed=plan.seed,
        )
        self.threads, self.threads_batch = self.engine.n_threads, self.engine.n_threads_batch
        self.models = [self._model_info("target", target)]
        if draft is not None:
            self.models.append(self._model_info("draft", draft))
        self.prompt_tokens = {
            p.name: self.engine.format_prompt(p.text, chat_template=plan.chat_template)
            for p in plan.prompts
        }
        for name, toks in self.prompt_tokens.items():
            if len(toks) + plan.tokens > plan.n_ctx:
                raise UsageProblem(
                    f"prompt '{name}' has {len(toks)} tokens; with {plan.tokens} to generate "
                    f"it needs {len(toks) + plan.tokens} > context {plan.n_ctx}: raise --n-ctx"
                )
        if plan.resume:
            self.previous = load_raw(plan.output)
            if self.previous.status == "complete":
                raise UsageProblem(
                    f"{plan.output}: campaign already complete; results files are immutable"
                )
            diffs = _differences(self.previous, _config(plan), self.models)
            if diffs:
                raise UsageProblem(
                    f"{plan.output}: cannot resume, the campaign differs: " + "; ".join(diffs)
                )
        self._prepare_sensors()

    def _check_output(self) -> None:
        out = self.plan.output
        if not out.parent.is_dir():
            raise UsageProblem(f"{out}: directory {out.parent} does not exist; create it first")
        if self.plan.resume:
            if not out.exists():
                raise UsageProblem(f"{out}: nothing to resume (file not found)")
        elif out.exists():
            raise UsageProblem(
                f"{out}: already exists; results files are never overwritten. "
                f"Choose another -o, or continue it with --resume {out}"
            )

    def _model_info(self, role: str, resolved: Any) -> ModelInfo:
        meta = self.engine.model_info(role)
        return ModelInfo(
            role=role,
            name=resolved.name,
            source=resolved.source,
            path=str(resolved.path),
            size_bytes=resolved.size_bytes,
            sha256=resolved.sha256,
            architecture=meta.get("architecture"),
            quant=meta.get("quant"),
            n_vocab=meta["n_vocab"],
        )

    def _prepare_sensors(self) -> None:
        from phase.sensors import Sampler, assert_publishable, discover, meter, parse_meter_spec

        plan = self.plan
        if not plan.use_sensors:
            self.unavailable = [
                UnavailableBackend(backend="all", reason="sensors disabled with --no-sensor")
            ]
            return
        kwargs: dict[str, Any] = {"meters": [parse_meter_spec(m) for m in plan.meters]}
        if plan.rapl_root:
            kwargs["rapl_root"] = plan.rapl_root
        if plan.hwmon_root:
            kwargs["hwmon_root"] = plan.hwmon_root
        if self.given_sensors is not None:
            sensors, self.unavailable = list(self.given_sensors), []
        else:
            found = discover(**kwargs)
            sensors, self.unavailable = list(found.sensors), list(found.unavailable)
            # A meter the user named explicitly is not optional: missing, it is bad input.
            meter_problems = [u.reason for u in found.unavailable if u.backend == meter.BACKEND]
            if plan.meters and meter_problems:
                found.close()
                raise UsageProblem(f"--meter: {'; '.join(meter_problems)}")
        # Before anything is written: fixtures must never be recorded as measurements.
        assert_publishable(sensors)
        if sensors:
            self.sampler = Sampler(sensors, hz=plan.sample_hz)
            self.sampler.start()
            self.sensor_infos = self.sampler.sensor_infos()

    # -- running ------------------------------------------------------------------------

    def _header(self) -> ResultsFile:
        plan = self.plan
        return ResultsFile(
            schema_version=SCHEMA_VERSION,
            id=plan.output.stem,
            experiment=plan.experiment,
            note=plan.note,
            created=datetime.now(UTC),
            status="running",
            provenance=machine.provenance(
                self.threads, self.threads_batch, self.engine.system_info()
            ),
            models=self.models,
            sensors=self.sensor_infos,
            sensors_unavailable=self.unavailable,
            config=_config(plan),
            references=[],
            runs=[],
        )

    def _references(self, writer: CampaignWriter) -> dict[str, list[int]]:
        from phase.decode import parse_strategy

        stored = {r.prompt: r for r in writer.results.references}
        refs: dict[str, list[int]] = {}
        for prompt in self.plan.prompts:
            self.observer.message(f"plain reference (and warm-up) for prompt '{prompt.name}'")
            result = self.engine.run(
                self.prompt_tokens[prompt.name], parse_strategy("plain"), self.plan.tokens
            )
            sha = _token_sha(result.token_ids)
            old = stored.get(prompt.name)
            if old is not None and old.output_sha256 != sha:
                raise PhaseError(
                    f"{self.plan.output}: plain output for '{prompt.name}' differs from the one "
                    "recorded before the interruption (same models and config); resuming would "
                    "mix incomparable runs. Start a new campaign."
                )
            refs[prompt.name] = list(result.token_ids)
            if old is None:
                writer.results.references.append(
                    PlainReference(prompt=prompt.name, output_sha256=sha,
                                   token_ids=list(result.token_ids))
                )
        return refs

    def run(self) -> ResultsFile:
        """Run every scheduled run not yet recorded. Ctrl-C saves and re-raises."""
        plan = self.plan
        if self.previous is not None:
            # Loaded and checked in prepare(); reading the file again would be wasted I/O.
            self.previous.status = "running"
            writer = CampaignWriter(plan.output, self.previous)
        else:
            writer = CampaignWriter(plan.output, self._header())
        done = {r.id for r in writer.results.runs}
        runs = schedule([p.name for p in plan.prompts], plan.strategies, plan.repeats,
                        plan.seed, plan.shuffle)
        try:
            refs = self._references(writer)
            self.observer.campaign_started(len(runs), len(done))
            for index, scheduled in enumerate(runs):
                if scheduled.run_id in done:
                    continue
                self.observer.run_started(index, scheduled)
                if plan.cooldown_s > 0:
                    time.sleep(plan.cooldown_s)
                run = self._one_run(scheduled, refs[scheduled.prompt])
                writer.add_run(run)
                self.observer.run_finished(index, run)
        except BaseException:
            writer.finish("interrupted")
            raise
        finally:
            if self.sampler is not None:
                self.sampler.close()
        writer.finish("complete")
        return writer.results

    def _one_run(self, scheduled: ScheduledRun, reference: list[int]) -> Run:
        from phase.decode import compare_to_plain

        strategy = self.strategies[scheduled.strategy]
        with self._sensor_window() as window:
            result = self.engine.run(
                self.prompt_tokens[scheduled.prompt],
                strategy,
                self.plan.tokens,
                on_decode_start=window.start,
                on_decode_end=window.stop,
            )
        energy, samples = window.outcome()
        matches, divergence = compare_to_plain(result.token_ids, reference)
        return Run(
            id=scheduled.run_id,
            repeat=scheduled.repeat,
            order=scheduled.order,
            prompt=scheduled.prompt,
            strategy=scheduled.strategy,
            k=getattr(strategy, "k", None) if strategy.name != "plain" else None,
            started_unix_s=result.started_unix_s,
            ended_unix_s=result.ended_unix_s,
            prompt_tokens=result.prompt_tokens,
            prefill_s=result.prefill_s,
            decode_s=result.decode_s,
            tokens=len(result.token_ids),
            tokens_per_s=result.tokens_per_s,
            steps=result.steps,
            drafted=result.drafted,
            accepted=result.accepted,
            acceptance=result.acceptance,
            acceptance_reason=result.acceptance_reason,
            trace=[
                Step(proposed=s.proposed, accepted=s.accepted, draft_ms=s.draft_ms,
                     verify_ms=s.verify_ms)
                for s in result.trace
            ],
            cpu_s=result.cpu_s,
            energy=energy,
            temperatures_c=machine.temperatures_c(),
            output_sha256=_token_sha(result.token_ids),
            output_text=result.text,
            token_ids=list(result.token_ids),
            matches_plain=matches,
            first_divergence=divergence,
            samples=samples,
        )

    @contextmanager
    def _sensor_window(self) -> Iterator[_Window]:
        if self.sampler is None:
            yield _Window(None)
            return
        window = _Window(self.sampler.begin(idle_s=self.plan.idle_window_s))
        try:
            yield window
        except BaseException:
            window.stop()  # a failed run must not leave the sampler's window open
            raise


class _Window:
    """Adapts a sampler window (or its absence) to the decode callbacks."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def start(self) -> None:
        if self.inner is not None:
            self.inner.start()

    def stop(self) -> None:
        if self.inner is not None:
            self.inner.stop()

    def outcome(self) -> tuple[list[Any], list[Any]]:
        if self.inner is None:
            return [], []
        windows, traces = self.inner.result()
        return list(windows), list(traces)


def _token_sha(token_ids: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, token_ids)).encode()).hexdigest()


def default_output(experiment: str, results_dir: Path = Path("results")) -> Path:
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    base = results_dir / f"{experiment}-{machine.host_class()}-{day}.json"
    n = 2
    out = base
    while out.exists():
        out = base.with_name(f"{base.stem}-{n}.json")
        n += 1
    return out
