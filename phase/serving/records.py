"""What a load generator records of one run, and the load it was asked for.

Every time here is a reading of the run's clock (seconds, `time.perf_counter` unless a test
injects another), not an offset from the start: an energy reading taken on the same clock can
then be asked for any window without converting. `RunRecord.started` is the origin.

All of it is frozen dataclasses of ints, floats, strings and tuples, so `dataclasses.asdict`
gives plain JSON and `run_from_json` (pydantic, which validates stdlib dataclasses) reads it
back; a later results schema can hold these as they are.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from phase.base.errors import UsageProblem


def _at_least_one(name: str, value: int) -> None:
    if value < 1:
        raise UsageProblem(f"{name}: {value} is not a count of requests; give an integer >= 1")


# the closed-loop concurrencies a study sweeps unless told otherwise
DEFAULT_CONCURRENCIES = (1, 2, 4, 8)


@dataclass(frozen=True)
class ClosedLoop:
    """Closed loop: `concurrency` clients, each sending its next request when its last one
    finished, until `n_requests` are served. No request ever waits for a slot, so arrival and
    admission coincide."""

    concurrency: int
    n_requests: int
    max_new_tokens: int
    seed: int
    kind: Literal["closed"] = "closed"

    def __post_init__(self) -> None:
        _at_least_one("concurrency", self.concurrency)
        _at_least_one("n_requests", self.n_requests)
        _at_least_one("max_new_tokens", self.max_new_tokens)


@dataclass(frozen=True)
class OpenLoop:
    """Open loop, as vLLM's `--request-rate` / `--max-concurrency`: requests arrive as a seeded
    Poisson process at `request_rate` per second whatever the server is doing (None: all at
    the start, vLLM's `inf`, which JSON cannot hold), and at most `max_concurrency` are served
    at once (None: as many as the decoder holds); arrivals past the cap queue, and their time
    to first token counts the wait."""

    request_rate: float | None
    n_requests: int
    max_new_tokens: int
    seed: int
    max_concurrency: int | None = None
    kind: Literal["open"] = "open"

    def __post_init__(self) -> None:
        rate = self.request_rate
        if rate is not None and not (math.isfinite(rate) and rate > 0):
            raise UsageProblem(f"request_rate: {rate} is not a rate; give requests per second "
                               f"> 0, or none for every request at once")
        _at_least_one("n_requests", self.n_requests)
        _at_least_one("max_new_tokens", self.max_new_tokens)
        if self.max_concurrency is not None:
            _at_least_one("max_concurrency", self.max_concurrency)


Load = Annotated[ClosedLoop | OpenLoop, Field(discriminator="kind")]


@dataclass(frozen=True)
class EmissionRecord:
    """One step's output for one request: when the driver saw it, how many tokens it carried,
    and how many tokens were proposed for the request on that step and how many accepted."""

    at: float
    tokens: int
    proposed: int
    accepted: int


@dataclass(frozen=True)
class RequestRecord:
    """One request's life: `prompt_index` is its prompt's place in the list the run drew from;
    `arrival` is when it was sent (open loop: its scheduled Poisson time), `admission` when
    the decoder took it (prefill starts), `finish` when the step that ended it returned."""

    id: int
    prompt_index: int
    prompt_tokens: int
    max_new_tokens: int
    arrival: float
    admission: float
    finish: float
    emissions: tuple[EmissionRecord, ...]

    @property
    def output_tokens(self) -> int:
        return sum(e.tokens for e in self.emissions)

    @property
    def first_token_at(self) -> float | None:
        """When its first token came out (None when it ended without emitting one)."""
        return next((e.at for e in self.emissions if e.tokens > 0), None)


@dataclass(frozen=True)
class StepRecord:
    """One decoder step: when it started and returned, how many requests it served and how
    many tokens its llama_decode carried."""

    started: float
    ended: float
    active: int
    batch_tokens: int


@dataclass(frozen=True)
class RunRecord:
    """One run of a load generator: the load, the clock readings that bound it, every request
    (in arrival order) and every step."""

    load: Load
    started: float
    ended: float
    requests: tuple[RequestRecord, ...]
    steps: tuple[StepRecord, ...] = field(default=())


_RUN = TypeAdapter(RunRecord)


def to_jsonable(record: Any) -> Any:
    """A record or metrics dataclass as plain JSON values (dicts, lists, numbers, strings)."""
    return asdict(record)


def run_to_json(run: RunRecord) -> str:
    # allow_nan=False: a NaN or infinity would be written as a token JSON does not have
    return json.dumps(to_jsonable(run), allow_nan=False)


def run_from_json(text: str) -> RunRecord:
    return _RUN.validate_json(text)
