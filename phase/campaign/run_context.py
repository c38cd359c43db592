"""What every measured run records about where and beside what it ran, written the same way
for one-request runs (execute) and serving runs (serving_run)."""

from __future__ import annotations

from collections.abc import Mapping

from phase.campaign import machine
from phase.campaign.schedule import Rerun, ScheduledRun
from phase.results import Level, Run
from phase.sensors.nvidia.gpu_activity import GpuActivity


def stamp_context(run: Run, scheduled: ScheduledRun | Rerun, levels: Mapping[str, Level],
                  foreign: float | None, foreign_reason: str | None,
                  gpu: GpuActivity | None) -> Run:
    """Set `run`'s host, factor levels, foreign load, GPU activity and re-run link."""
    run.host = machine.hostname()
    run.factors = dict(levels)
    run.foreign_load, run.foreign_load_reason = foreign, foreign_reason
    if gpu is not None:
        run.gpu_busy_before = gpu.busy
        run.gpu_other_processes = gpu.other_processes
        run.gpu_activity_reason = gpu.reason
    run.rerun_of = scheduled.of if isinstance(scheduled, Rerun) else None
    return run
