"""Campaign observers the tests share."""

from __future__ import annotations

from phase.campaign import QuietObserver
from phase.results import Run


class StopAfter(QuietObserver):
    """Interrupts the campaign the way Ctrl-C does, after `runs` runs have been saved."""

    def __init__(self, runs: int) -> None:
        self.left = runs

    def run_finished(self, index: int, run: Run) -> None:
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt
