"""A strategy's passes on a given text, for the bench only (Engine.run_on_reference).

The same forward passes, proposals and argmax per verified row as phase.decode.loops, but at
every position the reference's token is taken, whatever the target's argmax: what a strategy
costs on one text. Batched verification can flip a near-tie that a one-token pass would not,
and a flipped text may offer more or less to copy; following plain's text compares strategies
without that luck (bench/spec_bench.py's "on plain's text" arms). It is not greedy decoding,
so it counts the tokens where the reference overrode the target, and its result never becomes
a results-file run (DecodeResult.to_run refuses it). Kept apart from the loops a campaign
times, so those carry no branch for it.
"""

from __future__ import annotations

import time

from phase.decode.loops import Decoded, RawStep
from phase.decode.native import NativeModel
from phase.policy.proposers import Proposer


def plain_on_reference(target: NativeModel, prompt: list[int], n_tokens: int,
                       ref: list[int]) -> Decoded:
    """plain_loop's passes, each position taking ref's token (ref holds >= n_tokens)."""
    decode_one = target.decode_one
    clock = time.perf_counter
    out: list[int] = []
    append = out.append
    times: list[float] = []
    tick = times.append
    token, pos = prompt[-1], len(prompt) - 1
    overridden = 0
    for i in range(n_tokens):
        t = clock()
        token = decode_one(token, pos)
        if token != ref[i]:
            token = ref[i]
            overridden += 1
        tick(clock() - t)
        append(token)
        pos += 1
    return Decoded(out, [(0, 0, 0.0, dt * 1e3) for dt in times], None, overridden)


def speculate_on_reference(
    target: NativeModel, prompt: list[int], n_tokens: int, k: int, proposer: Proposer,
    ref: list[int],
) -> Decoded:
    """speculate_loop's steps, a proposal kept up to its first token that differs from ref
    and each step ending on ref's token (ref holds >= n_tokens)."""
    clock = time.perf_counter
    seq = list(prompt)
    start = len(seq)
    pos = start - 1  # KV position of seq[-1], the one token the target has not seen
    trace: list[RawStep] = []
    observe = getattr(proposer, "observe", None)
    overridden = 0
    while (remaining := n_tokens - (len(seq) - start)) > 0:
        limit = min(k, remaining - 1)
        t0 = clock()
        proposal = list(proposer.propose(seq, limit))[:limit]
        t1 = clock()
        target.decode([seq[-1], *proposal], pos, len(proposal) + 1)
        done = len(seq) - start
        # The argmax of every verified row is still read (the work speculate_loop does),
        # but the reference decides what is kept.
        want = ref[done:done + len(proposal) + 1]
        m = 0
        while m < len(proposal) and proposal[m] == want[m]:
            overridden += target.argmax(m) != want[m]
            m += 1
        overridden += target.argmax(m) != want[m]
        kept = [*proposal[:m], want[m]]
        if m < len(proposal):
            target.truncate(pos + m + 1)
        seq.extend(kept)
        pos += len(kept)
        t2 = clock()
        trace.append((len(proposal), m, (t1 - t0) * 1e3, (t2 - t1) * 1e3))
        if observe is not None:
            observe(len(proposal), m)
    return Decoded(seq[start:], trace, None, overridden)
