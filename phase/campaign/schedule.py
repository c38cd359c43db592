"""The campaign's run order: defined with the results contract (phase.results.schedule), since
validation checks every file's run ids and orders against it."""

from phase.results.schedule import Rerun, ScheduledRun, rerun, schedule

__all__ = ["Rerun", "ScheduledRun", "rerun", "schedule"]
