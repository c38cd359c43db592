"""The answer a campaign gives to its experiment's question: the rule that the experiment file
(`experiments/<experiment>.py`, its `EXPERIMENT.question`) declares, run on the campaign's
results file and summary rows (phase.analysis.rules). A note's title, finding and trend
sentences come from it.

The experiment file is read as a declaration, as a note's template is: publishing runs no
campaign code, only the rule the file names, a pure function of the data. An experiment
without a file here, or whose file declares no question, has no outcome (its note keeps its
template's title and states no verdict).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from phase import REPO_ROOT
from phase.analysis.declared import declared_experiment
from phase.analysis.rules import Outcome, Question
from phase.publish.data.datasets import Dataset

EXPERIMENTS_DIR = REPO_ROOT / "experiments"


@cache
def _declared(path: Path) -> Question | None:
    found = getattr(declared_experiment(path, "phase_question"), "question", None)
    return found if isinstance(found, Question) else None


def question_of(experiment: str, directory: Path = EXPERIMENTS_DIR) -> Question | None:
    """The question `experiment` declares; None where it declares none (or has no file)."""
    path = directory / f"{experiment}.py"
    return _declared(path.resolve()) if path.is_file() else None


def outcome_of(dataset: Dataset) -> Outcome | None:
    """The answer a raw campaign gives to its experiment's question (loads its runs); None
    for a summary file or an experiment without a question."""
    header = dataset.raw_header
    if header is None:
        return None
    question = question_of(header.experiment)
    raw = dataset.raw
    if question is None or raw is None:
        return None
    return question.answer(raw, dataset.summary.rows)
