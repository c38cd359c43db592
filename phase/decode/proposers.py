"""Where speculative tokens come from: a draft model, or the text itself (n-gram lookup).

A proposer sees the accepted sequence (prompt + generated so far) and guesses what the target
will say next. Within one run that sequence only ever grows, which both proposers rely on to
keep their state incremental. `begin` runs in the prefill phase, `propose` in decode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from phase.decode.native import NativeModel
from phase.policy.ngram import NgramMatcher, key_lengths
from phase.policy.ngram_length import ProposalLength


class Proposer(Protocol):
    def begin(self, prompt: Sequence[int]) -> None:
        """Start a run (drop all state), given the prompt."""

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        """At most `max_tokens` guesses for the tokens after `seq`; [] for none."""


# A proposer may also have `restart(prompt)`: start another pass over the same prompt right
# after a run, keeping what `begin` computed from the prompt (a draft model's prompt cache),
# so that a repeated decode (Engine.run's min_window_s) does no prefill inside its energy
# window. Without it, the engine calls `begin` again.


class DraftProposer:
    """Greedy proposals from a smaller model with its own KV cache, kept in step with the
    target the way llama.cpp's draft-simple speculation keeps it.

    Numerics depend on batch shape: the target verifies [last, d1..dL] in one batch, while
    the draft generates d1..dL one token at a time, and llama.cpp computes a row differently in
    a single-token pass (on the CPU, with two or more threads and 512+ KV cells, flash attention
    splits the KV across threads; GPU backends pick other kernels for other batch sizes). If the
    draft kept the KV of its own one-token passes, its history would drift from the target's
    and near-ties would be decided differently, so even the target as its own draft would
    have proposals rejected. So before proposing, the draft evaluates the batch the target
    last verified, as the target did (one pass over [last, d1..dL]), and keeps its accepted
    part: every position both models keep was computed by both the same way. Only the new
    last token and the proposals after it are one-token passes, so a proposal at a near-tie
    can still be rejected (one run's figures: bench/results/notes-from-docstrings.md). The
    price is one batched draft pass per step (`mirror=False` skips it; bench/self_draft.py
    measures both, e.g. bench/results/2026-11-30-xeon-selfdraft.md).
    """

    def __init__(self, model: NativeModel, *, mirror: bool = True) -> None:
        self.model = model
        self.mirror = mirror
        self._cached: list[int] = []  # the tokens at KV positions 0..len-1
        self._stable = 0  # cached[:stable] is known to equal the accepted sequence
        # The batch the target verified after the last proposal: its first position and tokens.
        self._verified: tuple[int, list[int]] | None = None

    def begin(self, prompt: Sequence[int]) -> None:
        self.model.clear()
        self._cached = list(prompt[:-1])
        if self._cached:
            self.model.decode(self._cached, 0, 0)
        self._stable = len(self._cached)
        self._verified = None

    def restart(self, prompt: Sequence[int]) -> None:
        """Another pass over the prompt `begin` was given: drop every generated position
        from the draft's cache and keep the prompt's."""
        keep = len(prompt) - 1
        self.model.truncate(keep)
        self._cached = list(prompt[:-1])
        self._stable = keep
        self._verified = None

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        self._mirror(seq)
        # The engine verifies [seq[-1], *proposal] in one pass at seq[-1]'s position.
        if max_tokens <= 0:
            self._verified = (len(seq) - 1, [seq[-1]])
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
        self._verified = (len(seq) - 1, [seq[-1], *out])
        return out

    def _mirror(self, seq: list[int]) -> None:
        """Re-evaluate the last verified batch as the target did; keep its accepted part
        (the positions before the sequence's new last token)."""
        if self._verified is None or not self.mirror:
            return
        pos0, batch = self._verified
        self._verified = None
        kept = 0
        while (kept < len(batch) and pos0 + kept < len(seq) - 1
               and batch[kept] == seq[pos0 + kept]):
            kept += 1
        if kept == 0 or pos0 > len(self._cached):
            return  # nothing of it was accepted (or the cache is behind): nothing to redo
        model = self.model
        model.truncate(pos0)
        model.decode(batch, pos0, 0)
        model.truncate(pos0 + kept)
        self._cached[pos0:] = batch[:kept]
        self._stable = len(self._cached)


class NgramProposer:
    """Prompt-lookup decoding: after the earlier occurrence whose context matches the
    sequence's end for the most tokens, propose what followed it, when that context is at
    least `n_min` tokens (see `ngram.NgramMatcher`; keys of n_min..n_max tokens are indexed).
    """

    def __init__(self, n_min: int, n_max: int) -> None:
        self.n_min, self.n_max = n_min, n_max
        self.matcher = NgramMatcher(key_lengths(n_min, n_max))

    def begin(self, prompt: Sequence[int]) -> None:
        self.matcher.begin(prompt)

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        return self.matcher.lookup(seq, max_tokens, self.n_min).continuation


class AdaptiveNgramProposer(NgramProposer):
    """The n-gram proposer with a length that follows its outcomes (`ngram_length`): up to
    `k_max` tokens while its proposals are kept whole, fewer after rejections."""

    def __init__(self, n_min: int, n_max: int, k_max: int) -> None:
        super().__init__(n_min, n_max)
        self.k_max = k_max
        self.length = ProposalLength(k_max)

    def begin(self, prompt: Sequence[int]) -> None:
        super().begin(prompt)
        self.length = ProposalLength(self.k_max)

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        return super().propose(seq, min(max_tokens, self.length.now))

    def observe(self, proposed: int, accepted: int) -> None:
        self.length.observe(proposed, accepted)
