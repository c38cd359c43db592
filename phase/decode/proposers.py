"""The draft model's proposer: greedy guesses from a smaller model with its own KV cache (model
access; the proposer interface and the n-gram proposers are policy, phase.policy.proposers).
"""

from __future__ import annotations

from collections.abc import Sequence

from phase.decode.native import NativeModel


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
