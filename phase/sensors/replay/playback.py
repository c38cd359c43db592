"""A recorded series of reads played back on a clock (phase.sensors.replay.replay).

Within the recording each read returns the recorded value at that time. Past its end:

* a counter keeps counting at its recorded period and mean rate. The rate is taken on the
  counter unwrapped: a step down inside the recording is a wrap where the counter's range is
  known (RAPL's `max_energy_range_uj`), so the replay counts on and wraps at the same range
  as the machine did; where it is not known, a reset (the drop is not counted). So a counter
  never runs backwards and a wrap is never extrapolated into an absurd power;
* a level (power, current, voltage) repeats the recording;
* a series whose recording ended in an error raises that error, as the machine did.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from typing import Any

from phase.sensors.core.base import ReadError
from phase.sensors.core.clock import SYSTEM_CLOCK, Clock


class Playback:
    """A recorded series of (t, value) changes, played back from `origin` (s on `clock`)."""

    def __init__(self, changes: Sequence[Sequence[Any]], counter: bool, origin: float,
                 error: str | None = None, wrap: int | None = None, *,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.t = [float(c[0]) for c in changes]
        self.v = [c[1] for c in changes]
        self.counter = counter
        self.origin = origin
        self.clock = clock
        self.error = error
        self.wrap = wrap if wrap and wrap > 0 else None
        changed = [self.t[k] for k in range(1, len(self.t)) if self.v[k] != self.v[k - 1]]
        steps = [b - a for a, b in itertools.pairwise(changed)]
        self.period = statistics.median(steps) if steps else 1.0

    def _unwrapped(self) -> list[float]:
        out: list[float] = []
        offset = 0.0
        for k, v in enumerate(self.v):
            if k and v < self.v[k - 1]:
                offset += self.wrap if self.wrap else self.v[k - 1] - v
            out.append(v + offset)
        return out

    def _counted_on(self, x: float) -> Any:
        u = self._unwrapped()
        span = self.t[-1] - self.t[0]
        rate = (u[-1] - u[0]) / span if span > 0 else 0.0
        ticks = int((x - self.t[-1]) / self.period)
        value = self.v[-1] + rate * ticks * self.period
        if self.wrap:
            value %= self.wrap
        return int(value) if isinstance(self.v[-1], int) else value

    def value(self) -> Any:
        if not self.t:
            raise ReadError(self.error or "nothing was recorded")
        x = self.clock.monotonic() - self.origin + self.t[0]
        last_t = self.t[-1]
        if x > last_t and self.error:
            raise ReadError(f"{self.error} (recorded)")
        if x <= last_t or len(self.t) < 2:
            k = max(i for i, t in enumerate(self.t) if t <= max(x, self.t[0]))
            return self.v[k]
        if self.counter and isinstance(self.v[-1], int | float):
            return self._counted_on(x)
        span = last_t - self.t[0]  # a level: repeat the recording
        x = self.t[0] + (x - self.t[0]) % span if span > 0 else self.t[0]
        k = max(i for i, t in enumerate(self.t) if t <= x)
        return self.v[k]
