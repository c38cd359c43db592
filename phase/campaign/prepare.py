"""Preparing a campaign: every check that can fail, before a model loads or anything is written.

In order, each refusal exit 2 with nothing written: the results file is claimed (locked
against a second writer; a new one must not exist, a resumed one must be an unfinished,
writable file), prompts and strategies are parsed, the models are resolved (sha256, no
loading), the prompts are tokenized with the vocabulary alone and checked against the context,
a draft's vocabulary against the target's, the sensors are checked and started, and a resumed
file's measurement identity is compared with this campaign's. Only then do the weights load;
the few facts that need them are compared once more after loading.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phase.base.errors import UsageProblem
from phase.campaign.experiment import Experiment
from phase.campaign.factors import check_factors, check_runnable, check_threads, largest
from phase.campaign.header import header_before_load, with_engine_facts
from phase.campaign.identity import differences
from phase.campaign.model_levels import (
    ModelLevels,
    check_levels,
    load_levels,
    model_info,
    resolve_levels,
    with_estimate,
)
from phase.campaign.plan import CampaignPlan
from phase.campaign.plan_check import check_plan
from phase.campaign.prompts import campaign_prompts
from phase.campaign.runner import Campaign, Destination, Observer, QuietObserver
from phase.campaign.sensing import primary_energy
from phase.campaign.serving_plan import (
    check_serving_fit,
    check_serving_plan,
    check_serving_shard,
)
from phase.campaign.shards import CampaignIdentity, ShardRequest, identify, same_shard
from phase.costmodel import OBJECTIVES
from phase.decode import Engine
from phase.decode.cores import check_thread_counts, usable_cpus
from phase.decode.template import format_prompt
from phase.decode.vocab import check_compatible
from phase.decode.vocab_file import VocabFile, check_fit
from phase.models.sources import ResolvedModel, resolve
from phase.policy.strategies import Strategy, parse_strategy
from phase.results import (
    ModelInfo,
    PromptSpec,
    ResultsFile,
    claim_new_results,
    load_raw,
)
from phase.sensors import Discovery, Sampler, assert_publishable
from phase.storage.claim import Claim, claim_existing, claim_numbered


@dataclass
class _Held:
    """What prepare has opened so far, closed again if a later check fails."""

    claim: Claim | None = None
    sampler: Sampler | None = None
    engine: Engine | None = None
    levels: ModelLevels | None = None

    def close(self, discovery: Discovery) -> None:
        if self.levels is not None:
            self.levels.close()
        if self.engine is not None:
            self.engine.close()
        if self.sampler is not None:
            self.sampler.close()
        else:
            discovery.close()
        if self.claim is not None:
            self.claim.release()


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
    """Run every check (see the module docstring), load the models, choose the primary energy
    sensors for where llama.cpp put the model (or take `energy_sensors`), start sampling
    `discovery`'s sensors. Raises on bad input (exit 2, nothing written); whatever was opened
    (the file's claim, the sensors, the models) is closed on any failure.

    `shard` runs one part of the plan (phase.campaign.shards); `job_id` (id, source) goes into
    the campaign id that every shard of one campaign shares; a resumed campaign keeps the id
    and shard its file records. Long because it is the one ordered list of checks: split, the
    order (everything before `Engine(...)`) would no longer be visible in one place."""
    observer = observer or QuietObserver()
    held = _Held()
    check_plan(plan, "plan")  # a library caller's plan too: refused before the file is claimed
    check_serving_shard(plan, shard)
    try:
        held.claim = claim = _claim(destination)
        previous = _previous(destination, claim)
        identity: CampaignIdentity | None = identify(experiment.name, plan, shard, job_id)
        if previous is not None:
            same_shard(shard, previous.shard, str(claim.path))
            identity = (CampaignIdentity(previous.campaign_id, previous.shard)
                        if previous.campaign_id else None)
        _check_factors(plan)
        prompts, workload = campaign_prompts(experiment.prompts_dir, plan.prompts, plan.workload)
        strategies = _parse_strategies(plan)
        target, draft = _resolve_models(plan, strategies, observer)
        prompt_tokens, models = _check_vocabularies(plan, prompts, target, draft)
        check_serving_plan(plan, prompts, workload)
        sequences = check_serving_fit(plan, prompt_tokens, largest(plan.factors, "tokens",
                                                                   plan.tokens))
        held.levels = levels = resolve_levels(plan.factors, observer.message)
        models += check_levels(levels, prompts, prompt_tokens, target, plan.chat_template)
        if plan.measure_bandwidth:
            models = [with_estimate(m) for m in models]
        # Before anything is written: fixtures must never be recorded as measurements.
        assert_publishable(discovery.sensors)
        _check_objective(plan, strategies, discovery)
        if discovery.sensors:
            held.sampler = Sampler(discovery.sensors, hz=plan.sample_hz)
            held.sampler.start()
        header = header_before_load(
            experiment, plan, claim.path, prompts, models,
            held.sampler.sensor_infos() if held.sampler else [], list(discovery.unavailable),
            identity, workload)
        _refuse_differences(previous, header, loaded=False)
        observer.message(f"loading {target.path.name}" + (f" + {draft.path.name}" if draft else ""))
        held.engine = Engine(str(target.path), str(draft.path) if draft else None,
                             n_ctx=plan.n_ctx, n_threads=plan.threads,
                             n_threads_batch=plan.threads_batch or plan.threads,
                             n_seq_max=sequences)
        load_levels(levels, draft, plan.n_ctx, plan.threads, plan.threads_batch,
                    observer.message)
        header = with_engine_facts(
            header, held.engine, primary_energy(discovery, held.engine.placement(), energy_sensors))
        _refuse_differences(previous, header, loaded=True)
    except BaseException:
        held.close(discovery)
        raise
    assert held.engine is not None
    return Campaign(
        experiment, plan, destination, observer, prompts, strategies, held.engine, models,
        prompt_tokens, previous or header, previous is not None, held.sampler, claim, identity,
        levels.engines,
    )


def _check_factors(plan: CampaignPlan) -> None:
    """A plan's extra factors: well declared, and of kinds the runner applies."""
    check_factors(plan.factors, "plan factors")
    names = [f.name for f in plan.factors]
    if plan.blocked_by is not None and plan.blocked_by not in names:
        allowed = " or ".join([repr(n) for n in names] + ["None"])
        raise UsageProblem(f"plan.blocked_by (--blocked-by): {plan.blocked_by!r} is not a "
                           f"factor of this plan; allowed: {allowed}")
    check_runnable(plan.factors)
    check_threads(plan.factors, usable_cpus())
    check_thread_counts([plan.threads], "threads (--threads)")
    check_thread_counts([plan.threads_batch], "threads_batch")


def _check_objective(plan: CampaignPlan, strategies: dict[str, Strategy],
                     discovery: Discovery) -> None:
    """auto's energy objective needs energy per pass, so a sensor to read it from."""
    if plan.auto_objective != "energy" or not any(s.family.needs_profile
                                                  for s in strategies.values()):
        return
    if not discovery.sensors:
        why = "; ".join(f"{u.backend}: {u.reason}" for u in discovery.unavailable)
        raise UsageProblem("--objective energy needs an energy sensor and none was found"
                           + (f" ({why})" if why else "") + "; use --objective time")


def _claim(destination: Destination) -> Claim:
    if destination.resume:
        return claim_existing(destination.path)
    if destination.numbered:
        return claim_numbered(destination.path)
    return claim_new_results(destination.path)


def _previous(destination: Destination, claim: Claim) -> ResultsFile | None:
    """The interrupted campaign to continue (read under its claim); a complete one is refused."""
    if not destination.resume:
        return None
    previous = load_raw(claim.path)
    if previous.status == "complete":
        raise UsageProblem(f"{claim.path}: campaign already complete; results files are immutable")
    return previous


def _refuse_differences(previous: ResultsFile | None, header: ResultsFile, *,
                        loaded: bool) -> None:
    if previous is None:
        return
    diffs = differences(previous, header, loaded=loaded)
    if diffs:
        raise UsageProblem(
            f"{header.id}.json: cannot resume, the campaign differs from the one in the file "
            f"(nothing was written): {'; '.join(diffs)}"
        )


def _parse_strategies(plan: CampaignPlan) -> dict[str, Strategy]:
    strategies = {
        s: parse_strategy(s, ngram_n_min=plan.ngram_n_min, ngram_n_max=plan.ngram_n_max,
                          ngram_k=plan.ngram_k, ngram_adaptive=plan.ngram_adaptive)
        for s in plan.strategies
    }
    if plan.max_passes < 1:
        raise UsageProblem(f"max_passes must be >= 1, not {plan.max_passes}")
    if len(strategies) != len(plan.strategies):
        raise UsageProblem(f"strategy names repeat: {list(plan.strategies)}")
    if any(st.family.needs_draft for st in strategies.values()) and not plan.draft:
        raise UsageProblem("draft-k strategies need a draft model: pass --draft")
    if any(st.family.needs_profile for st in strategies.values()) and not plan.profile:
        raise UsageProblem("auto decides with the cost profile: leave profiling on "
                           "(drop --no-profile) or leave auto out of --strategies")
    if plan.auto_objective not in OBJECTIVES:
        raise UsageProblem(f"auto objective must be one of {', '.join(OBJECTIVES)}, "
                           f"not {plan.auto_objective!r}")
    return strategies


def _resolve_models(plan: CampaignPlan, strategies: dict[str, Strategy],
                    observer: Observer) -> tuple[ResolvedModel, ResolvedModel | None]:
    """The model files, fetched and verified (sha256) but not loaded."""
    say = observer.message
    target = resolve(plan.target, progress=lambda m: say(f"target: {m}"))
    draft: ResolvedModel | None = None
    # auto drafts too where drafting pays, so it loads the draft model when there is one.
    if plan.draft and any(st.family.uses_draft for st in strategies.values()):
        draft = resolve(plan.draft, progress=lambda m: say(f"draft: {m}"))
    return target, draft


def _check_vocabularies(
    plan: CampaignPlan, prompts: list[PromptSpec], target: ResolvedModel,
    draft: ResolvedModel | None,
) -> tuple[dict[str, list[int]], list[ModelInfo]]:
    """With the vocabularies alone: every prompt's tokens (each checked against the context),
    the draft's vocabulary against the target's, and what the results file records of each
    model."""
    with VocabFile(target.path) as vocab:
        tokens = {p.name: format_prompt(vocab, p.text, chat_template=plan.chat_template)
                  for p in prompts}
        # The longest context fill and token count any run has (its extra factors' levels).
        fill, longest = largest(plan.factors, "context_fill", 0), \
            largest(plan.factors, "tokens", plan.tokens)
        for name, toks in tokens.items():
            check_fit(len(toks) + fill, longest, plan.n_ctx, what=f"prompt '{name}'"
                      + (f" after {fill} tokens of context fill" if fill else ""))
        models = [model_info("target", target, vocab)]
        if draft is not None:
            with VocabFile(draft.path) as draft_vocab:
                check_compatible(vocab.vocab_info(), draft_vocab.vocab_info(),
                                 names=(target.path.name, draft.path.name))
                models.append(model_info("draft", draft, draft_vocab))
    return tokens, models
