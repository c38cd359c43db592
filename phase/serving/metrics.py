"""Serving metrics of one run, from what its load generator recorded.

Per request (times in seconds, measured from the request's arrival, so queueing counts):
- time to first token (TTFT): first token out - arrival;
- end-to-end latency (E2E): finish - arrival;
- time per output token (TPOT): (E2E - TTFT) / (tokens - 1), None for a one-token request;
- inter-token latency (ITL): one value per token after the first. A step that emits m tokens
  after a gap g since the request's previous emission gives each of them g / m (SGLang's
  bench_serving does the same): a speculative step's tokens then weigh as m tokens, not as one
  long gap that would make speculation look slower per token than it is. Tokens that came out
  with the first token, on the same step, waited nothing after it: they count 0. So a request
  has tokens - 1 ITL values summing to its last emission - its first token, and their mean is
  its TPOT whenever it finished on the step of its last token.

Percentiles are numpy's default ("linear", Hyndman and Fan's type 7) over requests for TTFT,
TPOT and E2E, and over every token of every request for ITL, as vLLM's benchmark pools them.
Goodput is the requests per second of the whole run that met a stated latency target.
Acceptance sums proposals over the run: accepted / proposed, and the mean number accepted per
step that proposed anything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import numpy as np

from phase.base.errors import UsageProblem
from phase.serving.records import RequestRecord, RunRecord
from phase.serving.windows import EnergyReading, Window, steady_state, whole_run

PERCENTILE_METHOD: Final = "linear"  # Final: numpy's stubs take the method as a Literal
QUANTILES = (50, 90, 99)


@dataclass(frozen=True)
class Percentiles:
    """p50/p90/p99 and mean of some values (all None when there are none), and how many."""

    n: int
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None


def percentiles(values: Iterable[float]) -> Percentiles:
    data = np.asarray(list(values), dtype=float)
    if data.size == 0:
        return Percentiles(0, None, None, None, None)
    p50, p90, p99 = (float(v) for v in np.percentile(data, list(QUANTILES),
                                                     method=PERCENTILE_METHOD))
    return Percentiles(int(data.size), float(data.mean()), p50, p90, p99)


@dataclass(frozen=True)
class RequestMetrics:
    """One request's latencies; `queued_s` is admission - arrival, the part of TTFT spent
    waiting for a slot (0 in a closed loop)."""

    id: int
    output_tokens: int
    queued_s: float
    ttft_s: float | None
    tpot_s: float | None
    e2e_s: float
    itl_s: tuple[float, ...]


def _itl(record: RequestRecord) -> tuple[float, ...]:
    values: list[float] = []
    previous: float | None = None
    for e in record.emissions:
        if e.tokens == 0:
            continue
        if previous is None:
            values.extend([0.0] * (e.tokens - 1))
        else:
            values.extend([(e.at - previous) / e.tokens] * e.tokens)
        previous = e.at
    return tuple(values)


def request_metrics(record: RequestRecord) -> RequestMetrics:
    first = record.first_token_at
    n = record.output_tokens
    ttft = None if first is None else first - record.arrival
    e2e = record.finish - record.arrival
    tpot = None if ttft is None or n < 2 else (e2e - ttft) / (n - 1)
    return RequestMetrics(id=record.id, output_tokens=n,
                          queued_s=record.admission - record.arrival, ttft_s=ttft,
                          tpot_s=tpot, e2e_s=e2e, itl_s=_itl(record))


@dataclass(frozen=True)
class LatencyTarget:
    """A service-level target: a request meets it when each bound stated holds (<=). A
    request with one token has no TPOT and meets any TPOT bound: it had no second token to be
    late with. One that emitted no token meets no TTFT bound."""

    ttft_s: float | None = None
    tpot_s: float | None = None
    e2e_s: float | None = None

    def __post_init__(self) -> None:
        if self.ttft_s is None and self.tpot_s is None and self.e2e_s is None:
            raise UsageProblem("latency target: no bound given; state at least one of ttft, "
                               "tpot, e2e (seconds)")

    def met_by(self, m: RequestMetrics) -> bool:
        if self.ttft_s is not None and (m.ttft_s is None or m.ttft_s > self.ttft_s):
            return False
        if self.tpot_s is not None and m.tpot_s is not None and m.tpot_s > self.tpot_s:
            return False
        return self.e2e_s is None or m.e2e_s <= self.e2e_s


@dataclass(frozen=True)
class Goodput:
    """How many requests met the target, of how many, and those per second of the run."""

    target: LatencyTarget
    met: int
    requests: int
    requests_per_s: float


@dataclass(frozen=True)
class Acceptance:
    """Proposed and accepted tokens over the run; `proposals` counts the (request, step)
    pairs that proposed anything. Rate and mean length are None when nothing was proposed."""

    proposed: int
    accepted: int
    proposals: int
    rate: float | None
    mean_accepted_length: float | None


def acceptance(run: RunRecord) -> Acceptance:
    emissions = [e for r in run.requests for e in r.emissions]
    proposed = sum(e.proposed for e in emissions)
    accepted = sum(e.accepted for e in emissions)
    proposals = sum(1 for e in emissions if e.proposed > 0)
    return Acceptance(proposed, accepted, proposals,
                      accepted / proposed if proposed else None,
                      accepted / proposals if proposals else None)


@dataclass(frozen=True)
class ServingMetrics:
    """Everything one run measured. `steady_state` is None when the run is too short for the
    B asked for, and `steady_state_reason` then says why."""

    requests: tuple[RequestMetrics, ...]
    percentile_method: str
    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    whole_run: Window
    steady_state_b: int
    steady_state: Window | None
    steady_state_reason: str | None
    acceptance: Acceptance
    goodput: Goodput | None


def serving_metrics(run: RunRecord, *, steady_b: int, target: LatencyTarget | None = None,
                    energy: EnergyReading | None = None) -> ServingMetrics:
    """The run's metrics; `energy` reads joules between two readings of the run's clock (None:
    no sensor, and every energy figure is None with that reason)."""
    per_request = tuple(request_metrics(r) for r in run.requests)
    whole = whole_run(run, energy)
    steady, reason = steady_state(run, steady_b, energy)
    goodput = None
    if target is not None:
        met = sum(1 for m in per_request if target.met_by(m))
        goodput = Goodput(target, met, len(per_request), met / whole.duration_s)
    return ServingMetrics(
        requests=per_request, percentile_method=PERCENTILE_METHOD,
        ttft_s=percentiles(m.ttft_s for m in per_request if m.ttft_s is not None),
        tpot_s=percentiles(m.tpot_s for m in per_request if m.tpot_s is not None),
        itl_s=percentiles(v for m in per_request for v in m.itl_s),
        e2e_s=percentiles(m.e2e_s for m in per_request),
        whole_run=whole, steady_state_b=steady_b, steady_state=steady,
        steady_state_reason=reason, acceptance=acceptance(run), goodput=goodput)
