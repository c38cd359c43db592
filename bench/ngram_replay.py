"""Replay n-gram proposers against a campaign's plain outputs, counting work instead of time.

    .venv/bin/python -m bench.ngram_replay results/speculative-x86_64-2c-2026-11-30.json \
        [--cost 11,30] [--cost 41@1,282@9,950@49] [--prompts edit,code,prose]

Greedy speculation yields plain decoding's tokens, so whether a guess would be kept can be
read off the plain reference: a proposal is kept up to its first token that differs. Each
proposer is replayed over every prompt's reference (its prompt re-tokenized with the
campaign's chat template) and scored by passes, proposed and kept tokens, verified rows and
its speed relative to plain decoding under a cost curve c_t(b) of a b-row pass: `c0,c1`
for c0 + c1·b, or `ms@b,...` points joined by straight lines (the issue's measurements on
the 2-core host: 41 ms for one row, 282 ms for nine; ~950 ms for 49 rows inferred from
llama.cpp's ngram-simple speed). No wall time is measured, so this runs on a busy machine.

With --profile, the curve is instead the results file's own profile at each prompt's mid-run
fill (its target passes and its n-gram lookup), the costs the campaign's predictions use.

Replayed: phase's ngram (its adaptive length, and a fixed 4) and auto (with a CPU-like curve,
no draft), and re-implementations of llama.cpp's ngram-simple (12-token key, up to 48
tokens), ngram-map-k (the same key, the last accepted count per key) and ngram-mod (24-token
context chained, 48..64 tokens). Last, a ceiling for choosing lengths over phase's matcher: an
oracle that sees the matcher's continuation and the reference, and proposes at each step the
length worth most under the curve, knowing how much of it will be kept (step by step, greedy).
"""

from __future__ import annotations

import argparse
import bisect
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from phase.costmodel import CostTable, Curve, cost_table
from phase.policy.auto import AutoProposer
from phase.policy.ngram import NgramMatcher
from phase.policy.proposers import AdaptiveNgramProposer, NgramProposer
from phase.policy.strategies import NGRAM_K, NGRAM_N_MAX, NGRAM_N_MIN

Cost = Callable[[int], float]


class Simple:
    """llama.cpp ngram-simple: the latest earlier occurrence of the last n tokens, then up to
    m tokens after it (none when fewer than n follow)."""

    def __init__(self, n: int = 12, m: int = 48) -> None:
        self.n, self.m = n, m

    def begin(self, prompt: Sequence[int]) -> None:
        pass

    def propose(self, seq: list[int], limit: int) -> list[int]:
        n, cur = self.n, len(seq)
        if cur <= n + self.m + 1:
            return []
        key = seq[cur - n:]
        for j in range(cur - n - 1, 0, -1):
            if seq[j:j + n] == key:
                span = min(self.m, cur - (j + n))
                return [] if span < n else seq[j + n:j + n + min(span, limit)]
        return []


class MapK(Simple):
    """llama.cpp ngram-map-k: ngram-simple's key, the value at least n + m tokens back, and
    as many tokens as were accepted the last time this key proposed."""

    def begin(self, prompt: Sequence[int]) -> None:
        self.accepted: dict[tuple[int, ...], int] = {}
        self.last: tuple[int, ...] | None = None

    def propose(self, seq: list[int], limit: int) -> list[int]:
        n, m, cur = self.n, self.m, len(seq)
        self.last = None
        if cur < 2 * n + m:
            return []
        key = tuple(seq[cur - n:])
        for j in range(cur - n - m - 2, 0, -1):
            if tuple(seq[j:j + n]) == key:
                self.last = key
                return seq[j + n:j + n + min(m, self.accepted.get(key, m), limit)]
        return []

    def observe(self, proposed: int, accepted: int) -> None:
        if self.last is not None:
            self.accepted[self.last] = accepted


class Mod:
    """llama.cpp ngram-mod: the token after each 24-token context (latest wins), chained
    from the sequence's end; proposed only when the chain reaches 48 tokens (at most 64)."""

    def __init__(self, n: int = 24, n_min: int = 48, n_max: int = 64) -> None:
        self.n, self.n_min, self.n_max = n, n_min, n_max

    def begin(self, prompt: Sequence[int]) -> None:
        self.next: dict[tuple[int, ...], int] = {}
        self.indexed = 0
        self._add(list(prompt))

    def _add(self, seq: list[int]) -> None:
        for i in range(self.indexed, len(seq) - self.n):
            self.next[tuple(seq[i:i + self.n])] = seq[i + self.n]
        self.indexed = max(self.indexed, len(seq) - self.n)

    def propose(self, seq: list[int], limit: int) -> list[int]:
        if self.indexed + 32 < len(seq):
            self._add(seq)
        context, out = list(seq[-self.n:]), []
        for i in range(self.n_max):
            token = self.next.get(tuple(context[-self.n:]))
            if token is None:
                if i < self.n_min:
                    return []
                break
            out.append(token)
            context.append(token)
        return out[:limit]


class Oracle:
    """phase's matcher, each proposal cut knowing the outcome: the length with the largest
    surplus over plain decoding (`auto.best_proposal`'s measure) when the first `kept` tokens of the
    continuation are right: what choosing a length at each step could reach on this text,
    with this matcher's guesses."""

    def __init__(self, reference: Sequence[int], prompt_tokens: int, cost: Cost,
                 k_max: int = 16) -> None:
        self.reference, self.prompt_tokens, self.cost = reference, prompt_tokens, cost
        self.k_max = k_max

    def begin(self, prompt: Sequence[int]) -> None:
        self.matcher = NgramMatcher()
        self.matcher.begin(prompt)

    def propose(self, seq: list[int], limit: int) -> list[int]:
        guess = self.matcher.lookup(seq, min(self.k_max, limit)).continuation
        done = len(seq) - self.prompt_tokens
        kept = 0
        while kept < len(guess) and guess[kept] == self.reference[done + kept]:
            kept += 1
        plain = self.cost(1)
        values = [1 + min(k, kept) - self.cost(k + 1) / plain for k in range(len(guess) + 1)]
        return guess[:max(range(len(values)), key=values.__getitem__)]


def replay(proposer, prompt: list[int], reference: list[int]) -> list[tuple[int, int]]:
    """(proposed, kept) per target pass, as verification against `reference` would judge."""
    proposer.begin(prompt)
    seq, done, steps = list(prompt), 0, []
    observe = getattr(proposer, "observe", None)
    while done < len(reference):
        limit = len(reference) - done - 1
        proposal = list(proposer.propose(seq, limit))[:limit]
        kept = 0
        while kept < len(proposal) and proposal[kept] == reference[done + kept]:
            kept += 1
        seq.extend(reference[done:done + kept + 1])
        done += kept + 1
        steps.append((len(proposal), kept))
        if observe is not None:
            observe(len(proposal), kept)
    return steps


def parse_cost(text: str) -> Cost:
    if "@" not in text:
        c0, c1 = (float(v) for v in text.split(","))
        return lambda b: c0 + c1 * b
    points = sorted((int(b), float(ms)) for ms, b in (p.split("@") for p in text.split(",")))
    sizes, costs = [b for b, _ in points], [c for _, c in points]

    def cost(b: int) -> float:
        if b <= sizes[0]:
            return costs[0]
        i = min(max(bisect.bisect_left(sizes, b), 1), len(sizes) - 1)
        return costs[i - 1] + (costs[i] - costs[i - 1]) * (b - sizes[i - 1]) / (
            sizes[i] - sizes[i - 1])

    return cost


def proposers(cost: Cost, lookup_ms: float = 0.05) -> dict[str, Callable[[], object]]:
    table = CostTable("ms", Curve(tuple(range(1, 18)), tuple(cost(b) for b in range(1, 18))),
                      None, lookup_ms, 0)
    return {
        f"phase ngram (adaptive, up to {NGRAM_K})": lambda: AdaptiveNgramProposer(
            NGRAM_N_MIN, NGRAM_N_MAX, NGRAM_K),
        "phase ngram-4 (fixed)": lambda: _Capped(NgramProposer(NGRAM_N_MIN, NGRAM_N_MAX), 4),
        "phase ngram (2-4, k 8; before)": lambda: _Capped(_OldNgram(), 8),
        "phase auto": lambda: AutoProposer(table, None),
        "llama.cpp ngram-simple": Simple,
        "llama.cpp ngram-map-k": MapK,
        "llama.cpp ngram-mod": Mod,
    }


class _Capped:
    def __init__(self, inner, k: int) -> None:
        self.inner, self.k = inner, k

    def begin(self, prompt: Sequence[int]) -> None:
        self.inner.begin(prompt)

    def propose(self, seq: list[int], limit: int) -> list[int]:
        return self.inner.propose(seq, min(self.k, limit))


class _OldNgram:
    """The previous ngram proposer: the most recent occurrence of the longest suffix of
    4, 3 or 2 tokens (kept here to show what the new defaults replaced)."""

    def begin(self, prompt: Sequence[int]) -> None:
        self.seen: dict[tuple[int, ...], int] = {}
        self.indexed = 0

    def propose(self, seq: list[int], limit: int) -> list[int]:
        for end in range(self.indexed, len(seq) - 1):
            for n in (2, 3, 4):
                if end - n + 1 >= 0:
                    self.seen[tuple(seq[end - n + 1:end + 1])] = end + 1
        self.indexed = max(self.indexed, len(seq) - 1)
        for n in (4, 3, 2):
            start = self.seen.get(tuple(seq[-n:])) if len(seq) > n else None
            if start is not None:
                return seq[start:start + limit]
        return []


def main(argv: list[str] | None = None) -> int:
    from phase.decode import Engine
    from phase.models.sources import resolve
    from phase.results import load_raw

    p = argparse.ArgumentParser(prog="bench/ngram_replay.py", description=__doc__.split("\n\n")[0])
    p.add_argument("results", type=Path)
    p.add_argument("--cost", action="append", help="c0,c1 or ms@b,... (repeatable)")
    p.add_argument("--profile", action="store_true",
                   help="price with the results file's own profile (instead of --cost)")
    p.add_argument("--prompts", default=None, help="comma list (default: all)")
    args = p.parse_args(argv)
    results = load_raw(args.results)
    if args.profile and results.profile is None:
        p.error(f"{args.results}: no cost profile (files before schema 4 have none); "
                "give --cost instead")
    costs = [] if args.profile else args.cost or ["11,30", "41@1,282@9,950@49"]
    refs = {r.prompt: r.token_ids for r in results.references}
    wanted = args.prompts.split(",") if args.prompts else list(refs)
    target = next(m for m in results.models if m.role == "target")
    with Engine(resolve(target.name).path, n_ctx=results.config.n_ctx, n_threads=1) as engine:
        prompts = {s.name: engine.format_prompt(s.text, chat_template=results.config.chat_template)
                   for s in results.config.prompts}
    for name in wanted:
        prompt, reference = prompts[name], refs[name]
        print(f"== {name}: {len(prompt)} prompt tokens, {len(reference)} generated")
        curves: list[tuple[str, Cost, float]] = [(t, parse_cost(t), 0.05) for t in costs]
        if args.profile:
            assert results.profile is not None
            table = cost_table(results.profile, len(prompt) + len(reference) // 2)
            curves.append((f"the file's profile at fill {len(prompt) + len(reference) // 2}",
                           table.target, table.lookup))
        for text, cost, lookup in curves:
            print(f"  cost curve {text} (auto decides with it)")
            makers = proposers(cost, lookup) | {
                "oracle (ceiling)": partial(Oracle, reference, len(prompt), cost)}
            for label, make in makers.items():
                steps = replay(make(), prompt, reference)
                proposed, kept = sum(s for s, _ in steps), sum(k for _, k in steps)
                rows = sum(s + 1 for s, _ in steps)
                speed = len(reference) * cost(1) / sum(cost(s + 1) + lookup for s, _ in steps)
                print(f"    {label:32s} passes {len(steps):4d} proposed {proposed:4d} "
                      f"kept {kept:4d} ({kept / max(proposed, 1):.0%}) rows {rows:5d}  "
                      f"{speed:.2f}x plain")
    return 0


if __name__ == "__main__":
    sys.exit(main())
