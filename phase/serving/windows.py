"""Throughput and energy over a window of a run: the whole run, and the steady state.

The steady state is ML.ENERGY's: from the B-th request's first token to the (N-B)-th
request's (first tokens in time order, counted from 1), which leaves out the ramp-up while the
batch fills and the tail while it drains, where a server is running below the load under
study. A window (a, b] counts the tokens of steps that returned after a and by b, and the
requests that finished in it: the step that returned at a spent its time, and its energy,
before the window opened.

Energy comes from a reading the caller hands in (joules between two readings of the run's
clock). Without one, or when it has nothing for a window, every energy figure is None and the
reason says why: a made-up number is worse than none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from phase.serving.records import RunRecord

# joules used between two readings of the run's clock; None when the sensor cannot say
EnergyReading = Callable[[float, float], float | None]

NO_SENSOR = "no energy sensor on this machine"
NO_READING = "the energy sensor has no reading for this window"


@dataclass(frozen=True)
class Energy:
    """Energy over a window, per output token and per finished request (None with a reason
    when it cannot be known)."""

    joules: float | None
    per_token_j: float | None
    per_request_j: float | None
    reason: str | None = None


@dataclass(frozen=True)
class Window:
    """A span of a run and what it served: output tokens and finished requests, per second,
    and the energy they took."""

    name: str
    start: float
    end: float
    duration_s: float
    output_tokens: int
    finished_requests: int
    output_tokens_per_s: float
    requests_per_s: float
    energy: Energy


def _energy(reading: EnergyReading | None, start: float, end: float, tokens: int,
            finished: int) -> Energy:
    if reading is None:
        return Energy(None, None, None, NO_SENSOR)
    joules = reading(start, end)
    if joules is None:
        return Energy(None, None, None, NO_READING)
    joules = float(joules)
    missing = [what for what, n in (("no token", tokens), ("no request finished", finished))
               if n == 0]
    return Energy(joules, joules / tokens if tokens else None,
                  joules / finished if finished else None,
                  f"{' and '.join(missing)} inside the window" if missing else None)


def window(run: RunRecord, name: str, start: float, end: float,
           reading: EnergyReading | None) -> Window:
    """What the run served in (start, end], and its energy."""
    tokens = sum(e.tokens for r in run.requests for e in r.emissions if start < e.at <= end)
    finished = sum(1 for r in run.requests if start < r.finish <= end)
    duration = end - start
    if duration <= 0:
        raise ValueError(f"the window {name} ({start}, {end}] takes no time on the run's clock")
    return Window(name=name, start=start, end=end, duration_s=duration, output_tokens=tokens,
                  finished_requests=finished, output_tokens_per_s=tokens / duration,
                  requests_per_s=finished / duration,
                  energy=_energy(reading, start, end, tokens, finished))


def whole_run(run: RunRecord, reading: EnergyReading | None) -> Window:
    return window(run, "whole run", run.started, run.ended, reading)


def steady_bounds(run: RunRecord, b: int) -> tuple[float, float] | str:
    """(the B-th first token's time, the (N-B)-th's), N the requests that emitted a token; or
    why the run has no steady state at this B."""
    if b < 1:
        raise ValueError(f"steady-state B must be >= 1, not {b}")
    firsts = sorted(t for r in run.requests if (t := r.first_token_at) is not None)
    n = len(firsts)
    if n - b <= b:
        return (f"{n} requests leave no steady state with B = {b}: it needs more than "
                f"{2 * b} requests")
    start, end = firsts[b - 1], firsts[n - b - 1]
    if end <= start:
        return (f"the {b}-th and {n - b}-th requests' first tokens came out on the same step; "
                f"the steady state is empty")
    return start, end


def steady_state(run: RunRecord, b: int,
                 reading: EnergyReading | None) -> tuple[Window | None, str | None]:
    """The steady-state window, or None and why there is none."""
    bounds = steady_bounds(run, b)
    if isinstance(bounds, str):
        return None, bounds
    return window(run, "steady state", *bounds, reading), None
