"""A run's sampling settings: None for a greedy run (no temperature factor, or its level 0),
else the temperature level, the plan's truncation and the seed the results file's rule gives
(a re-run takes its slot's seed, so re-running a disturbed run regenerates the same text)."""

from __future__ import annotations

from collections.abc import Mapping

from phase.campaign.plan import CampaignPlan
from phase.campaign.schedule import Rerun, ScheduledRun
from phase.policy.sampling import SamplingSettings
from phase.results import CampaignConfig, Level
from phase.results.levels import run_seed, run_temperature


def sampling_settings(plan: CampaignPlan, config: CampaignConfig, levels: Mapping[str, Level],
                      scheduled: ScheduledRun) -> SamplingSettings | None:
    temperature = run_temperature(config, levels)
    if temperature <= 0:
        return None
    slot = scheduled.of if isinstance(scheduled, Rerun) else scheduled.run_id
    return SamplingSettings(temperature=temperature, top_k=plan.sample_top_k,
                            top_p=plan.sample_top_p, min_p=plan.sample_min_p,
                            seed=run_seed(config.seed, slot))
