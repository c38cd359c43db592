"""reruns (blocking): every re-run stands on a disturbed attempt of its slot, within the budget.

A run whose CPU or GPU was taken by other work, or that decoded too slowly (Run.disturbed),
is left out of every figure and its slot run again (`rerun_of`, phase.campaign.reruns), at
most `config.max_reruns` times. Rule consistency checks a re-run's id and order against the
schedule; what makes the re-run legitimate is re-derived here from the runs themselves:

- `rerun_of` names a run this file holds (the slot's first attempt): a re-run of nothing
  replaces no measurement, it adds one;
- attempt N (id `<slot>-rerunN`) follows attempt N-1 (the slot's own run for N = 1), and that
  attempt is in the file and disturbed: a slot is run again only after a disturbed attempt,
  so re-running a quiet one is choosing which measurement to keep;
- a slot has at most `config.max_reruns` re-runs (none where the file records no budget).
"""

from __future__ import annotations

import re
from collections import defaultdict

from phase.results import ResultsFile, Run
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings

_ATTEMPT = re.compile(r"-rerun([1-9][0-9]*)$")


def attempt_of(run: Run) -> int | None:
    """The attempt number a re-run's id gives (`<slot>-rerunN`), None where it has none."""
    found = _ATTEMPT.search(run.id)
    return int(found.group(1)) if found else None


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    by_id = {r.id: r for r in results.runs}
    index = {id(r): i for i, r in enumerate(results.runs)}
    budget = results.config.max_reruns or 0
    attempts: dict[str, list[Run]] = defaultdict(list)
    out: list[Finding] = []

    def block(run: Run, message: str, field: str, numbers: dict[str, float] | None = None
              ) -> None:
        out.append(ctx.finding("reruns", "blocking", message, run=run, numbers=numbers,
                               json_path=f"$.runs[{index[id(run)]}].{field}"))

    for run in results.runs:
        if run.rerun_of is None:
            continue
        attempts[run.rerun_of].append(run)
        first = by_id.get(run.rerun_of)
        if first is None or first.rerun_of is not None:
            block(run, f"rerun_of names {run.rerun_of!r}, which is no first attempt this file "
                  "holds: a re-run of nothing replaces no measurement", "rerun_of")
            continue
        attempt = attempt_of(run)
        if attempt is None:
            continue  # an id that is no re-run's: rule consistency's finding
        before = first if attempt == 1 else by_id.get(f"{run.rerun_of}-rerun{attempt - 1}")
        if before is None:
            block(run, f"re-run attempt {attempt} of {run.rerun_of!r}, but attempt "
                  f"{attempt - 1} is not in the file", "rerun_of", {"attempt": attempt})
        elif not before.disturbed:
            block(run, f"re-runs {before.id!r}, which is not disturbed: a slot is run again "
                  "only after a disturbed attempt", "rerun_of",
                  {"attempt": attempt})
    for slot, runs in attempts.items():
        numbers = {"reruns": float(len(runs)), "max_reruns": float(budget)}
        if len(runs) > budget:
            block(runs[budget], f"{len(runs)} re-runs of {slot!r}, more than "
                  f"config.max_reruns ({budget})", "rerun_of", numbers)
    return out


RULE = Rule(order=35, check=check)
