"""One timed decode and the result it makes: the wall and CPU time of a decoding loop, and
the DecodeResult built from it (the trace with auto's decisions, acceptance and timings).
Engine.run times each pass with these; they hold no model state.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

from phase.decode.loops import Decoded, Divergence, RawStep
from phase.policy.auto import Decision
from phase.policy.result import DecodeResult
from phase.policy.strategies import Strategy
from phase.results import Step


class Timed(NamedTuple):
    """The decode window: tokens, raw steps, wall and CPU seconds, unix start and end, and the
    evidence gathered on the way (per-token gaps where asked, the first divergence)."""

    generated: list[int]
    raw_trace: list[RawStep]
    decode_s: float
    cpu_s: float
    started_unix_s: float
    ended_unix_s: float
    gaps: list[float] | None
    divergence: Divergence | None
    overridden: int | None


def timed_decode(loop: Callable[[], Decoded], gaps: list[float] | None) -> Timed:
    started_unix = time.time()
    cpu0 = time.process_time()
    d0 = time.perf_counter()
    done = loop()
    decode_s = time.perf_counter() - d0
    cpu_s = time.process_time() - cpu0
    return Timed(done.generated, done.trace, decode_s, cpu_s, started_unix, time.time(),
                  gaps, done.divergence, done.overridden)


def decode_result(strategy: Strategy, prompt: list[int], timed: Timed, started_unix: float,
                  prefill_s: float, decisions: list[Decision] | None, text: str,
                  threads: tuple[int, int]) -> DecodeResult:
    """The DecodeResult of one timed decode: its trace with auto's decisions, acceptance (or
    why there is none), and the timings."""
    made: list[Decision | None] = (list(decisions) if decisions
                                   else [None] * len(timed.raw_trace))
    trace = [Step(proposed=p, accepted=a, propose_ms=p_ms, verify_ms=v_ms,
                  **(d.step_fields() if d is not None else {}))
             for (p, a, p_ms, v_ms), d in zip(timed.raw_trace, made, strict=True)]
    drafted = sum(s.proposed for s in trace)
    accepted = sum(s.accepted for s in trace)
    if not strategy.family.takes_k:
        acceptance, reason = None, "plain decoding proposes no tokens"
    elif drafted == 0:
        acceptance, reason = None, "no tokens were proposed in this run"
    else:
        acceptance, reason = accepted / drafted, None
    generated, decode_s = timed.generated, timed.decode_s
    return DecodeResult(
        strategy=strategy.label,
        k=strategy.k,
        token_ids=generated,
        text=text,
        prompt_tokens=len(prompt),
        prefill_s=prefill_s,
        decode_s=decode_s,
        tokens_per_s=len(generated) / decode_s if decode_s > 0 else 0.0,
        steps=len(trace),
        drafted=drafted,
        accepted=accepted,
        acceptance=acceptance,
        acceptance_reason=reason,
        trace=trace,
        cpu_s=timed.cpu_s,
        started_unix_s=started_unix,
        ended_unix_s=time.time(),
        decode_started_unix_s=timed.started_unix_s,
        decode_ended_unix_s=timed.ended_unix_s,
        n_threads=threads[0],
        n_threads_batch=threads[1],
        top2_gaps=timed.gaps,
        divergence_index=timed.divergence.at if timed.divergence else None,
        divergence_gap=timed.divergence.gap if timed.divergence else None,
        overridden=timed.overridden,
    )
