"""What a campaign does once before its measured runs, after the plain references: check the
machine is quiet, measure the cost profile, and size the energy window every run decodes to.
Each step records what it finds in the file being written, and a resumed campaign keeps what
its earlier runs were measured with."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from phase.campaign import profiling, windows
from phase.campaign.disturbance import quiet_check
from phase.campaign.plan import CampaignPlan
from phase.campaign.references import RefKey, first_per_prompt
from phase.decode import Engine
from phase.policy.strategies import Strategy
from phase.results import (
    CampaignWriter,
    PlainReference,
    PromptSpec,
    ShardInfo,
    UnavailableBackend,
)
from phase.sensors import Sampler
from phase.sensors.nvidia.gpu_activity import describe as describe_gpu
from phase.sensors.nvidia.gpu_activity import gpu_activity

Message = Callable[[str], None]


def warn_if_busy(plan: CampaignPlan, sampler: Sampler | None, message: Message) -> None:
    """Warn (pyperf's `system show` is the model) when other work already keeps the
    machine busy: its runs would be disturbed and re-run, or their figures shifted."""
    if plan.quiet_check_s <= 0:
        return
    found = quiet_check(plan.quiet_check_s)
    warning = found.warning(plan.disturbed_load)
    if warning is not None:
        message(warning)
    busy_gpu = describe_gpu(gpu_activity(sampler.sensors) if sampler else None)
    if busy_gpu is not None:
        message(f"the GPU is not quiet before the campaign: {busy_gpu}. "
                "Runs it keeps busy are re-run.")


def cost_profile(writer: CampaignWriter, refs: dict[RefKey, PlainReference], *,
                 plan: CampaignPlan, engine: Engine, prompt_tokens: Mapping[str, list[int]],
                 strategies: Mapping[str, Strategy], sampler: Sampler | None,
                 unavailable: list[UnavailableBackend], message: Message) -> None:
    """Measure the cost profile once per file (a resumed campaign keeps the one its
    earlier runs were decided with), and hand it to `auto`."""
    if not plan.profile:
        return
    profile = writer.results.profile
    if profile is None:
        message("cost profile: timing target and draft passes of 1..17 tokens")
        profile = profiling.measure(engine, plan, prompt_tokens, first_per_prompt(refs),
                                    sampler, unavailable)
        writer.results.profile = profile  # written with the first run
        message(profiling.summary_line(profile))
    if any(s.family.needs_profile for s in strategies.values()):
        primary = writer.results.primary_energy
        engine.use_profile(profile, plan.auto_objective,
                           primary.sensors if primary is not None else None)


def size_windows(writer: CampaignWriter, plain_s: dict[str, float], *, plan: CampaignPlan,
                 resumed: bool, prompts: Sequence[PromptSpec],
                 prompt_tokens: Mapping[str, list[int]], shard: ShardInfo | None,
                 strategies: Mapping[str, Strategy], message: Message
                 ) -> tuple[windows.WindowSize, list[windows.PlannedWindow]]:
    """The energy window every run decodes to (phase.campaign.windows), recorded in the
    file's config, and each condition's expected passes. A resumed file keeps its window."""
    results = writer.results
    size = windows.size_window(results.sensors, results.primary_energy,
                               enabled=plan.size_windows)
    config = results.config
    if resumed and config.window_min_s is not None:
        size = windows.WindowSize(config.window_min_s, config.window_min_reason or "",
                                  size.align_to, size.needs)
    results.config = config.model_copy(update={
        "window_min_s": size.min_s,
        "window_min_reason": size.reason,
    })
    lengths = {p.name: len(prompt_tokens[p.name]) for p in prompts
               if shard is None or p.name in shard.prompts}
    planned = windows.plan_windows(size, strategies, lengths, plan.tokens, plan.max_passes,
                                   results.profile, plain_s)
    for line in windows.table_lines(size, planned):
        message(line)
    return size, planned
