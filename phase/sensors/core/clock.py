"""Where the sampler gets its time: the monotonic clock, its sleeps, and its ticking thread.

Production uses SYSTEM_CLOCK (time.monotonic, time.sleep and a daemon thread). The sampler
takes any Clock so that its tests can drive time themselves: a test clock makes sleeps pass
at once and fires the ticks at exact virtual times, so a test of the window arithmetic neither
waits nor depends on how busy the machine is. The real clock and thread keep their own tests.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

from phase.sensors.core.base import UNIX_OFFSET


class Ticker(ABC):
    """A running ticker (see Clock.start_ticker); stop it by setting its `closing` event."""

    @abstractmethod
    def join(self, timeout: float) -> None:
        """Wait (at most timeout seconds) until the ticker has stopped."""


class Clock(ABC):
    """Monotonic seconds, sleeps on that scale, and a periodic tick."""

    @abstractmethod
    def monotonic(self) -> float:
        """Seconds on a clock that never jumps (any origin)."""

    @abstractmethod
    def sleep(self, seconds: float) -> None:
        """Let `seconds` pass on this clock."""

    @abstractmethod
    def start_ticker(self, period_s: float, tick: Callable[[], None], armed: threading.Event,
                     closing: threading.Event) -> Ticker:
        """Call tick() every period_s while `armed` is set (first at once when it is set),
        idle while it is clear, until `closing` is set."""

    def now(self) -> float:
        """Unix seconds on this clock (the scale of phase.sensors.core.base.now())."""
        return UNIX_OFFSET + self.monotonic()


class _ThreadTicker(Ticker):
    def __init__(self, thread: threading.Thread) -> None:
        self.thread = thread

    def join(self, timeout: float) -> None:
        self.thread.join(timeout=timeout)


class SystemClock(Clock):
    """The real clock: time.monotonic, time.sleep and a daemon thread that ticks."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def start_ticker(self, period_s: float, tick: Callable[[], None], armed: threading.Event,
                     closing: threading.Event) -> Ticker:
        thread = threading.Thread(target=_tick_loop, args=(period_s, tick, armed, closing),
                                  name="phase-sampler", daemon=True)
        thread.start()
        return _ThreadTicker(thread)


def _tick_loop(period: float, tick: Callable[[], None], armed: threading.Event,
               closing: threading.Event) -> None:
    # Blocks on `armed` between windows: no wake-ups at all while nothing is measured.
    while True:
        armed.wait()
        if closing.is_set():
            return
        next_tick = time.monotonic()
        while armed.is_set() and not closing.is_set():
            tick()
            next_tick += period
            delay = next_tick - time.monotonic()
            if delay <= 0:  # fell behind (a slow read): skip ticks rather than burst
                next_tick = time.monotonic()
                continue
            closing.wait(delay)


SYSTEM_CLOCK = SystemClock()
