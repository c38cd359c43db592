"""Experiments: `experiments/<name>.py` declares `EXPERIMENT = Experiment(...)` with its plan.

An experiment file parses no arguments. `phase measure <name>` (or `phase measure FILE.py`) and
`python experiments/<name>.py` both load the declaration here and run it through the same
command (phase.cli.measure). A declaration that cannot be run (a setting or factor out of its
range, a misspelt setting, any error while the file runs) is refused while loading, before
anything is written: one UsageProblem naming the file, the field and what it allows.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from phase import REPO_ROOT
from phase.analysis.declared import declared_experiment
from phase.base.errors import UsageProblem
from phase.campaign.factors import Factor, check_factors
from phase.campaign.plan import CampaignPlan
from phase.campaign.plan_check import check_plan

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
        for name, kind in (("plan", CampaignPlan), ("quick", (CampaignPlan, type(None)))):
            if not isinstance(getattr(self, name), kind):
                raise UsageProblem(f"{name}: {getattr(self, name)!r} is not a plan; allowed: "
                                   "replace(DEFAULT_PLAN, ...)")
        factors = check_factors(self.factors, "factors")
        if factors:
            object.__setattr__(self, "plan", replace(self.plan, factors=factors))
            if self.quick is not None:
                object.__setattr__(self, "quick", replace(self.quick, factors=factors))
        # A quick plan is a smoke test whatever its file says, so every way of running it
        # (the CLI's --quick, a library caller, a resume) records the same purpose.
        if self.quick is not None and self.quick.purpose != "smoke":
            object.__setattr__(self, "quick", replace(self.quick, purpose="smoke"))
        check_plan(self.plan, "plan")
        if self.quick is not None:
            check_plan(self.quick, "quick")

    def quick_plan(self) -> CampaignPlan | None:
        return self.quick


def load_experiment(name: str, directory: Path = EXPERIMENTS_DIR) -> Experiment:
    """The experiment `name` declares in `directory`, or the one the file `name` (a path
    ending .py) declares."""
    path = Path(name) if name.endswith(".py") else directory / f"{name}.py"
    if not path.is_file():
        known = ", ".join(known_experiments(directory)) or "none"
        where = f"{path}: no such file" if name.endswith(".py") else f"unknown experiment '{name}'"
        raise UsageProblem(f"{where}: known are {known}, or give the path of a .py file")
    found = load_declared(path)
    if found is None:
        raise UsageProblem(f"{path} declares no `EXPERIMENT = Experiment(...)`; it is not a "
                           "phase experiment")
    return found


def known_experiments(directory: Path = EXPERIMENTS_DIR) -> list[str]:
    """Names of the files in `directory` that declare an experiment."""
    out = []
    for p in sorted(directory.glob("*.py")):
        if p.stem.startswith("_"):
            continue
        try:
            if load_declared(p) is not None:
                out.append(p.stem)
        except UsageProblem:
            out.append(p.stem)  # declares one, if wrongly: loading it says what is wrong
    return out


def load_declared(path: Path) -> Experiment | None:
    """The Experiment the file declares, None where it declares none. Whatever goes wrong
    while the file runs is one UsageProblem `<file>: <field or line>: <what>; allowed: ...`:
    a refused setting or factor, pydantic's or Python's own error (a misspelt setting is
    `replace()`'s TypeError), never a traceback."""
    try:
        found = declared_experiment(path, "phase_experiment")
    except UsageProblem as exc:
        raise UsageProblem(f"{path}: {exc}") from None
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        place = ".".join(str(p) for p in first["loc"]) or exc.title
        raise UsageProblem(f"{path}: {exc.title}.{place}: {first['input']!r}: {first['msg']}; "
                           f"allowed: {_expected(first)}") from None
    except Exception as exc:
        raise UsageProblem(f"{path}: line {_line_in(path, exc)}: {type(exc).__name__}: {exc}; "
                           f"allowed: {_allowed_for(exc)}") from None
    return found if isinstance(found, Experiment) else None


# What pydantic's error types without a context allow, in words.
_TYPES = {"string_type": "text", "int_type": "a whole number", "int_parsing": "a whole number",
          "int_from_float": "a whole number", "float_type": "a number",
          "float_parsing": "a number", "bool_type": "True or False", "missing": "a value given",
          "tuple_type": "a tuple", "list_type": "a list", "dict_type": "a dict",
          "finite_number": "a finite number", "extra_forbidden": "only the model's fields"}


def _expected(error: Any) -> str:
    ctx = error.get("ctx") or {}
    if ctx:
        return ", ".join(f"{k} {v}" for k, v in ctx.items())
    return _TYPES.get(str(error.get("type")), str(error.get("type")))


def _line_in(path: Path, exc: BaseException) -> int | str:
    """The line of `path` the error came from (the last frame in that file)."""
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__)
             if Path(f.filename).resolve() == path.resolve() and f.lineno is not None]
    return lines[-1] if lines else "?"


def _allowed_for(exc: BaseException) -> str:
    """For a misspelt keyword (`replace(DEFAULT_PLAN, sample_topp=...)`), the names allowed."""
    for cls in (CampaignPlan, Experiment, Factor):
        if isinstance(exc, TypeError) and f"{cls.__name__}.__init__()" in str(exc):
            return f"the fields of {cls.__name__}: {', '.join(f.name for f in fields(cls))}"
    return "a file that runs: fix the error on that line"
