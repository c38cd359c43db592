"""What a decoder that serves many requests at once offers the code that drives it.

The serving study's load generators (`phase.serving`) drive any `BatchDecoder`: the real one
batches every active request into one llama_decode per step (`phase.decode.batched`); tests
drive the load generators with a scripted one. Keeping the interface here, in pure policy,
lets load generation and serving metrics be tested without a model and keeps them from
reaching into model access.

Time is the caller's: the decoder reports what each step emitted and the driver stamps it
with its own clock, so a request's time to first token is measured from its arrival, queueing
included, as serving benchmarks do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Request:
    """One request: its id (unique within a run), the prompt's token ids and how many tokens
    to generate at most (a request also ends at an end-of-generation token)."""

    id: int
    prompt: tuple[int, ...]
    max_new_tokens: int


@dataclass(frozen=True)
class Emission:
    """What one step did for one active request: the tokens it emitted (the accepted part of
    a proposal plus the target's own token; several on a step where speculation paid), how
    many tokens were proposed for it and how many of those were accepted, and whether the
    request ended on this step (its sequence is then freed)."""

    request_id: int
    tokens: tuple[int, ...]
    proposed: int
    accepted: int
    finished: bool


@dataclass(frozen=True)
class StepReport:
    """One step: an emission per request that was active in it, and how many tokens the
    step's llama_decode carried (every request's next token plus its proposal)."""

    emissions: tuple[Emission, ...]
    batch_tokens: int


class BatchDecoder(Protocol):
    """Continuous batching, one step at a time.

    `admit` takes a request into a free sequence and prefills its prompt (all but the last
    token); its first token comes out of the next `step`. `step` runs one decode over every
    active request and frees the sequences of those that finished. `capacity` is how many
    requests may be active at once (the context's n_seq_max)."""

    @property
    def capacity(self) -> int: ...

    def active(self) -> int:
        """How many requests are admitted and not yet finished."""

    def admit(self, request: Request) -> None:
        """Take a request into a free sequence (ValueError when none is free)."""

    def step(self) -> StepReport:
        """One decode over every active request (an empty report when none is)."""
