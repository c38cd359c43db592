"""Experiments: `experiments/<name>.py` declares `EXPERIMENT = Experiment(...)` with its plan.

An experiment file parses no arguments. `phase measure <name>` and `python experiments/<name>.py`
both load the declaration and run it through the same command (phase.cli.measure).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from phase import REPO_ROOT
from phase.analysis.declared import declared_experiment
from phase.base.errors import UsageProblem
from phase.campaign.factors import Factor, check_factors
from phase.campaign.plan import CampaignPlan

if TYPE_CHECKING:  # named only: the experiment file builds its question
    from phase.analysis.rules import Question

EXPERIMENTS_DIR = REPO_ROOT / "experiments"


@dataclass(frozen=True)
class Experiment:
    """`name` names the results files (`<name>-<host class>-<date>.json`); `note` is the note
    the campaign feeds; `quick` is the smoke campaign (`--quick`), written under
    results/quick/, which the site does not publish; `factors` are what varies besides the
    prompt and the strategy (phase.campaign.factors), copied into both plans; `question` is
    what the campaign asks and the rule, with its thresholds, that answers it from the data
    (phase.analysis.rules): its note's title and findings are the rule's outcome."""

    name: str
    note: str | None
    description: str
    prompts_dir: Path
    plan: CampaignPlan
    quick: CampaignPlan | None = None
    factors: tuple[Factor, ...] = ()
    question: Question | None = None

    def __post_init__(self) -> None:
        factors = check_factors(self.factors, f"experiment {self.name}: factors")
        if factors:
            object.__setattr__(self, "plan", replace(self.plan, factors=factors))
            if self.quick is not None:
                object.__setattr__(self, "quick", replace(self.quick, factors=factors))
        # A quick plan is a smoke test whatever its file says, so every way of running it
        # (the CLI's --quick, a library caller, a resume) records the same purpose.
        if self.quick is not None and self.quick.purpose != "smoke":
            object.__setattr__(self, "quick", replace(self.quick, purpose="smoke"))

    def quick_plan(self) -> CampaignPlan | None:
        return self.quick


def load_experiment(name: str, directory: Path = EXPERIMENTS_DIR) -> Experiment:
    path = directory / f"{name}.py"
    if not path.is_file():
        known = ", ".join(known_experiments(directory)) or "none"
        raise UsageProblem(f"unknown experiment '{name}': known are {known}")
    found = _declared(path)
    if found is None:
        raise UsageProblem(f"{path} declares no `EXPERIMENT = Experiment(...)`; it is not a "
                           "phase experiment")
    return found


def known_experiments(directory: Path = EXPERIMENTS_DIR) -> list[str]:
    """Names of the files in `directory` that declare an experiment."""
    return [p.stem for p in sorted(directory.glob("*.py"))
            if not p.stem.startswith("_") and _declared(p) is not None]


def _declared(path: Path) -> Experiment | None:
    found = declared_experiment(path, "phase_experiment")
    return found if isinstance(found, Experiment) else None
