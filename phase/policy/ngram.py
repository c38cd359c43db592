"""Finding where the text being generated has been written before: the n-gram matcher.

Prompt-lookup decoding guesses that the text will go on as it did after the last time it
read the way it reads now. The matcher finds, for the sequence's suffix, the earlier
occurrence with the longest matching context and returns what followed it, with the length
of that context: a 2-token match ("`(self`") says little, a 20-token verbatim match in an
edit task says the model is copying.

Index: for each key length n in `key_ns`, a dict from n-gram to the starts of its latest few
occurrences, updated with only the tokens added since the previous call (the sequence only
grows within a run). A lookup tries the longest key first; among that key's occurrences it
extends each match backwards (up to `max_context` tokens) and keeps the longest, the most
recent on ties.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_KEY_NS = (2, 3, 4, 6, 8, 12, 16)
MAX_CONTEXT = 64
# Occurrences kept per key: enough to prefer a long-context match over a more recent short
# one, few enough that a common n-gram ("\n    ") costs nothing to look up.
OCCURRENCES = 4


def key_lengths(n_min: int, n_max: int) -> tuple[int, ...]:
    """The key lengths a proposer with contexts of n_min..n_max indexes: both ends and the
    defaults between. Greedy and sampled proposers share it: a lookup tries the longest key
    first, so two key sets can pick different earlier occurrences of the same text."""
    if not 1 <= n_min <= n_max:
        raise ValueError(f"need 1 <= n_min <= n_max, got {n_min}..{n_max}")
    return tuple(sorted({n_min, n_max, *(n for n in DEFAULT_KEY_NS if n_min <= n <= n_max)}))


@dataclass(frozen=True)
class Match:
    """Tokens that followed the best earlier occurrence, and its context length (tokens of
    the current suffix that matched there, at most `max_context`)."""

    context: int
    continuation: list[int]


NO_MATCH = Match(0, [])


class NgramMatcher:
    def __init__(self, key_ns: Sequence[int] = DEFAULT_KEY_NS,
                 max_context: int = MAX_CONTEXT) -> None:
        ns = sorted(set(key_ns))
        if not ns or ns[0] < 1:
            raise ValueError(f"key lengths must be >= 1, got {list(key_ns)}")
        self.key_ns = tuple(ns)
        self.max_context = max(max_context, ns[-1])
        self._index: dict[int, dict[tuple[int, ...], list[int]]] = {}
        self._indexed = 0

    def begin(self, prompt: Sequence[int]) -> None:
        self._index = {n: {} for n in self.key_ns}
        self._indexed = 0
        self.update(list(prompt))

    def update(self, seq: list[int]) -> None:
        """Index the n-grams that end before seq's last token (a match must be an *earlier*
        occurrence, with at least one token after it)."""
        stop = len(seq) - 1  # n-grams ending at positions < stop
        for end in range(self._indexed, stop):
            for n, table in self._index.items():
                start = end - n + 1
                if start < 0:
                    continue
                key = tuple(seq[start:end + 1])
                where = table.get(key)
                if where is None:
                    table[key] = [end + 1]
                else:
                    where.append(end + 1)
                    if len(where) > OCCURRENCES:
                        del where[0]
        self._indexed = max(self._indexed, stop)

    def _context(self, seq: list[int], follow: int, known: int) -> int:
        """How many tokens before `follow` equal the sequence's last ones (>= known)."""
        n, limit = known, min(self.max_context, follow)
        last = len(seq)
        while n < limit and seq[follow - n - 1] == seq[last - n - 1]:
            n += 1
        return n

    def lookup(self, seq: list[int], max_tokens: int, min_context: int = 1) -> Match:
        """The best earlier occurrence of seq's suffix (context >= min_context) and up to
        `max_tokens` tokens that followed it."""
        self.update(seq)
        if max_tokens <= 0:
            return NO_MATCH
        for n in reversed(self.key_ns):
            if n > len(seq) - 1:
                continue
            where = self._index[n].get(tuple(seq[-n:]))
            if not where:
                continue
            best, best_context = where[-1], -1
            for follow in reversed(where):
                context = self._context(seq, follow, n)
                if context > best_context:
                    best, best_context = follow, context
            if best_context < min_context:
                return NO_MATCH
            return Match(best_context, seq[best:best + max_tokens])
        return NO_MATCH
