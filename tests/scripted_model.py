"""A scripted stand-in for phase.decode.native.NativeModel over a tiny vocabulary, for the
exactness tests that drive the real sampled loop (phase.decode.sampled) with many draws.

Its KV memory is kept as llama.cpp keeps it: cells of (position, token), a decode appends one
per token, `truncate(n)` drops the cells at positions >= n, and a row's logits are a function
of every cell at or before the row's position, in position order. So the loop's rollback is
what decides the context each later row sees: a rejected proposal left in the memory (or a
kept one removed) changes every later row, as it would change the real model's attention.

The logits are scripted, `LOGITS(context)`: the token after `last` is favoured (its logit
2.0), the one after that is close behind (1.7), and every token gets a term drawn from a
generator seeded by the whole context (the prompt included), so every distinct context has its
own row. A second `salt` gives the draft its own, different rows. Or the rows come from a
real model (`rows`), so the loop runs thousands of times over its rows without its passes.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Callable, Sequence

import numpy as np

VOCAB = 8
NOISE = 0.6  # the context's own term: large enough that a changed context moves its row


def logits(context: Sequence[int], salt: int = 0) -> np.ndarray:
    """The scripted row after `context` (its last token decides the favoured ones)."""
    digest = hashlib.blake2b(bytes([salt, *context]), digest_size=8).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "little"))
    row = rng.uniform(-1.5, 0.5, VOCAB) + rng.normal(0.0, NOISE, VOCAB)
    last = context[-1]
    row[(last + 1) % VOCAB] = 2.0 + (0.3 * rng.normal() if salt else 0.0)
    row[(last + 2) % VOCAB] = 1.7 + NOISE * rng.normal()
    return row.astype(np.float32)


class ScriptedModel:
    """The NativeModel calls the sampled loops make: clear, truncate, decode, logits."""

    n_ctx = n_batch = 512

    def __init__(self, salt: int = 0,
                 rows: Callable[[tuple[int, ...]], np.ndarray] | None = None) -> None:
        """`rows`: another source of each context's logits (a real model's, cached)."""
        self.salt = salt
        self.rows = rows
        self.cells: list[tuple[int, int]] = []
        self._rows: list[tuple[int, ...]] = []
        self._cache: dict[tuple[int, ...], np.ndarray] = {}

    def clear(self) -> None:
        self.cells = []

    def truncate(self, n_keep: int) -> None:
        self.cells = [c for c in self.cells if c[0] < n_keep]

    def decode(self, tokens: list[int], pos0: int, n_logits: int) -> None:
        self.cells.extend((pos0 + i, t) for i, t in enumerate(tokens))
        ordered = sorted(self.cells, key=lambda c: c[0])  # stable: insertion order on ties
        positions = [p for p, _ in ordered]
        context = tuple(t for _, t in ordered)
        self._rows = [context[:bisect_right(positions, pos0 + i)]
                      for i in range(len(tokens) - n_logits, len(tokens))]

    def logits(self, i: int) -> np.ndarray:
        context = self._rows[i]
        row = self._cache.get(context)
        if row is None:
            row = self._cache[context] = (logits(context, self.salt) if self.rows is None
                                          else self.rows(context))
        return row.copy()
