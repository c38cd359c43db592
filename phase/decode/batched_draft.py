"""The draft model serving many requests: one draft context with a sequence per request slot,
drafting every request that asked for a proposal in the same passes, as llama.cpp's
common/speculative and tools/server do with their slots.

A request's proposer (the fixed draft-k's, or auto's when it chooses the draft) does not draft
when asked: it leaves its request (`ask`) and answers nothing yet; once every request of the
step has been asked, `draft` runs one pass that catches each drafting sequence up with its
accepted tokens (its last row gives the first guess), then one pass per further guess over
every sequence that still wants one. The decoder then verifies each request's guesses.

Unlike the one-request DraftProposer, the draft does not re-evaluate the target's last verified
batch before drafting (its `mirror`): positions it keeps were computed by its own passes, so a
draft equal to the target can see a proposal rejected at a near-tie. That costs acceptance
only, never output: what is emitted is the target's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from phase.decode.native import NativeModel
from phase.policy.sampling import SamplingSettings, distribution, draw
from phase.policy.speculative_sampling import Rows


@dataclass
class _Ask:
    seq: list[int]
    k: int
    rng: np.random.Generator | None
    out: list[int]
    rows: list[np.ndarray]


class BatchedDraft:
    """A draft context whose sequence `slot` follows the request in the decoder's slot.

    Greedy (`settings` None): each guess is the draft's argmax. Sampled: each guess is a draw
    from the draft's distribution q (the run's sampler settings) with the request's own
    generator, and q's rows are kept for rejection sampling."""

    def __init__(self, model: NativeModel, settings: SamplingSettings | None = None) -> None:
        self.model, self.settings = model, settings
        self._cached: dict[int, list[int]] = {}  # slot -> the tokens at its positions 0..
        self._asks: dict[int, _Ask] = {}
        self.passes = 0  # draft passes run (a step's drafting is one catch-up + k - 1 more)

    def begin(self, slot: int, prompt: Sequence[int]) -> None:
        """Prefill the prompt (all but its last token) into the slot's sequence."""
        self.model.seq_remove(slot, 0)
        cached = self._cached[slot] = list(prompt[:-1])
        if cached:
            n = len(cached)
            self.model.decode_rows(cached, list(range(n)), [slot] * n, [False] * n)

    def free(self, slot: int) -> None:
        self.model.seq_remove(slot, 0)
        self._cached.pop(slot, None)
        self._asks.pop(slot, None)

    def ask(self, slot: int, seq: list[int], k: int, rng: np.random.Generator | None) -> None:
        """Draft up to k tokens after `seq` for `slot` at the next `draft`."""
        if k > 0:
            self._asks[slot] = _Ask(list(seq), k, rng, [], [])

    def asked(self, slot: int) -> int:
        """How many tokens `slot` asked for at the coming `draft` (0: none)."""
        ask = self._asks.get(slot)
        return ask.k if ask is not None else 0

    def draft(self) -> dict[int, tuple[list[int], Rows | None]]:
        """Every asked slot's guesses (and, sampling, their q rows), drafted together."""
        asks, self._asks = self._asks, {}
        if not asks:
            return {}
        tokens: list[int] = []
        positions: list[int] = []
        seqs: list[int] = []
        want: list[bool] = []
        for slot, ask in asks.items():
            feed, at = self._catch_up(slot, ask.seq)
            tokens.extend(feed)
            positions.extend(range(at, at + len(feed)))
            seqs.extend([slot] * len(feed))
            want.extend([False] * (len(feed) - 1) + [True])
        self._run(tokens, positions, seqs, want, asks)
        while busy := [(s, a) for s, a in asks.items() if len(a.out) < a.k]:
            rows = [(s, a.out[-1], len(self._cached[s])) for s, a in busy]
            for s, token, _ in rows:
                self._cached[s].append(token)
            self._run([t for _, t, _ in rows], [p for _, _, p in rows], [s for s, _, _ in rows],
                      [True] * len(rows), dict(busy))
        return {s: (a.out, a.rows if self.settings is not None else None)
                for s, a in asks.items()}

    def _catch_up(self, slot: int, seq: list[int]) -> tuple[list[int], int]:
        """The tokens of `seq` the slot's sequence lacks (at least its last, whose row gives
        the first guess) and the position they start at; positions past the agreement leave."""
        # A slot whose request never had its prompt read (auto's lazy draft) starts empty:
        # free() removed whatever its sequence held for the request before.
        cached = self._cached.setdefault(slot, [])
        n, limit = 0, min(len(cached), len(seq))
        while n < limit and cached[n] == seq[n]:
            n += 1
        n = min(n, len(seq) - 1)
        if n < len(cached):
            self.model.seq_remove(slot, n)
            del cached[n:]
        cached.extend(seq[n:])
        return seq[n:], n

    def _run(self, tokens: list[int], positions: list[int], seqs: list[int], want: list[bool],
             asks: dict[int, _Ask]) -> None:
        """One draft pass; each asked slot's guess comes from the row it asked logits for,
        in the order the slots' rows were laid out."""
        self.model.decode_rows(tokens, positions, seqs, want)
        self.passes += 1
        rows = [i for i, w in enumerate(want) if w]
        for row, ask in zip(rows, asks.values(), strict=True):
            if self.settings is None:
                ask.out.append(self.model.argmax(row))
                continue
            q = distribution(self.model.logits(row), self.settings)
            assert ask.rng is not None, "a sampled draft needs the request's generator"
            ask.out.append(draw(q, ask.rng))
            ask.rows.append(q)


class DraftSlot:
    """One request's handle on the batched draft, as the greedy proposers call a draft
    (DraftProposer's begin / restart / propose): `propose` only asks, and answers nothing
    until the decoder has run the step's drafting."""

    def __init__(self, draft: BatchedDraft, slot: int) -> None:
        self.draft, self.slot = draft, slot

    def begin(self, prompt: Sequence[int]) -> None:
        self.draft.begin(self.slot, prompt)

    def restart(self, prompt: Sequence[int]) -> None:
        self.draft.begin(self.slot, prompt)

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        self.draft.ask(self.slot, seq, max_tokens, None)
        return []


class SampledDraftSlot(DraftSlot):
    """The handle as the sampled proposers call a draft (DraftSampler's prepare / propose
    with the request's generator)."""

    def prepare(self, prompt: Sequence[int]) -> None:
        self.draft.begin(self.slot, prompt)

    def propose(self, seq: list[int], max_tokens: int,  # type: ignore[override]
                rng: np.random.Generator | None = None) -> tuple[list[int], Rows | None]:
        self.draft.ask(self.slot, seq, max_tokens, rng)
        return [], None
