"""The two decode loops, timed by the engine: plain (one token per target pass) and speculative
(a proposer's tokens verified in one target pass per step). See phase.decode.engine for the
step's definition; these are the hot paths, kept free of anything but the work and its clock.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from phase.decode.native import NativeModel
from phase.policy.acceptance import greedy_verdict
from phase.policy.proposers import Proposer

# One target pass as timed in the hot loop: proposed, accepted, propose ms, verify ms. Steps
# are built from these after the decode window closes, so validation stays out of the timing.
RawStep = tuple[int, int, float, float]


class Divergence(NamedTuple):
    """Where a run first left its reference, and the top-2 logit gap of the pass there."""

    at: int  # not `index`, which would shadow tuple.index
    gap: float


class Decoded(NamedTuple):
    """A loop's outcome: the tokens, one RawStep per target pass, the first divergence from
    the reference, and how many of the reference's tokens overrode the target's own argmax
    (None but in phase.decode.reference_loop, which follows a given text)."""

    generated: list[int]
    trace: list[RawStep]
    divergence: Divergence | None
    overridden: int | None = None


def plain_loop(target: NativeModel, prompt: list[int], n_tokens: int, ref: list[int],
               gaps: list[float] | None) -> Decoded:
    # The hot loop: locals only, one ctypes decode and one argmax over a zero-copy view per
    # token, one comparison with the reference until the first divergence (then none);
    # step records are built after the loop.
    decode_one = target.decode_one
    clock = time.perf_counter
    out: list[int] = []
    append = out.append
    times: list[float] = []
    tick = times.append
    token, pos = prompt[-1], len(prompt) - 1
    compare = min(len(ref), n_tokens)
    divergence: Divergence | None = None
    for i in range(n_tokens):
        t = clock()
        token = decode_one(token, pos)
        tick(clock() - t)
        append(token)
        pos += 1
        if gaps is not None:
            gaps.append(target.top2_gap(0))
        if i < compare and token != ref[i]:
            divergence = Divergence(i, target.top2_gap(0))
            compare = 0
    return Decoded(out, [(0, 0, 0.0, dt * 1e3) for dt in times], divergence)


def speculate_loop(
    target: NativeModel, prompt: list[int], n_tokens: int, k: int, proposer: Proposer,
    ref: list[int],
) -> Decoded:
    clock = time.perf_counter
    seq = list(prompt)
    start = len(seq)
    pos = start - 1  # KV position of seq[-1], the one token the target has not seen
    trace: list[RawStep] = []
    # `auto` and the adaptive n-gram length learn from every step's outcome.
    observe = getattr(proposer, "observe", None)
    divergence: Divergence | None = None
    watch = bool(ref)  # compare with the reference until the first divergence
    while (remaining := n_tokens - (len(seq) - start)) > 0:
        limit = min(k, remaining - 1)
        t0 = clock()
        # Asked even when nothing may be proposed (the last token): `auto` records a
        # decision for every step, and the others answer [] at once.
        proposal = list(proposer.propose(seq, limit))[:limit]
        t1 = clock()
        target.decode([seq[-1], *proposal], pos, len(proposal) + 1)
        done = len(seq) - start
        m, kept = greedy_verdict(proposal, target.argmax)
        kept = kept[:remaining]  # never trims while limit < remaining
        if watch and kept != ref[done:done + len(kept)]:
            # kept[j] is the argmax of logits row j, so row j holds the evidence.
            j = next(j for j, t in enumerate(kept) if done + j >= len(ref)
                     or t != ref[done + j])
            if done + j < len(ref):
                divergence = Divergence(done + j, target.top2_gap(j))
            watch = False
        if m < len(proposal):
            target.truncate(pos + m + 1)
        seq.extend(kept)
        pos += len(kept)
        t2 = clock()
        trace.append((len(proposal), m, (t1 - t0) * 1e3, (t2 - t1) * 1e3))
        if observe is not None:
            observe(len(proposal), m)
    return Decoded(seq[start:], trace, divergence)
