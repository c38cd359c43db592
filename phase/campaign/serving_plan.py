"""A serving study's plan: what the results file records of its load (config.serving) and the
checks a plan with a `concurrency` factor must pass before anything is written.

A serving run decodes up to `concurrency` requests together in one context whose KV buffer all of
them share (phase.decode.batched), so the campaign's engine is built for the largest level
(`n_seq_max`) and its `n_ctx` must hold that many requests at their longest at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from phase.base.errors import UsageProblem
from phase.campaign.factors import Factor
from phase.policy.auto import K_MAX
from phase.results import PromptSpec, WorkloadRecord
from phase.results.config import CampaignConfig
from phase.results.levels import level_of
from phase.results.names import is_clean_name
from phase.results.serving import LatencyTargetRecord, ServingConfig
from phase.serving.metrics import LatencyTarget
from phase.serving.records import ClosedLoop, OpenLoop


class CampaignPlan(Protocol):
    """The plan's fields this module reads. A protocol, not phase.campaign.plan's class:
    the plan imports this module, and even a type-only import back would close a cycle."""

    @property
    def factors(self) -> tuple[Factor, ...]: ...
    @property
    def n_ctx(self) -> int: ...
    @property
    def serving_requests(self) -> int: ...
    @property
    def serving_request_rate(self) -> float | None: ...
    @property
    def serving_pool(self) -> str | None: ...
    @property
    def serving_steady_b(self) -> int | None: ...
    @property
    def serving_ttft_s(self) -> float | None: ...
    @property
    def serving_tpot_s(self) -> float | None: ...
    @property
    def serving_e2e_s(self) -> float | None: ...

# Factor kinds a serving run cannot apply: a model level's engine holds one sequence, a
# context fill and sampling are not part of the batched runs yet.
_NOT_WITH_CONCURRENCY = ("model", "context_fill", "temperature")


def concurrency_factor(factors: Sequence[Factor]) -> Factor | None:
    return next((f for f in factors if f.kind == "concurrency"), None)


def is_serving(config: CampaignConfig) -> bool:
    """Whether the file's runs are serving runs (schema 14: config.serving is set)."""
    return config.serving is not None


def pool_name(plan: CampaignPlan, prompts: Sequence[PromptSpec],
              workload: WorkloadRecord | None) -> str:
    """What serving runs name the set they draw from: the plan's `serving_pool`, else the
    workload's name and how many of its prompts (`humaneval-16`), else `prompts-N`."""
    if plan.serving_pool is not None:
        return plan.serving_pool
    return f"{workload.name if workload else 'prompts'}-{len(prompts)}"


def serving_config(plan: CampaignPlan, prompts: Sequence[PromptSpec],
                   workload: WorkloadRecord | None) -> ServingConfig | None:
    """config.serving for a plan with a concurrency factor, else None. B defaults to the
    largest concurrency: each run's B is min(B, its concurrency) (run_steady_b)."""
    factor = concurrency_factor(plan.factors)
    if factor is None:
        return None
    b = plan.serving_steady_b or max(int(level) for level in factor.levels)
    bounds = (plan.serving_ttft_s, plan.serving_tpot_s, plan.serving_e2e_s)
    target = None if all(v is None for v in bounds) else LatencyTargetRecord(
        ttft_s=bounds[0], tpot_s=bounds[1], e2e_s=bounds[2])
    rate = plan.serving_request_rate
    return ServingConfig(load="closed" if rate is None else "open", request_rate=rate,
                         requests=plan.serving_requests, steady_state_b=b,
                         pool=pool_name(plan, prompts, workload), latency_target=target,
                         order_seed="load")


def load_of_run(config: CampaignConfig, concurrency: int, max_new_tokens: int,
             seed: int) -> ClosedLoop | OpenLoop:
    """The load a serving run puts on its decoder: config.serving's loop at the run's
    concurrency (an open loop's cap)."""
    serving = config.serving
    assert serving is not None
    if serving.load == "open":
        return OpenLoop(serving.request_rate, serving.requests, max_new_tokens, seed,
                        max_concurrency=concurrency)
    return ClosedLoop(concurrency, serving.requests, max_new_tokens, seed)


def latency_target(config: CampaignConfig) -> LatencyTarget | None:
    """The target the run's goodput counts against (None: the file states none)."""
    record = config.serving.latency_target if config.serving is not None else None
    if record is None:
        return None
    return LatencyTarget(ttft_s=record.ttft_s, tpot_s=record.tpot_s, e2e_s=record.e2e_s)


def run_concurrency(config: CampaignConfig, levels: Mapping[str, object]) -> int:
    """A serving run's concurrency: its level of the concurrency factor."""
    level = level_of(config, levels, "concurrency")  # type: ignore[arg-type]
    if level is None:
        raise UsageProblem("config.factors: a serving run needs a factor of kind "
                           "'concurrency'; declare one")
    return int(level)


def run_steady_b(config: CampaignConfig, concurrency: int) -> int:
    """B of a run's steady-state window: config.serving.steady_state_b, at most the run's
    concurrency (a batch of c fills after c first tokens)."""
    assert config.serving is not None
    return min(config.serving.steady_state_b, concurrency)


def check_serving_plan(plan: CampaignPlan, prompts: Sequence[PromptSpec],
                       workload: WorkloadRecord | None) -> None:
    """A concurrency factor's plan: no factor its runs cannot apply, a pool name that is no
    prompt's (runs carry it as their prompt, and their ids name it)."""
    factor = concurrency_factor(plan.factors)
    if factor is None:
        if plan.serving_request_rate is not None:
            raise UsageProblem("plan.serving_request_rate: a request rate loads a serving "
                               "study; this plan has no factor of kind 'concurrency'; allowed: "
                               "no rate (--request-rate applies to serving experiments only)")
        return
    clash = [f"{f.name} ({f.kind})" for f in plan.factors if f.kind in _NOT_WITH_CONCURRENCY]
    if clash:
        raise UsageProblem(f"plan factors: {', '.join(clash)} cannot vary with a concurrency "
                           f"factor; allowed with it: threads, tokens, custom")
    pool = pool_name(plan, prompts, workload)
    if pool in {p.name for p in prompts} or not is_clean_name(pool):
        raise UsageProblem(f"plan.serving_pool: {pool!r} is a prompt's name or holds a control "
                           "character; allowed: a clean name no prompt has (runs carry it as "
                           "their prompt)")


def check_serving_fit(plan: CampaignPlan, prompt_tokens: Mapping[str, Sequence[int]],
                      tokens: int) -> int:
    """The sequences the engine needs (the largest concurrency, 1 without one), after
    checking that that many of the longest requests, each with a full proposal on top, fit
    the shared context `plan.n_ctx`."""
    factor = concurrency_factor(plan.factors)
    if factor is None:
        return 1
    most = max(int(level) for level in factor.levels)
    longest = max(len(t) for t in prompt_tokens.values())
    need = most * (longest + tokens + K_MAX + 1)
    if need > plan.n_ctx:
        raise UsageProblem(
            f"plan.n_ctx: {plan.n_ctx} tokens cannot hold {most} requests at once of up to "
            f"{longest} prompt + {tokens} generated tokens (and a proposal): {need} needed; "
            f"allowed: n_ctx >= {need} (--n-ctx), or lower concurrency levels")
    return most


def check_serving_shard(plan: CampaignPlan, shard: object | None) -> None:
    """A serving campaign runs on one machine: its every run serves the whole pool, so the
    split by whole prompts that shards use does not apply to it (yet)."""
    if shard is not None and concurrency_factor(plan.factors) is not None:
        raise UsageProblem("--shard: a serving campaign (a concurrency factor) is not sharded; "
                           "allowed: run it whole on one machine (drop --shard)")
