"""What a front end (the terminal's progress bar, phase.campaign.ui) is told as a campaign goes,
and the observer that is told nothing (tests, benches)."""

from __future__ import annotations

from typing import Protocol

from phase.campaign.schedule import ScheduledRun
from phase.results import Run


class Observer(Protocol):
    """What a front end (the terminal's progress bar) is told as the campaign goes."""

    def message(self, text: str) -> None: ...
    def campaign_started(self, total: int, already_done: int) -> None: ...
    def run_started(self, index: int, scheduled: ScheduledRun) -> None: ...
    def run_finished(self, index: int, run: Run) -> None: ...
    def extra_runs(self, count: int) -> None: ...


class QuietObserver:
    def message(self, text: str) -> None:
        pass

    def campaign_started(self, total: int, already_done: int) -> None:
        pass

    def run_started(self, index: int, scheduled: ScheduledRun) -> None:
        pass

    def run_finished(self, index: int, run: Run) -> None:
        pass

    def extra_runs(self, count: int) -> None:
        pass
