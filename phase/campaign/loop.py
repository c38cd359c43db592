"""The measured runs in order: each repeat of the schedule, then its disturbed runs again
(phase.campaign.reruns decides which), then, for adaptive repeats, extra rounds until every
ratio is narrow or the budget is spent (phase.analysis.adaptive decides). Each run is recorded
by a Recorder (phase.campaign.recording); runs already in the file are skipped, so a resumed
campaign runs exactly what an uninterrupted one would have left."""

from __future__ import annotations

from collections.abc import Sequence

from phase.analysis import adaptive
from phase.campaign.plan import CampaignPlan
from phase.campaign.recording import Recorder
from phase.campaign.reruns import due_reruns, repeats_of
from phase.campaign.schedule import ScheduledRun


def run_schedule(recorder: Recorder, runs: Sequence[ScheduledRun], length: int,
                 done: set[str], plan: CampaignPlan) -> None:
    """Record every run of `runs` (this machine's part of a schedule of `length` runs) not
    in `done`, with the re-runs and extra rounds the plan asks for."""
    index = 0
    for block in repeats_of(runs):
        for scheduled in block:
            if scheduled.run_id not in done:
                recorder.record(index, scheduled)
            index += 1
        index = rerun_disturbed(recorder, index, block, length, plan)
    if plan.target_half_width is not None:
        extra_rounds(recorder, index, done, plan)


def rerun_disturbed(recorder: Recorder, index: int, block: list[ScheduledRun], length: int,
                    plan: CampaignPlan) -> int:
    """Disturbed runs of this repeat get a fresh slot at its end, until undisturbed or out
    of retries; worked out from the file, so a resumed campaign knows."""
    while due := due_reruns(recorder.writer.results.runs, block, plan, length):
        recorder.observer.message(f"re-running {len(due)} disturbed run(s) of repeat "
                                  f"{block[0].repeat}")
        for rerun in due:
            recorder.record(index, rerun)
            index += 1
    return index


def extra_rounds(recorder: Recorder, index: int, done: set[str], plan: CampaignPlan) -> None:
    """Adaptive repeats: after the planned ones, a round of the conditions whose ratio to
    plain is still too wide (phase.analysis.adaptive), until all are narrow or the budget
    is spent. Each decision rests on the runs of the rounds before it only, so a resumed
    campaign decides every round again exactly as before and runs what is missing."""
    results = recorder.writer.results
    decisions: list[adaptive.Decision] = []
    repeat = results.config.repeats
    while True:
        decision = adaptive.decide(results, repeat)
        decisions.append(decision)
        results.adaptive = adaptive.record(results, decisions)  # written with the next run
        if decision.stopped is not None:
            recorder.observer.message(f"adaptive repeats stop: {decision.reason}")
            return
        block = list(decision.slots)
        todo = [s for s in block if s.run_id not in done]
        if todo:
            recorder.observer.message(
                f"extra round {repeat - results.config.repeats + 1} (repeat {repeat}): "
                f"{len(decision.wide)} ratio(s) still wider than "
                f"±{results.config.target_half_width:.0%}, {len(block)} runs")
            recorder.observer.extra_runs(len(todo))
        for scheduled in todo:
            recorder.record(index, scheduled)
            index += 1
        # A re-run's order is its slot's plus its attempt: extra_round leaves room.
        index = rerun_disturbed(recorder, index, block, 1, plan)
        repeat += 1
