"""Confirmation campaigns: the headline's condition measured again on fresh runs.

A headline picked as the best of many conditions is the maximum of many noisy estimates, biased
upward (the winner's curse), and the round that picked it cannot also be its evidence. So the
chosen condition (phase.analysis.selection) and plain decoding at its levels run again, in
alternation, for `pairs` rounds, in a campaign of their own whose file names the selection it
confirms (ResultsFile.confirms: the selection file's id, name and sha256, the rule, how many
conditions it chose among). The note states the confirmation's ratio and interval; the
selection's own ratio is shown beside it for comparison only.

Everything that shapes a run is taken from the selection file (tokens, context, threads, chat
template, proposer and sampler settings, rest between runs), so the two measure the same
thing; the sampling seed is derived afresh, so sampled runs draw new tokens rather than replay
the selection's.

    confirmation_plan(experiment, path, pairs)   the plan, or UsageProblem (exit 2) saying why
                                                 there is nothing to confirm
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from phase.analysis import summarize
from phase.analysis.queries import PLAIN
from phase.analysis.selection import select
from phase.base.errors import UsageProblem
from phase.campaign.experiment import Experiment
from phase.campaign.factors import Factor
from phase.campaign.machine import cpu_model, package_version
from phase.campaign.plan import CampaignPlan
from phase.campaign.prompts import campaign_prompts
from phase.models.sources import EMBEDDED
from phase.results import Confirms, ResultsFile, load_raw
from phase.results.llama_build import enabled_features
from phase.storage.jsonread import read_regular_bytes
from phase.validate import validate_results

# Pairs of fresh runs: 8 give a Student t interval with 7 degrees of freedom (its quantile
# 2.36 against 4.30 at the 3 rounds a campaign plans), at 16 runs of one condition's cost.
PAIRS = 8


def fresh_seed(selection: ResultsFile) -> int:
    """A seed no run of the selection used: derived from its id, so a confirmation is
    reproducible and its sampled runs draw other tokens than the selection's."""
    digest = hashlib.sha256(f"{selection.id}/confirm".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _narrowed(plan: CampaignPlan, levels: Mapping[str, object], source: str
              ) -> tuple[Factor, ...]:
    out = []
    for factor in plan.factors:
        if factor.name not in levels:
            raise UsageProblem(f"{source}: the selection has no level of factor {factor.name}")
        level = levels[factor.name]
        if level not in factor.levels:
            raise UsageProblem(f"{source}: level {level!r} of factor {factor.name} is not one "
                               f"of the experiment's ({', '.join(map(str, factor.levels))})")
        index = factor.levels.index(level)
        out.append(Factor(factor.name, factor.kind, (factor.levels[index],),
                          (factor.label_of(index),)))
    return tuple(out)


def confirmation_plan(experiment: Experiment, path: Path, pairs: int = PAIRS,
                      here: tuple[str | None, ...] | None = None) -> CampaignPlan:
    """The plan that confirms the headline of the campaign in `path`; `here` is this
    machine's CPU model, llama-cpp-python version and llama.cpp system info (default:
    read from it)."""
    source = str(path)
    selection = load_raw(path)
    if selection.confirms is not None:
        raise UsageProblem(f"{source}: this is a confirmation campaign; confirm the campaign it "
                           f"confirms ({selection.confirms.file}) instead")
    if selection.status != "complete":
        raise UsageProblem(f"{source}: the campaign is {selection.status}; finish it first "
                           f"(phase measure {selection.experiment} --resume {source})")
    if selection.experiment != experiment.name:
        raise UsageProblem(f"{source}: a campaign of experiment {selection.experiment}, not "
                           f"{experiment.name}")
    problems = host_problems(selection, *(here or _this_machine()))
    if problems:
        raise UsageProblem(f"{source}: a confirmation must run where the campaign it confirms "
                           f"ran: {'; '.join(problems)}")
    summary = summarize(selection, validate_results(selection, path.name), path.name)
    chosen = select(summary.rows)
    if chosen is None:
        raise UsageProblem(f"{source}: no condition has a speed ratio to plain decoding, so "
                           "there is no headline to confirm")
    config = selection.config
    prompt_fields = _prompt_fields(experiment, selection, chosen.prompt, source)
    data = read_regular_bytes(path)
    confirms = Confirms(
        campaign_id=selection.campaign_id or selection.id, file=path.name,
        sha256=hashlib.sha256(data).hexdigest(), prompt=chosen.prompt,
        strategy=chosen.strategy, factors=chosen.factors, rule=chosen.rule,
        selected_from=chosen.among, selection_speed_ratio=chosen.speed_ratio)
    base = experiment.plan
    sampling = config.sampling
    sample: dict[str, Any] = ({} if sampling is None else {
        "sample_top_k": sampling.top_k, "sample_top_p": sampling.top_p,
        "sample_min_p": sampling.min_p})
    return replace(
        base, **_models(selection),
        **prompt_fields, strategies=(PLAIN, chosen.strategy),
        repeats=pairs, shuffle=False, blocked_by=None, target_half_width=None, extra_runs=None,
        extra_time_s=None, seed=fresh_seed(selection), tokens=config.tokens,
        n_ctx=config.n_ctx, threads=selection.provenance.threads,
        threads_batch=selection.provenance.threads_batch,
        cooldown_s=config.cooldown_s, idle_window_s=config.idle_window_s,
        chat_template=config.chat_template, ngram_n_min=config.ngram_n_min,
        ngram_n_max=config.ngram_n_max, ngram_k=config.ngram_k,
        ngram_adaptive=bool(config.ngram_adaptive),
        auto_objective=config.auto_objective or base.auto_objective,
        factors=_narrowed(base, chosen.factors, source),
        **sample,
        confirms=confirms,
    )


def _prompt_fields(experiment: Experiment, selection: ResultsFile, chosen: str,
                   source: str) -> dict[str, Any]:
    """The plan's prompts for the chosen condition, read where the campaign read them (the
    experiment's files, or its workload) and each checked to be the text it measured: the
    condition's prompt, or for a serving campaign the whole pool its requests drew from, with
    the load as the campaign served it."""
    config = selection.config
    serving = config.serving
    if serving is not None:
        if chosen != serving.pool:
            raise UsageProblem(f"{source}: the chosen condition's prompt {chosen!r} is not the "
                               f"serving pool {serving.pool!r} (config.serving.pool)")
        names = tuple(p.name for p in config.prompts)
    elif any(p.name == chosen for p in config.prompts):
        names = (chosen,)
    else:
        raise UsageProblem(f"{source}: the chosen condition's prompt {chosen!r} is not one of "
                           "the campaign's (config.prompts)")
    workload = config.workload.path or config.workload.name if config.workload else None
    current, _ = campaign_prompts(experiment.prompts_dir, names, workload)
    recorded = {p.name: p.text for p in config.prompts}
    changed = [p.name for p in current if recorded.get(p.name) != p.text]
    if changed:
        where = f"workload {workload}" if workload else str(experiment.prompts_dir)
        raise UsageProblem(f"{source}: the text of prompt(s) {', '.join(changed)} in {where} is "
                           "not the one the campaign measured; a confirmation must measure the "
                           "same prompts")
    fields: dict[str, Any] = {"prompts": names, "workload": workload}
    if serving is not None:
        target = serving.latency_target
        fields.update(
            serving_requests=serving.requests, serving_request_rate=serving.request_rate,
            serving_pool=serving.pool, serving_steady_b=serving.steady_state_b,
            serving_ttft_s=target.ttft_s if target else None,
            serving_tpot_s=target.tpot_s if target else None,
            serving_e2e_s=target.e2e_s if target else None)
    return fields


def _model(results: ResultsFile, role: str) -> str | None:
    """The selection's model: an embedded model by its name (fetched and checked by sha256 as
    any campaign does, and recorded under the same name), else its file where it is still
    there, else its name."""
    found = next((m for m in results.models if m.role == role and m.level is None), None)
    if found is None:
        return None
    embedded = EMBEDDED.get(found.name)
    if embedded is not None and embedded.sha256 == found.sha256:
        return found.name
    return found.path if Path(found.path).is_file() else found.name


def _models(selection: ResultsFile) -> dict[str, Any]:
    target = _model(selection, "target")
    if target is None:
        raise UsageProblem(f"{selection.id}: the campaign records no target model")
    return {"target": target, "draft": _model(selection, "draft")}


def _this_machine() -> tuple[str | None, ...]:
    from phase.decode.backend import system_info  # loads llama.cpp: only when confirming

    return cpu_model(), package_version("llama_cpp_python"), system_info()


def host_problems(selection: ResultsFile, cpu: str | None, binding: str | None,
                  system_info: str | None = None) -> list[str]:
    """Why this machine cannot confirm the selection, known before any model loads: another
    CPU, another llama-cpp-python, or llama.cpp built with other CPU kernels (AMX on one
    side only: other code runs); the site compares the rest of the build afterwards."""
    p = selection.provenance
    out = []
    if None not in (cpu, p.cpu_model) and p.cpu_model != cpu:
        out.append(f"this machine's CPU is {cpu}, the campaign's was {p.cpu_model}")
    if binding is not None and p.llama_cpp_python_version not in (None, binding):
        out.append(f"llama-cpp-python {binding} here, {p.llama_cpp_python_version} there")
    if system_info is not None and p.llama_cpp_system_info is not None:
        here, there = set(enabled_features(system_info)), set(enabled_features(
            p.llama_cpp_system_info))
        if here != there:
            only = [f"{', '.join(sorted(a - b))} {where}" for a, b, where in (
                (here, there, "here only"), (there, here, "there only")) if a - b]
            out.append(f"llama.cpp's CPU kernels differ ({'; '.join(only)}); rebuild it as the "
                       "campaign's was (make setup ACCEL=cpu or ACCEL=cpu-noamx)")
    return out
