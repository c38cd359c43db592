"""Load generators: closed loop at a fixed concurrency and open loop with seeded Poisson
arrivals, each driving a `BatchDecoder` until every request is served, and recording what
happened on an injected clock.

The clock is a callable returning seconds (`time.perf_counter` by default) and the open loop's
sleep is injected beside it, so tests run on a simulated clock where a step takes exactly as
long as its script says. Randomness comes from one seed, split by numpy's SeedSequence into
independent streams (`streams`): the order prompts are drawn in, and the gaps between
arrivals; a run is reproduced by its seed and nothing else.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from phase.base.errors import UsageProblem
from phase.policy.batching import BatchDecoder, Request, StepReport
from phase.serving.records import (
    ClosedLoop,
    EmissionRecord,
    OpenLoop,
    RequestRecord,
    RunRecord,
    StepRecord,
)

Clock = Callable[[], float]
Sleep = Callable[[float], None]

ORDER_STREAM, ARRIVAL_STREAM = 0, 1


def streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """The run's two generators: (prompt order, arrival gaps). Separate streams, so changing
    the rate leaves the prompt order as it was and the other way round."""
    order, arrival = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(order), np.random.default_rng(arrival)


def draw_order(n_prompts: int, n_requests: int, seed: int) -> tuple[int, ...]:
    """Which prompt each request gets: a seeded permutation of the prompts, then another one
    when they run out, so every prompt is used equally often (to within one) in any run."""
    if n_prompts < 1:
        raise UsageProblem("prompts: the workload has no prompts; give at least one")
    rng = streams(seed)[ORDER_STREAM]
    order: list[int] = []
    while len(order) < n_requests:
        order.extend(int(i) for i in rng.permutation(n_prompts))
    return tuple(order[:n_requests])


def arrival_offsets(request_rate: float | None, n_requests: int, seed: int) -> tuple[float, ...]:
    """Seconds from the start at which each request arrives: the first at once and each next
    one an exponential gap (mean 1 / rate) later, as vLLM's benchmark sends them. Rate None:
    all at once."""
    if request_rate is None:
        return (0.0,) * n_requests
    gaps = streams(seed)[ARRIVAL_STREAM].exponential(1.0 / request_rate, n_requests)
    return tuple(float(t) for t in np.concatenate(([0.0], np.cumsum(gaps[:-1]))))


def make_requests(prompts: Sequence[tuple[int, ...]], n_requests: int, max_new_tokens: int,
                  seed: int) -> tuple[tuple[Request, int], ...]:
    """The run's requests in arrival order, each with the index of its prompt."""
    order = draw_order(len(prompts), n_requests, seed)
    return tuple((Request(id=i, prompt=tuple(prompts[p]), max_new_tokens=max_new_tokens), p)
                 for i, p in enumerate(order))


@dataclass
class _Open:
    """A request in flight, while its record is still being written."""

    request: Request
    prompt_index: int
    arrival: float
    admission: float
    emissions: list[EmissionRecord] = field(default_factory=list)


@dataclass
class _Recorder:
    """Stamps admissions and steps with the clock and assembles the run's record."""

    decoder: BatchDecoder
    clock: Clock
    open: dict[int, _Open] = field(default_factory=dict)
    done: list[RequestRecord] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)

    def admit(self, request: Request, prompt_index: int, arrival: float | None) -> None:
        """Admit now; `arrival` None: it arrives as it is admitted (closed loop)."""
        now = self.clock()
        self.open[request.id] = _Open(request, prompt_index, now if arrival is None else arrival,
                                      now)
        self.decoder.admit(request)

    def step(self) -> None:
        active = self.decoder.active()
        started = self.clock()
        report = self.decoder.step()
        ended = self.clock()
        if not report.emissions:
            # a step that serves nobody while requests are active would loop for ever
            raise RuntimeError(f"the decoder's step emitted nothing with {active} active")
        self.steps.append(StepRecord(started, ended, active, report.batch_tokens))
        self._stamp(report, ended)

    def _stamp(self, report: StepReport, at: float) -> None:
        for e in report.emissions:
            live = self.open[e.request_id]
            live.emissions.append(EmissionRecord(at, len(e.tokens), e.proposed, e.accepted))
            if e.finished:
                del self.open[e.request_id]
                self.done.append(RequestRecord(
                    id=live.request.id, prompt_index=live.prompt_index,
                    prompt_tokens=len(live.request.prompt),
                    max_new_tokens=live.request.max_new_tokens, arrival=live.arrival,
                    admission=live.admission, finish=at, emissions=tuple(live.emissions)))

    def record(self, load: ClosedLoop | OpenLoop, started: float) -> RunRecord:
        requests = tuple(sorted(self.done, key=lambda r: (r.arrival, r.id)))
        return RunRecord(load=load, started=started, ended=self.clock(), requests=requests,
                         steps=tuple(self.steps))


def _check_cap(name: str, cap: int, decoder: BatchDecoder) -> None:
    if cap > decoder.capacity:
        raise UsageProblem(f"{name}: {cap} is more than the decoder's {decoder.capacity} "
                           f"sequences; give at most {decoder.capacity}, or a decoder with more")


def run_closed(decoder: BatchDecoder, prompts: Sequence[tuple[int, ...]], load: ClosedLoop,
               *, clock: Clock = time.perf_counter) -> RunRecord:
    """Keep `load.concurrency` requests active, admitting the next in the seeded order as soon
    as one finishes, until all `load.n_requests` are served. A request arrives when its client
    sends it, which in a closed loop is when a slot is free: arrival is admission."""
    _check_cap("concurrency", load.concurrency, decoder)
    queue = deque(make_requests(prompts, load.n_requests, load.max_new_tokens, load.seed))
    rec = _Recorder(decoder, clock)
    started = clock()
    while queue or decoder.active():
        while queue and decoder.active() < load.concurrency:
            request, index = queue.popleft()
            rec.admit(request, index, None)
        rec.step()
    return rec.record(load, started)


def run_open(decoder: BatchDecoder, prompts: Sequence[tuple[int, ...]], load: OpenLoop,
             *, clock: Clock = time.perf_counter, sleep: Sleep = time.sleep) -> RunRecord:
    """Send requests at their seeded Poisson times and serve them with continuous batching:
    between steps, every request whose time has come joins the queue, and the queue is
    admitted up to the cap. A request's arrival is its scheduled time, so the time it spent
    queued (behind the cap, or behind the step that was running when it came) counts in its
    time to first token. With nothing active and nothing queued, sleep to the next arrival."""
    cap = decoder.capacity if load.max_concurrency is None else load.max_concurrency
    _check_cap("max_concurrency", cap, decoder)
    started = clock()
    arrivals = [started + t for t in arrival_offsets(load.request_rate, load.n_requests,
                                                      load.seed)]
    future = deque(zip(make_requests(prompts, load.n_requests, load.max_new_tokens, load.seed),
                       arrivals, strict=True))
    queued: deque[tuple[tuple[Request, int], float]] = deque()
    rec = _Recorder(decoder, clock)
    while future or queued or decoder.active():
        now = clock()
        while future and future[0][1] <= now:
            queued.append(future.popleft())
        while queued and decoder.active() < cap:
            (request, index), arrival = queued.popleft()
            rec.admit(request, index, arrival)
        if decoder.active():
            rec.step()
        elif future:
            sleep(future[0][1] - now)
    return rec.record(load, started)


def run_load(decoder: BatchDecoder, prompts: Sequence[tuple[int, ...]],
             load: ClosedLoop | OpenLoop, *, clock: Clock = time.perf_counter,
             sleep: Sleep = time.sleep) -> RunRecord:
    """The run `load` describes."""
    if isinstance(load, ClosedLoop):
        return run_closed(decoder, prompts, load, clock=clock)
    return run_open(decoder, prompts, load, clock=clock, sleep=sleep)
