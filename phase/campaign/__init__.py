"""Campaigns: prompts × strategies × repeats, shuffled, sampled, saved run by run.

    plan        CampaignPlan: every setting and its default, once (DEFAULT_PLAN)
    experiment  Experiment: what experiments/<name>.py declares; loading it
    prompts     prompt files and their includes
    schedule    the shuffled order of runs
    sensing     which sensors to read (SensorOptions) and the sampler-window adapter
    header      the results-file header, built before the models load
    identity    what makes two campaigns the same measurement (what --resume compares)
    prepare     every check that can fail, before a model loads or anything is written
    runner      the campaign and its steps in order (Campaign): opening (quiet check, cost
                profile, window size), loop (repeats, re-runs, extra rounds), reruns (which
                runs are disturbed), recording (execute, judge, write) and execute (one run)
    destination where a campaign writes (Destination, default_output)
    observer    what a front end is told as the campaign goes (Observer)
    machine     provenance: the machine and software a campaign ran on; host class identity
    shards      one part of a plan per machine (--shard I/N or a scheduler's array index)
    merge       the shards of one campaign -> one results file (checks in merge_checks)
    ui          the terminal's progress bar and closing table (rich, no click)

The names below are looked up on first use (PEP 562), not imported with the package: the
runner and prepare load llama.cpp, which `phase sensors`, `phase merge` and a `phase measure`
refused on its options never need (tests/test_cli_lazy.py checks they start without it).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from phase.base.lazy import exports

if TYPE_CHECKING:
    from phase.campaign.destination import Destination, default_output
    from phase.campaign.experiment import (
        EXPERIMENTS_DIR,
        Experiment,
        known_experiments,
        load_experiment,
    )
    from phase.campaign.factors import Factor
    from phase.campaign.observer import Observer, QuietObserver
    from phase.campaign.plan import DEFAULT_PLAN, CampaignPlan, campaign_config
    from phase.campaign.prepare import prepare
    from phase.campaign.prompts import load_prompt, load_prompts
    from phase.campaign.runner import Campaign, CampaignFailed
    from phase.campaign.schedule import ScheduledRun, schedule
    from phase.campaign.sensing import SensorOptions, discover_sensors

# name -> the submodule that defines it
_WHERE = {
    "EXPERIMENTS_DIR": "experiment", "Experiment": "experiment",
    "known_experiments": "experiment", "load_experiment": "experiment",
    "DEFAULT_PLAN": "plan", "CampaignPlan": "plan", "campaign_config": "plan",
    "prepare": "prepare", "Factor": "factors",
    "load_prompt": "prompts", "load_prompts": "prompts",
    "Campaign": "runner", "CampaignFailed": "runner",
    "Destination": "destination", "default_output": "destination",
    "Observer": "observer", "QuietObserver": "observer",
    "ScheduledRun": "schedule", "schedule": "schedule",
    "SensorOptions": "sensing", "discover_sensors": "sensing",
}


__getattr__, __dir__ = exports(__name__, _WHERE)


class _Package(types.ModuleType):
    """Keeps `prepare` and `schedule` the functions: the import system sets a submodule as an
    attribute of its package once it loads, and these two share their module's name (the
    eager imports this file used to make bound the function after the module)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if (name in _WHERE and isinstance(value, types.ModuleType)
                and value.__name__ == f"{self.__name__}.{name}"):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


# Every name of the table, and nothing else (tests/test_lazy_exports.py checks the three agree).
__all__ = sorted(_WHERE)
