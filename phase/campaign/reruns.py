"""Which runs are disturbed, and which are re-run when: at the end of their repeat, in a
fresh shuffled order (seeded), each slot until an attempt is undisturbed or `max_reruns`
attempts are spent.

A run is judged as it ends (`judge_run`), by its load and by its speed against its cost
profile, its condition's earlier runs and, serving, the campaign's earlier prefills
(phase.analysis.slowdown), so the runs of its repeat
that follow it, and its re-runs, are decided on what the file already holds.

Everything is worked out from the runs already in the file, so a resumed campaign re-runs
exactly what an uninterrupted one would have.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import groupby

from phase.analysis import slowdown
from phase.campaign.plan import CampaignPlan
from phase.campaign.schedule import Rerun, ScheduledRun, rerun
from phase.results import ResultsFile, Run


def judge_run(results: ResultsFile, run: Run) -> None:
    """Record on `run` (not yet in `results`) its speed against its profile and its
    condition's earlier runs, and whether load or slowdown disturbed it, and why."""
    runs = [*results.runs, run]
    verdict = slowdown.judge(results, run, runs)
    run.speed_vs_profile = verdict.vs_profile
    run.speed_vs_condition = verdict.vs_condition
    run.speed_vs_prefill = verdict.vs_prefill
    run.disturbed, run.disturbed_reason = slowdown.disturbed(results, run, runs)


def repeats_of(runs: Sequence[ScheduledRun]) -> list[list[ScheduledRun]]:
    """The schedule cut into its repeats (it is ordered by repeat)."""
    return [list(block) for _, block in groupby(runs, key=lambda r: r.repeat)]


def due_reruns(recorded: Sequence[Run], block: Sequence[ScheduledRun], plan: CampaignPlan,
               schedule_length: int) -> list[Rerun]:
    """The re-runs this repeat still needs: one per slot whose latest attempt is disturbed
    and has retries left."""
    if plan.disturbed_load is None or plan.max_reruns <= 0:
        return []
    attempts: dict[str, list[Run]] = {}
    for run in recorded:
        attempts.setdefault(run.rerun_of or run.id, []).append(run)
    due: list[Rerun] = []
    for slot in block:
        tried = sorted(attempts.get(slot.run_id, []), key=lambda r: r.order)
        if not tried or not tried[-1].disturbed:
            continue  # not run yet (a failure stops the campaign first) or undisturbed
        if len(tried) - 1 < plan.max_reruns:
            due.append(rerun(slot, len(tried), schedule_length))
    if due:
        # A fresh place in the order: what disturbed one slot must not favour its re-run.
        attempt = min(r.attempt for r in due)
        random.Random(f"{plan.seed}:{block[0].repeat}:rerun{attempt}").shuffle(due)
    return due
