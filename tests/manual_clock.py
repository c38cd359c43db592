"""A clock the test drives: sleeps pass at once and the sampler's ticks fire at exact virtual
times, on the test's own thread, so a sampler test neither waits nor races a busy machine.

Only the time source is stood in for: the sampler, the sensors and the files they read are
the real ones (tests/test_sensors_sampler.py keeps real-clock tests of the thread itself).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from phase.sensors.core.clock import Clock, Ticker


@dataclass
class _ManualTicker(Ticker):
    period_s: float
    tick: Callable[[], None]
    armed: threading.Event
    closing: threading.Event
    next_at: float | None = None  # None while disarmed: the next window ticks at once

    def active(self) -> bool:
        return self.armed.is_set() and not self.closing.is_set()

    def join(self, timeout: float) -> None:
        return None  # nothing runs in the background


class ManualClock(Clock):
    """Virtual monotonic time, starting at the real monotonic time (so unix stamps derived
    from it stay plausible); it moves only when someone sleeps on it."""

    def __init__(self) -> None:
        self.t = time.monotonic()
        self.tickers: list[_ManualTicker] = []
        self.ticks = 0

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        """Advance by `seconds`, firing every armed ticker's ticks that fall due on the way, in
        time order (a ticker armed since the last sleep ticks first, at the current time, as the
        sampler's thread does when a window opens)."""
        end = self.t + max(0.0, seconds)
        while True:
            for ticker in self.tickers:
                if not ticker.active():
                    ticker.next_at = None
                elif ticker.next_at is None:
                    ticker.next_at = self.t
            due = [k for k in self.tickers if k.next_at is not None and k.next_at <= end]
            if not due:
                break
            ticker = min(due, key=lambda k: k.next_at or 0.0)
            assert ticker.next_at is not None
            self.t = max(self.t, ticker.next_at)
            ticker.next_at += ticker.period_s
            self.ticks += 1
            ticker.tick()
        self.t = end

    def start_ticker(self, period_s: float, tick: Callable[[], None], armed: threading.Event,
                     closing: threading.Event) -> Ticker:
        ticker = _ManualTicker(period_s, tick, armed, closing)
        self.tickers.append(ticker)
        return ticker
