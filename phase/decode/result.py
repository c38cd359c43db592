"""What one decoding run returns, and the greedy-equivalence check against plain."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class StepRecord:
    """One target forward pass in decode: tokens proposed to it, how many it kept, and the
    wall time spent proposing (draft model or n-gram lookup) and verifying (target pass)."""

    proposed: int
    accepted: int
    draft_ms: float
    verify_ms: float


@dataclass
class DecodeResult:
    """One run. Times are seconds (wall clock, perf_counter) unless named otherwise.

    - prefill_s: the prompt through every model in play (all but its last token; see Engine)
    - decode_s: from the first decode step to the last; tokens_per_s = len(token_ids)/decode_s
    - steps: target forward passes in decode; drafted/accepted count proposed tokens
    - acceptance: accepted/drafted, or None with acceptance_reason when nothing was proposed
    - cpu_s: process CPU time (all threads) over the decode window, the window energy covers
    - started/ended_unix_s: the whole run; decode_started/ended_unix_s: the decode window
    """

    strategy: str
    k: int | None
    token_ids: list[int]
    text: str
    prompt_tokens: int
    prefill_s: float
    decode_s: float
    tokens_per_s: float
    steps: int
    drafted: int
    accepted: int
    acceptance: float | None
    acceptance_reason: str | None
    trace: list[StepRecord]
    cpu_s: float
    started_unix_s: float
    ended_unix_s: float
    decode_started_unix_s: float
    decode_ended_unix_s: float
    n_threads: int = 0
    n_threads_batch: int = 0

    @property
    def tokens(self) -> int:
        return len(self.token_ids)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def compare_to_plain(token_ids: Sequence[int], plain_ids: Sequence[int]) -> tuple[bool, int | None]:
    """(matches_plain, first_divergence_index). Greedy speculation should reproduce plain
    decoding exactly; where batched and single-token numerics pick a different argmax it will
    not, and the index says where the outputs part (None when they are identical)."""
    for i, (a, b) in enumerate(zip(token_ids, plain_ids, strict=False)):
        if a != b:
            return False, i
    if len(token_ids) != len(plain_ids):
        return False, min(len(token_ids), len(plain_ids))
    return True, None
