"""The background sampler: timestamped samples of every sensor around each run.

Usage (one window at a time):

    sampler = Sampler(sensors, hz=20.0); sampler.start()   # measures update periods
    win = sampler.begin(idle_s=2.0)   # samples an idle window, blocking idle_s
    win.start(); ...decode...; win.stop()                # counters read exactly here
    windows, traces = win.result()                       # SensorWindow, SensorTrace per sensor
    sampler.close()

The thread only reads while a window is open and sleeps otherwise. Each tick reads every
live sensor once (pre-opened files, pread) and appends two floats per sensor to an array:
no per-tick objects beyond the floats themselves, so its cost at 20 Hz stays far below the
0.5% throughput budget. Sensor reads and edge reads share one lock, so a window edge never
interleaves with a tick. All of its time (reads' stamps, the idle window, the thread's ticks)
comes from one Clock (phase.sensors.core.clock): the real one in production, a driven one in tests.

Counters are not exact at window edges: a read returns the value of the counter's last
update (NVML every 20-100 ms, Apple IOReport about every 2 s). `start()` measures each
sensor's update period; when a window ends, a counter that updates more slowly than
FOLLOW_MIN_PERIOD_S is read again until its next update (and a sensor that stamps its own
readings until one is stamped after the end), so the end edge is bracketed. Each counter
window then carries its edge error (phase.sensors.core.edges), which the counter-edges rule
judges like the lag of a smoothed power reading.

A window can also start on a counter's update (`begin(..., align_to=[name])`): `start()` then
polls that counter until its value changes (at most ~2.5 of its periods) and reads every
sensor right after, so the start edge falls within a poll of the update and its error all
but vanishes (phase.campaign.windows sizes windows on that).
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Sequence

from phase.base.errors import PhaseError
from phase.results import SensorInfo, SensorTrace, SensorWindow
from phase.sensors.core.base import UNIX_OFFSET, PostHocSensor, ReadError, Sensor
from phase.sensors.core.clock import SYSTEM_CLOCK, Clock, Ticker
from phase.sensors.core.energy import Limits, Series, window_result
from phase.sensors.core.periods import (
    DEFAULT_PROBE_S,
    SLOW_PROBE_S,
    UpdatePeriod,
    measure_periods,
    post_hoc_update_period,
)
from phase.sensors.core.post_hoc import WindowEdges, align_post_hoc, window_spec

# Counters updating more slowly than this are followed to their next update after a window.
FOLLOW_MIN_PERIOD_S = 0.005
FOLLOW_POLL_S = 0.001


class _Track:
    """Samples of one live sensor during one window (idle start to stop)."""

    __slots__ = ("gaps", "last_error", "times", "values")

    def __init__(self) -> None:
        self.times = array("d")
        self.values = array("d")
        self.gaps = array("d")
        self.last_error: str | None = None

    def series(self) -> Series:
        return Series(self.times, self.values, self.gaps, self.last_error)


class Sampler:
    """Samples sensors in a background thread; owns (and finally closes) the sensors."""

    def __init__(self, sensors: Sequence[Sensor], hz: float, *,
                 limits: Limits | None = None, probe_s: float = DEFAULT_PROBE_S,
                 probe_hz: float = 1000.0, slow_probe_s: float = SLOW_PROBE_S,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        if not (math.isfinite(hz) and hz > 0):
            raise PhaseError(f"sampling rate must be a positive number of Hz, got {hz}")
        names = [s.name for s in sensors]
        if len(set(names)) != len(names):
            raise PhaseError(f"sensor names must be unique, got {names}")
        self.sensors = list(sensors)
        self.live = [s for s in sensors if not isinstance(s, PostHocSensor)]
        self.post_hoc = [s for s in sensors if isinstance(s, PostHocSensor)]
        self.hz = hz
        self.limits = limits or Limits()
        self.probe_s = probe_s
        self.probe_hz = probe_hz
        self.slow_probe_s = slow_probe_s
        self.clock = clock
        self.periods: dict[str, UpdatePeriod] = {}
        self._lock = threading.Lock()
        self._armed = threading.Event()
        self._closing = threading.Event()
        self._tracks: list[_Track] | None = None
        self._thread: Ticker | None = None
        self._window: Window | None = None
        self._closed = False

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Measure each sensor's update period (blocks ~probe_s), then start the thread."""
        if self._thread is not None:
            raise PhaseError("the sampler is already started")
        self.periods = measure_periods(self.live, self.probe_s, self.slow_probe_s,
                                       self.probe_hz, self.clock)
        for sensor in self.post_hoc:
            try:
                self.periods[sensor.name] = post_hoc_update_period(sensor.series())
            except PhaseError as exc:
                self.periods[sensor.name] = UpdatePeriod(None, str(exc))
        self._thread = self.clock.start_ticker(1.0 / self.hz, self._tick, self._armed,
                                               self._closing)

    def close(self, *, close_sensors: bool = True) -> None:
        """Stop the thread and (by default) close the sensors; later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        self._armed.set()  # wake the thread so it can see it is closing
        if self._thread is not None:
            self._thread.join(timeout=5)
        if close_sensors:
            for sensor in self.sensors:
                sensor.close()

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- what the results file records about each sensor --------------------------------

    def sensor_infos(self) -> list[SensorInfo]:
        if not self.periods and self.sensors:
            raise PhaseError("call Sampler.start() first: it measures the update periods")
        out = []
        for s in self.sensors:
            period = self.periods[s.name]
            out.append(SensorInfo(
                name=s.name, backend=s.backend, scope=s.scope, kind=s.kind, unit=s.unit,
                smoothing_s=s.smoothing_s, max_power_w=s.max_power_w,
                update_period_s=period.seconds, update_period_reason=period.reason,
                encloses=s.encloses, assumed=list(s.assumed), device=s.device,
                wrap_j=s.wrap_j if s.kind == "counter" else None,
            ))
        return out

    # --- windows -------------------------------------------------------------------------

    def begin(self, idle_s: float, align_to: Sequence[str] = ()) -> Window:
        """Open a window: record an idle window of idle_s seconds (blocking), then return.
        `align_to`: counters whose next update the window's start waits for (the first one
        whose update period is measured and coarser than FOLLOW_MIN_PERIOD_S)."""
        if self._thread is None or self._closing.is_set():
            raise PhaseError("the sampler is not running: start() it first (and not after close())")
        if self._window is not None:
            raise PhaseError("a sampler window is still open: stop() it before begin()")
        tracks = [_Track() for _ in self.live]
        with self._lock:
            idle_edges = self._read_all(tracks)
            self._tracks = tracks
        window = Window(self, tracks, idle_edges, self.clock.now(), self._aligned_index(align_to))
        self._window = window
        self._armed.set()
        if idle_s > 0:
            self.clock.sleep(idle_s)
        return window

    def _end(self, window: Window) -> list[float]:
        with self._lock:
            edges = self._read_all(window.tracks)
            self._tracks = None
            self._armed.clear()
            end = max(edges, default=self.clock.now())
            self._follow(window.tracks, end)
        self._window = None
        return edges

    def _aligned_index(self, names: Sequence[str]) -> int | None:
        for name in names:
            for i, sensor in enumerate(self.live):
                period = self.periods.get(sensor.name)
                if (sensor.name == name and sensor.kind == "counter" and not sensor.self_stamped
                        and period is not None and period.seconds is not None
                        and period.seconds > FOLLOW_MIN_PERIOD_S):
                    return i
        return None

    def _await_update(self, i: int, track: _Track) -> bool:
        """Poll live sensor i until its value changes (keeping the read just before the
        change and the change itself in its track); False when it did not by the deadline."""
        sensor = self.live[i]
        period = self.periods[sensor.name].seconds or 0.0
        deadline = self.clock.now() + 2.5 * period + 0.05
        last: tuple[float, float] | None = None
        while self.clock.now() <= deadline:
            with self._lock:
                try:
                    value = sensor.read_value()
                except Exception:  # a gap; keep trying until the deadline
                    value = None
                t = self.clock.now()
                if value is not None:
                    if last is not None and value != last[1]:
                        for when, v in (last, (t, value)):
                            if not track.times or when > track.times[-1]:
                                track.times.append(when)
                                track.values.append(v)
                        return True
                    last = (t, value)
            self.clock.sleep(FOLLOW_POLL_S)
        return False

    def _read_one(self, sensor: Sensor, track: _Track) -> float:
        """Read one sensor into its track (a failure is a gap); return when it was read (for a
        self-stamped sensor the track keeps the time its reading applies to instead)."""
        t0 = self.clock.monotonic()
        read_at = UNIX_OFFSET + t0
        try:
            if sensor.self_stamped:
                reading = sensor.read()
                t, value = reading.t_unix_s, reading.value
            else:
                value = sensor.read_value()
                t = read_at = UNIX_OFFSET + (t0 + self.clock.monotonic()) / 2
            if not math.isfinite(value):
                raise ReadError(f"{sensor.name}: read a non-finite value ({value})")
        except Exception as exc:  # any failure is a gap; the sampler must keep going
            track.gaps.append(read_at)
            track.last_error = str(exc) if isinstance(exc, ReadError) \
                else f"{type(exc).__name__}: {exc}"
            return read_at
        if not track.times or t > track.times[-1]:  # a self-stamped repeat adds nothing
            track.times.append(t)
            track.values.append(value)
        return read_at

    def _read_all(self, tracks: list[_Track]) -> list[float]:
        """Read every live sensor once (caller holds the lock); return each read's time."""
        return [self._read_one(s, track) for s, track in zip(self.live, tracks, strict=True)]

    def _follow_deadline(self, sensor: Sensor) -> float | None:
        """How long after a window's end to wait for this sensor's next update, if at all."""
        if sensor.self_stamped:
            return 5 * sensor.smoothing_s + 1.0
        period = self.periods.get(sensor.name)
        if sensor.kind == "counter" and period is not None and period.seconds is not None \
                and period.seconds > FOLLOW_MIN_PERIOD_S:
            return 2.5 * period.seconds + 0.05
        return None

    def _follow(self, tracks: list[_Track], end: float) -> None:
        """Read each coarse counter until its value changes after `end` (keeping the read just
        before the change, so the update is bracketed), and each self-stamped sensor until a
        reading stamped after `end` arrives; give up at the sensor's deadline."""
        pending: dict[int, float] = {}
        for i, sensor in enumerate(self.live):
            wait = self._follow_deadline(sensor)
            if wait is not None:
                pending[i] = self.clock.now() + wait
        last: dict[int, tuple[float, float]] = {}
        while pending:
            for i in list(pending):
                sensor, track = self.live[i], tracks[i]
                if self.clock.now() > pending[i]:
                    del pending[i]
                    continue
                if sensor.self_stamped:
                    self._read_one(sensor, track)
                    if track.times and track.times[-1] >= end:
                        del pending[i]
                    continue
                try:
                    value = sensor.read_value()
                except Exception:  # a gap; keep trying until the deadline
                    continue
                t = self.clock.now()
                if track.values and value != track.values[-1]:
                    if i in last and last[i][0] > track.times[-1]:
                        track.times.append(last[i][0])
                        track.values.append(last[i][1])
                    track.times.append(t)
                    track.values.append(value)
                    del pending[i]
                else:
                    last[i] = (t, value)
            if pending:
                self.clock.sleep(FOLLOW_POLL_S)

    def _tick(self) -> None:
        """One sample of every live sensor into the open window (the ticker calls this)."""
        with self._lock:
            if self._tracks is not None:
                self._read_all(self._tracks)

    # --- update periods ------------------------------------------------------------------

class Window:
    """One run's sampling window; created by Sampler.begin()."""

    def __init__(self, sampler: Sampler, tracks: list[_Track], idle_edges: list[float],
                 idle_start: float, align: int | None = None) -> None:
        self.sampler = sampler
        self.align = align
        # Whether the start fell on an update of the counter `align` names (None: not asked).
        self.aligned: bool | None = None
        self.tracks = tracks
        self._idle_edges = idle_edges
        self._start_edges: list[float] | None = None
        self._end_edges: list[float] | None = None
        self._idle_start = idle_start
        self._start: float | None = None
        self._end: float | None = None

    def start(self) -> None:
        """The decode begins: every counter is read exactly now (first, where the window
        aligns to a counter, right after that counter's next update)."""
        if self._start_edges is not None or self._end_edges is not None:
            raise PhaseError("this window was already started")
        if self.align is not None:
            self.aligned = self.sampler._await_update(self.align, self.tracks[self.align])
        with self.sampler._lock:
            self._start_edges = self.sampler._read_all(self.tracks)
        self._start = self.sampler.clock.now()

    def stop(self) -> None:
        """The decode ends: every counter is read exactly now; sampling stops.

        Also closes a window that was never started (a failed run), so begin() works again.
        """
        if self._end_edges is not None:
            raise PhaseError("this window was already stopped")
        self._end_edges = self.sampler._end(self)
        self._end = self.sampler.clock.now()

    @property
    def edges(self) -> WindowEdges:
        """The window's edges on the unix clock, for aligning a meter trace later."""
        if self._start is None or self._end is None:
            raise PhaseError("the window has not been started and stopped yet")
        return WindowEdges(self._idle_start, self._start, self._end)

    def result(self) -> tuple[list[SensorWindow], list[SensorTrace]]:
        """Per sensor: the window's energy (or why not) and the raw trace."""
        if self._start_edges is None or self._end_edges is None:
            raise PhaseError("result() needs a window that was started and then stopped")
        windows, traces = [], []
        tick = 1.0 / self.sampler.hz
        for i, sensor in enumerate(self.sampler.live):
            spec = window_spec(sensor, self.sampler.limits, self.sampler.periods.get(sensor.name),
                               min_interval_s=2.5 * tick, exact_edges=not sensor.self_stamped)
            track = self.tracks[i]
            w, t = window_result(spec, track.series(), self._idle_edges[i],
                                 self._start_edges[i], self._end_edges[i], self.sampler.limits,
                                 trace_to=track.times[-1] if track.times else None)
            windows.append(w)
            traces.append(t)
        for sensor in self.sampler.post_hoc:
            w, t = align_post_hoc(sensor, self.edges, self.sampler.limits)
            windows.append(w)
            traces.append(t)
        return windows, traces
