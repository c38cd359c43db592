"""Campaigns: prompts × strategies × repeats, shuffled, sampled, saved run by run.

    plan        CampaignPlan: every setting and its default, once (DEFAULT_PLAN)
    experiment  Experiment: what experiments/<name>.py declares; loading it
    prompts     prompt files and their includes
    schedule    the shuffled order of runs
    sensing     which sensors to read (SensorOptions) and the sampler-window adapter
    prepare     every check that can fail before anything is written -> a Campaign
    runner      run -> write, run by run (Campaign, Destination, Observer)
    machine     provenance: the machine and software a campaign ran on; host class identity
    shards      one part of a plan per machine (--shard I/N or a scheduler's array index)
    merge       the shards of one campaign -> one results file (checks in merge_checks)
    ui          the terminal's progress bar and closing table (rich, no click)
"""

from phase.campaign.experiment import (
    EXPERIMENTS_DIR,
    Experiment,
    known_experiments,
    load_experiment,
)
from phase.campaign.plan import DEFAULT_PLAN, CampaignPlan, campaign_config
from phase.campaign.prepare import prepare
from phase.campaign.prompts import load_prompt, load_prompts
from phase.campaign.runner import (
    Campaign,
    CampaignFailed,
    Destination,
    Observer,
    QuietObserver,
    default_output,
)
from phase.campaign.schedule import ScheduledRun, schedule
from phase.campaign.sensing import SensorOptions, discover_sensors

__all__ = [
    "DEFAULT_PLAN",
    "EXPERIMENTS_DIR",
    "Campaign",
    "CampaignFailed",
    "CampaignPlan",
    "Destination",
    "Experiment",
    "Observer",
    "QuietObserver",
    "ScheduledRun",
    "SensorOptions",
    "campaign_config",
    "default_output",
    "discover_sensors",
    "known_experiments",
    "load_experiment",
    "load_prompt",
    "load_prompts",
    "prepare",
    "schedule",
]
