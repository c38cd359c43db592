"""Where speculative tokens come from: a draft model, or the text itself (n-gram lookup).

A proposer sees the accepted sequence (prompt + generated so far) and guesses what the target
will say next. Within one run that sequence only ever grows, which both proposers rely on to
keep their state incremental. `begin` runs in the prefill phase, `propose` in decode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from phase.decode.native import NativeModel
from phase.decode.ngram import DEFAULT_KEY_NS, NgramMatcher


class Proposer(Protocol):
    def begin(self, prompt: Sequence[int]) -> None:
        """Start a run (drop all state), given the prompt."""

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        """At most `max_tokens` guesses for the tokens after `seq`; [] for none."""


class DraftProposer:
    """Greedy proposals from a smaller model with its own KV cache, kept in step with the
    target: before proposing, cached positions that disagree with the accepted sequence
    (rejected guesses) are removed and the accepted tokens it has not seen are fed in."""

    def __init__(self, model: NativeModel) -> None:
        self.model = model
        self._cached: list[int] = []  # the tokens at KV positions 0..len-1
        self._stable = 0  # cached[:stable] is known to equal the accepted sequence

    def begin(self, prompt: Sequence[int]) -> None:
        self.model.clear()
        self._cached = list(prompt[:-1])
        if self._cached:
            self.model.decode(self._cached, 0, 0)
        self._stable = len(self._cached)

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        if max_tokens <= 0:
            return []
        model, cached = self.model, self._cached
        n = self._stable
        limit = min(len(cached), len(seq))
        while n < limit and cached[n] == seq[n]:
            n += 1
        if n == len(seq):
            n -= 1  # every token is cached: re-feed the last one to get its logits back
        if n < len(cached):
            model.truncate(n)
            del cached[n:]
        feed = seq[n:]
        model.decode(feed, n, 1)
        cached.extend(feed)
        guess = model.argmax(0)
        out = [guess]
        pos = len(seq)
        while len(out) < max_tokens:
            cached.append(guess)
            guess = model.decode_one(guess, pos)
            pos += 1
            out.append(guess)
        self._stable = len(seq)
        return out


class NgramProposer:
    """Prompt-lookup decoding: after the earlier occurrence whose context matches the
    sequence's end for the most tokens, propose what followed it, when that context is at
    least `n_min` tokens (see `ngram.NgramMatcher`; keys of n_min..n_max tokens are indexed).
    """

    def __init__(self, n_min: int, n_max: int) -> None:
        if not 1 <= n_min <= n_max:
            raise ValueError(f"need 1 <= n_min <= n_max, got {n_min}..{n_max}")
        self.n_min, self.n_max = n_min, n_max
        keys = {n_min, n_max, *(n for n in DEFAULT_KEY_NS if n_min <= n <= n_max)}
        self.matcher = NgramMatcher(sorted(keys))

    def begin(self, prompt: Sequence[int]) -> None:
        self.matcher.begin(prompt)

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        return self.matcher.lookup(seq, max_tokens, self.n_min).continuation
