"""Recording a run: announce it, cool down, execute it (phase.campaign.execute), judge it
against the file so far (phase.campaign.reruns.judge_run) and write it at once, so that an
interruption loses at most the run in progress."""

from __future__ import annotations

import time
from dataclasses import dataclass

from phase.campaign.execute import Executor
from phase.campaign.observer import Observer
from phase.campaign.references import RefKey, ref_key
from phase.campaign.reruns import judge_run
from phase.campaign.schedule import ScheduledRun
from phase.campaign.serving_plan import is_serving
from phase.campaign.serving_run import run_serving
from phase.campaign.windows import WindowSize
from phase.results import CampaignWriter, PlainReference
from phase.results.levels import reference_levels


@dataclass(frozen=True)
class Recorder:
    """Records scheduled runs into `writer`, each decoded to the window `size` and compared
    with its prompt's plain reference in `refs`."""

    executor: Executor
    writer: CampaignWriter
    observer: Observer
    refs: dict[RefKey, PlainReference]
    size: WindowSize

    def record(self, index: int, scheduled: ScheduledRun) -> None:
        self.observer.run_started(index, scheduled)
        if self.executor.plan.cooldown_s > 0:
            time.sleep(self.executor.plan.cooldown_s)
        if is_serving(self.executor.start.config):
            run = run_serving(self.executor, scheduled, self.refs, self.size.align_to)
        else:
            run = self.executor.run(scheduled, self.refs[self._ref_key(scheduled)], self.size)
        judge_run(self.writer.results, run)
        self.writer.add_run(run)
        self.observer.run_finished(index, run)

    def _ref_key(self, scheduled: ScheduledRun) -> RefKey:
        return ref_key(scheduled.prompt,
                       reference_levels(self.executor.start.config, dict(scheduled.levels)))
