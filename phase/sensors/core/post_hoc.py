"""A window over a recorded trace (a meter's file, a sensor that stamps its own readings):
the decode window's edges, and the energy a trace holds between them, callable long after
the run. Also the window specification every sensor's energy is computed under.
"""

from __future__ import annotations

from dataclasses import dataclass

from phase.base.errors import PhaseError
from phase.results import SensorTrace, SensorWindow
from phase.sensors.core.base import PostHocSensor, Sensor
from phase.sensors.core.energy import Limits, Series, WindowSpec, window_result
from phase.sensors.core.periods import UpdatePeriod, post_hoc_update_period


@dataclass(frozen=True)
class WindowEdges:
    """When the idle window, the decode window start and its end happened."""

    idle_start_unix_s: float
    start_unix_s: float
    end_unix_s: float


def window_spec(sensor: Sensor, limits: Limits, period: UpdatePeriod | None, *,
                min_interval_s: float = 0.0, exact_edges: bool) -> WindowSpec:
    # A power sensor may go max_gap_s without a sample, or longer when it updates slowly.
    slowest = 2.5 * period.seconds if period and period.seconds else 0.0
    return WindowSpec(
        name=sensor.name, kind=sensor.kind, wrap_j=sensor.wrap_j, max_power_w=sensor.max_power_w,
        max_interval_s=max(limits.max_gap_s, slowest, min_interval_s),
        exact_edges=exact_edges, update_period_s=period.seconds if period else None,
    )


def align_post_hoc(sensor: PostHocSensor, edges: WindowEdges,
                   limits: Limits | None = None) -> tuple[SensorWindow, SensorTrace]:
    """A recorded trace (e.g. a meter file) over one run's window; callable long after it."""
    limits = limits or Limits()
    try:
        series = sensor.series()
    except PhaseError as exc:
        series = Series(last_error=str(exc))
    if not series.times:
        why = series.last_error or f"{sensor.name}: the trace holds no values"
        return (
            SensorWindow(sensor=sensor.name, start_unix_s=edges.start_unix_s,
                         end_unix_s=edges.end_unix_s,
                         energy_j=None, energy_reason=why, mean_power_w=None, idle_power_w=None,
                         idle_power_reason=f"idle window: {why}", samples=0, gaps=0),
            SensorTrace(sensor=sensor.name, t_s=[], values=[]),
        )
    spec = window_spec(sensor, limits, post_hoc_update_period(series), exact_edges=False)
    return window_result(spec, series, edges.idle_start_unix_s, edges.start_unix_s,
                         edges.end_unix_s, limits)
