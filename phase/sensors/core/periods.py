"""How often each sensor's value changes: its update period, measured, never assumed.

A live sensor is polled at ~1 kHz for `probe_s`; a counter that changed fewer than three
times by then (Apple IOReport publishes about every 2 s) is watched up to `slow_probe_s`.
The period is the median interval between changes. A recorded trace's period is measured the
same way from its samples.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from phase.sensors.core.base import Sensor
from phase.sensors.core.clock import SYSTEM_CLOCK, Clock
from phase.sensors.core.energy import Series

DEFAULT_PROBE_S = 1.0
SLOW_PROBE_S = 5.0


@dataclass(frozen=True)
class UpdatePeriod:
    seconds: float | None
    reason: str | None


def _period_from_changes(change_times: Sequence[float], span_s: float,
                         what: str) -> UpdatePeriod:
    diffs = [b - a for a, b in itertools.pairwise(change_times)]
    if diffs:
        return UpdatePeriod(statistics.median(diffs), None)
    if not change_times:
        return UpdatePeriod(None, f"the value did not change in {span_s:.3g} s of {what}: "
                            "a frozen sensor, or one that updates more slowly than that")
    return UpdatePeriod(None, f"the value changed only {len(change_times)} time(s) in "
                        f"{span_s:.3g} s of {what}: too slow to measure in that time")


def post_hoc_update_period(series: Series) -> UpdatePeriod:
    """How often a recorded trace's value changes (median interval between changes)."""
    if len(series.times) < 2:
        return UpdatePeriod(None, "the trace holds fewer than two values")
    changes = [t for k, t in enumerate(series.times[1:], start=1)
               if series.values[k] != series.values[k - 1]]
    return _period_from_changes(changes, series.times[-1] - series.times[0], "the trace")


def measure_periods(live: Sequence[Sensor], probe_s: float, slow_probe_s: float,
                    probe_hz: float, clock: Clock = SYSTEM_CLOCK) -> dict[str, UpdatePeriod]:
    """Poll every live sensor at ~probe_hz for probe_s, then the counters that changed
    fewer than 3 times for up to slow_probe_s in all; median interval between changes."""
    n = len(live)
    if n == 0:
        return {}
    seen = _Changes(n)
    start = clock.monotonic()
    _poll(live, range(n), start + probe_s, seen, probe_hz, clock)
    slow = [i for i, s in enumerate(live)
            if s.kind == "counter" and seen.reads[i] and len(seen.changes[i]) < 3]
    if slow and slow_probe_s > probe_s:
        _poll(live, slow, start + slow_probe_s, seen, probe_hz, clock, until_changes=3)
    span = clock.monotonic() - start
    what = f"polling at up to {probe_hz:g} Hz"
    out = {}
    for i, sensor in enumerate(live):
        if seen.reads[i] == 0:
            out[sensor.name] = UpdatePeriod(None, f"every read failed while measuring the "
                                            f"update period: {seen.errors[i]}")
        else:
            out[sensor.name] = _period_from_changes(seen.changes[i], span, what)
    return out


def _poll(live: Sequence[Sensor], indices: Sequence[int], deadline: float, seen: _Changes,
          probe_hz: float, clock: Clock, until_changes: int | None = None) -> None:
    pause = 1.0 / probe_hz
    active = list(indices)
    while active and clock.monotonic() < deadline:
        for i in active:
            try:
                value = live[i].read_value()
            except Exception as exc:
                seen.errors[i] = str(exc)
                continue
            t = clock.monotonic()
            seen.reads[i] += 1
            if seen.last[i] is not None and value != seen.last[i]:
                seen.changes[i].append(t)
            seen.last[i] = value
        if until_changes is not None:
            active = [i for i in active if len(seen.changes[i]) < until_changes]
        clock.sleep(pause)


class _Changes:
    """What polling saw of each live sensor: reads, value changes, the last error."""

    def __init__(self, n: int) -> None:
        self.last: list[float | None] = [None] * n
        self.changes: list[list[float]] = [[] for _ in range(n)]
        self.errors: list[str | None] = [None] * n
        self.reads = [0] * n
