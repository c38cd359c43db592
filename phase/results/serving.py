"""Schema 14: what a serving run records (the serving study: many requests decoded together).

A serving campaign has a factor of kind `concurrency`; at each level a run is one load
(phase.serving.load: closed loop, or open loop at `config.serving.request_rate`) of
`config.serving.requests` requests, at most the level's number decoded at once, drawn in a
seeded order from the campaign's prompts (config.prompts: the workload's). The run's own
fields describe the whole load, so every summary, interval and ratio that phase computes for
one-request runs applies to it unchanged:

* `prompt` is `config.serving.pool` (the name of the set the requests drew from), not one
  prompt; each request names its own prompt;
* `tokens` is every request's output tokens, `decode_s` the whole run on the load generator's
  clock (admissions, prefills and steps), `tokens_per_s` their ratio (aggregate output tokens
  per second); `prompt_tokens` the requests' prompt tokens together, `prefill_s` the time spent
  admitting them; `steps` the decoder's steps, `drafted` / `accepted` summed over requests;
* the energy windows (`Run.energy`) span the whole run, so energy per token is the whole-run
  figure; the steady-state window's energy (ML.ENERGY's, phase.serving.windows) is integrated
  from the run's sensor samples and recorded in `ServingRun.steady_state`;
* `token_ids` are the requests' outputs one after the other in request id order, and
  `matches_plain` says whether every request's output equals plain single-request greedy
  decoding of its prompt (`ServingRequest.matches_plain` per request; a request that differs
  records where, `first_divergence`, and both passes' top-2 logit gaps there, as a
  one-request run does).

Times inside a ServingRun are seconds from the run's start on the load generator's clock.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from phase.results.base import FiniteFloat, NonNegFloat, NonNegInt, PosInt, Strict
from phase.results.base import paired as _paired


class LatencyTargetRecord(Strict):
    """The service-level target goodput counts against: a request meets it when every bound
    given holds (phase.serving.metrics.LatencyTarget)."""

    ttft_s: NonNegFloat | None = None
    tpot_s: NonNegFloat | None = None
    e2e_s: NonNegFloat | None = None


class ServingConfig(Strict):
    """How every serving run of the campaign loads the decoder: a closed loop (`concurrency`
    clients, each sending its next request when its last one finished) or an open loop
    (requests arriving as a seeded Poisson process at `request_rate` per second, at most
    `concurrency` served at once, later arrivals queued: vLLM's --request-rate with
    --max-concurrency). The run's concurrency level is the cap either way."""

    load: Literal["closed", "open"] = "closed"
    # requests per second of an open loop (None in a closed loop)
    request_rate: FiniteFloat | None = Field(default=None, gt=0)
    # requests per run (each run serves this many, `concurrency` at a time)
    requests: PosInt
    # B of the steady-state window: from the B-th request's first token to the (N-B)-th's
    steady_state_b: PosInt
    # the name runs' `prompt` field carries: the set of prompts requests draw from
    pool: str = Field(min_length=1)
    latency_target: LatencyTargetRecord | None = None
    # Schema 17: what seeds each run's request order (phase.results.levels.serving_seed).
    # "load": the run's repeat and levels, so every strategy of one repeat at one level serves
    # the same requests in the same order (and an open loop's the same arrival times), and
    # their ratio compares strategies on one load. Absent (every file before 17): the run's
    # own id, so each run drew its own order.
    order_seed: Literal["load"] | None = Field(default=None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _check_load(self) -> ServingConfig:
        if (self.load == "open") != (self.request_rate is not None):
            raise ValueError("request_rate is given exactly when load is 'open'")
        return self


class ServingRequest(Strict):
    """One request of a serving run: its prompt, its clock readings (seconds from the run's
    start), what it produced and its latencies (phase.serving.metrics.request_metrics)."""

    id: NonNegInt
    prompt: str
    prompt_tokens: PosInt
    arrival_s: NonNegFloat
    admission_s: NonNegFloat
    first_token_s: NonNegFloat | None
    finish_s: NonNegFloat
    output_tokens: NonNegInt
    token_ids: list[NonNegInt]
    proposed: NonNegInt
    accepted: NonNegInt
    ttft_s: NonNegFloat | None
    tpot_s: NonNegFloat | None
    e2e_s: NonNegFloat
    matches_plain: bool | None
    matches_plain_reason: str | None = None
    # Where a request that differs from plain first parts from it (an index into its
    # token_ids), and the evidence there: the top-2 logit gap of the batched pass's row that
    # emitted the differing token, and of the plain reference's pass at the same position
    # (its `top2_gaps` entry). None where the request matches, and in files written before
    # serving runs recorded them (optional: no schema version of its own).
    first_divergence: NonNegInt | None = None
    divergence_gap_verify: NonNegFloat | None = None
    divergence_gap_reference: NonNegFloat | None = None
    # Seconds of the target's prefill of this request's prompt (all but its last token) at
    # admission, that pass alone: the same work in every run serving the same prompts, the
    # yardstick of phase.analysis.slowdown's prefill test. None for a one-token prompt (no
    # prefill), and in files written before runs recorded it (optional, as above).
    prefill_s: NonNegFloat | None = None

    @model_validator(mode="after")
    def _check(self) -> ServingRequest:
        _paired(self.matches_plain, self.matches_plain_reason, "matches_plain")
        return self


class ServingPercentiles(Strict):
    """p50/p90/p99 and mean (numpy's linear method), None when there are no values."""

    n: NonNegInt
    mean: NonNegFloat | None
    p50: NonNegFloat | None
    p90: NonNegFloat | None
    p99: NonNegFloat | None


class ServingWindow(Strict):
    """A span of the run (seconds from its start) and what it served, with its energy (None
    with a reason where no sensor could say)."""

    name: Literal["whole run", "steady state"]
    start_s: NonNegFloat
    end_s: NonNegFloat
    duration_s: NonNegFloat
    output_tokens: NonNegInt
    finished_requests: NonNegInt
    output_tokens_per_s: NonNegFloat
    requests_per_s: NonNegFloat
    energy_j: NonNegFloat | None
    energy_per_token_j: NonNegFloat | None
    energy_per_request_j: NonNegFloat | None
    energy_reason: str | None = None


class ServingRun(Strict):
    """A serving run's load and what its load generator recorded and derived."""

    concurrency: PosInt
    # the seed the request order was drawn with (and sampled requests' generators)
    seed: int
    requests: list[ServingRequest] = Field(min_length=1)
    # the decoder's steps and the mean number of requests each served
    steps: NonNegInt
    mean_batch: NonNegFloat
    ttft_s: ServingPercentiles
    tpot_s: ServingPercentiles
    itl_s: ServingPercentiles
    e2e_s: ServingPercentiles
    whole_run: ServingWindow
    steady_state: ServingWindow | None
    steady_state_reason: str | None = None
    # requests that met config.serving.latency_target, and those per second of the run
    goodput_met: NonNegInt | None = None
    goodput_requests_per_s: NonNegFloat | None = None
    # accepted tokens per (request, step) that proposed anything; None: nothing proposed
    mean_accepted_length: FiniteFloat | None = None

    @model_validator(mode="after")
    def _check(self) -> ServingRun:
        _paired(self.steady_state, self.steady_state_reason, "steady_state")
        return self
