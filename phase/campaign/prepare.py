"""Preparing a campaign: every check that can fail, before anything is written.

Bad input here (an unknown prompt or strategy, a model that is not there, a prompt that does
not fit the context, an output file that exists) raises with exit 2 and writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from phase.campaign.experiment import Experiment
from phase.campaign.plan import CampaignPlan, campaign_config
from phase.campaign.prompts import load_prompts
from phase.campaign.runner import Campaign, Destination, Observer, QuietObserver
from phase.campaign.sensing import primary_energy
from phase.campaign.shards import CampaignIdentity, ShardRequest, identify, same_shard
from phase.decode import Engine, Strategy, parse_strategy
from phase.errors import UsageProblem
from phase.models import ResolvedModel, resolve
from phase.results import (
    CampaignConfig,
    ModelInfo,
    PrimaryEnergy,
    PromptSpec,
    ResultsFile,
    load_raw,
)
from phase.sensors import Discovery, Sampler, assert_publishable


def prepare(
    experiment: Experiment,
    plan: CampaignPlan,
    destination: Destination,
    discovery: Discovery,
    observer: Observer | None = None,
    energy_sensors: Sequence[str] = (),
    *,
    shard: ShardRequest | None = None,
    job_id: tuple[str | None, str | None] = (None, None),
) -> Campaign:
    """Check the destination, prompts and strategies, load the models, tokenize the prompts,
    choose the primary energy sensors for where llama.cpp put the model (or take
    `energy_sensors`), load the campaign to resume, start sampling `discovery`'s sensors.
    Raises on bad input (exit 2, nothing written); the discovered sensors are closed on any
    failure.

    `shard` runs one part of the plan (phase.campaign.shards); `job_id` (id, source) goes into
    the campaign id that every shard of one campaign shares."""
    observer = observer or QuietObserver()
    engine: Engine | None = None
    try:
        _check_destination(destination)
        identity: CampaignIdentity | None = identify(experiment.name, plan, shard, job_id)
        prompts = load_prompts(experiment.prompts_dir, plan.prompts)
        strategies = _parse_strategies(plan)
        engine, models = _load_models(plan, strategies, observer)
        prompt_tokens = _tokenize(engine, plan, prompts)
        primary = primary_energy(discovery, engine.placement(), energy_sensors)
        previous = _previous(destination, campaign_config(plan, prompts), models, primary[0])
        if previous is not None:
            # A resumed campaign keeps the identity (and the shard) its file records.
            same_shard(shard, previous.shard, str(destination.path))
            identity = (CampaignIdentity(previous.campaign_id, previous.shard)
                        if previous.campaign_id else None)
        # Before anything is written: fixtures must never be recorded as measurements.
        assert_publishable(discovery.sensors)
        sampler = Sampler(discovery.sensors, hz=plan.sample_hz) if discovery.sensors else None
        if sampler is not None:
            sampler.start()
    except BaseException:
        discovery.close()
        if engine is not None:
            engine.close()
        raise
    return Campaign(
        experiment, plan, destination, observer, prompts, strategies, engine, models,
        prompt_tokens, previous, sampler, sampler.sensor_infos() if sampler else [],
        list(discovery.unavailable), primary[0], primary[1], identity,
    )


def _check_destination(destination: Destination) -> None:
    out = destination.path
    if not out.parent.is_dir():
        raise UsageProblem(f"{out}: directory {out.parent} does not exist; create it first")
    if destination.resume:
        if not out.exists():
            raise UsageProblem(f"{out}: nothing to resume (file not found)")
    elif out.exists():
        raise UsageProblem(
            f"{out}: already exists; results files are never overwritten. "
            f"Choose another -o, or continue it with --resume {out}"
        )


def _parse_strategies(plan: CampaignPlan) -> dict[str, Strategy]:
    strategies = {
        s: parse_strategy(s, ngram_n_min=plan.ngram_n_min, ngram_n_max=plan.ngram_n_max,
                          ngram_k=plan.ngram_k)
        for s in plan.strategies
    }
    if len(strategies) != len(plan.strategies):
        raise UsageProblem(f"strategy names repeat: {list(plan.strategies)}")
    if any(st.name == "draft" for st in strategies.values()) and not plan.draft:
        raise UsageProblem("draft-k strategies need a draft model: pass --draft")
    return strategies


def _load_models(
    plan: CampaignPlan, strategies: dict[str, Strategy], observer: Observer
) -> tuple[Engine, list[ModelInfo]]:
    say = observer.message
    target = resolve(plan.target, progress=lambda m: say(f"target: {m}"))
    draft: ResolvedModel | None = None
    if plan.draft and any(st.name == "draft" for st in strategies.values()):
        draft = resolve(plan.draft, progress=lambda m: say(f"draft: {m}"))
    say(f"loading {target.path.name}" + (f" + {draft.path.name}" if draft else ""))
    engine = Engine(
        str(target.path),
        str(draft.path) if draft else None,
        n_ctx=plan.n_ctx,
        n_threads=plan.threads,
        n_threads_batch=plan.threads_batch or plan.threads,
    )
    models = [_model_info(engine, "target", target)]
    if draft is not None:
        models.append(_model_info(engine, "draft", draft))
    return engine, models


def _model_info(engine: Engine, role: str, resolved: ResolvedModel) -> ModelInfo:
    meta = engine.model_info(role)
    return ModelInfo.model_validate({
        "role": role,
        "name": resolved.name,
        "source": resolved.source,
        "path": str(resolved.path),
        "size_bytes": resolved.size_bytes,
        "sha256": resolved.sha256,
        "architecture": meta.get("architecture"),
        "quant": meta.get("quant"),
        "n_vocab": meta["n_vocab"],
    })


def _tokenize(
    engine: Engine, plan: CampaignPlan, prompts: list[PromptSpec]
) -> dict[str, list[int]]:
    tokens = {p.name: engine.format_prompt(p.text, chat_template=plan.chat_template)
              for p in prompts}
    for name, toks in tokens.items():
        if len(toks) + plan.tokens > plan.n_ctx:
            raise UsageProblem(
                f"prompt '{name}' has {len(toks)} tokens; with {plan.tokens} to generate "
                f"it needs {len(toks) + plan.tokens} > context {plan.n_ctx}: raise --n-ctx"
            )
    return tokens


def _previous(
    destination: Destination, config: CampaignConfig, models: list[ModelInfo],
    primary: PrimaryEnergy | None,
) -> ResultsFile | None:
    """The interrupted campaign to continue; refused when it is complete or differs."""
    if not destination.resume:
        return None
    previous = load_raw(destination.path)
    if previous.status == "complete":
        raise UsageProblem(
            f"{destination.path}: campaign already complete; results files are immutable"
        )
    diffs = _differences(previous, config, models)
    old = previous.primary_energy
    if (old is not None or previous.primary_energy_reason is not None) and \
            (old.sensors if old else None) != (primary.sensors if primary else None):
        diffs.append(f"primary energy sensors: {old.sensors if old else None} → "
                     f"{primary.sensors if primary else None}")
    if diffs:
        raise UsageProblem(
            f"{destination.path}: cannot resume, the campaign differs: " + "; ".join(diffs)
        )
    return previous


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
