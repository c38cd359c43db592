"""llama.cpp's `ngram-simple` speculation, as policy: the rule `llama-server --spec-type
ngram-simple` drafts with (common/ngram-map.cpp, `common_ngram_simple_draft`, in the
llama.cpp that llama-cpp-python 0.3.36 vendors), so that phase and the server can be
compared on the same proposals (bench/serving_reference.py).

It differs from phase's own matcher (phase.policy.ngram) in three ways, each of which
changes which guesses are made:

* one key length, `size_n`: the last `size_n` tokens (the sampled one included) are looked
  up, nothing shorter or longer;
* the most recent earlier occurrence wins, however little context it shares beyond the key
  (phase's matcher prefers the occurrence with the longest context);
* it proposes only where at least `size_n` tokens followed that occurrence, up to `size_m`
  of them, and only once the history is longer than size_n + size_m + 1 tokens; an
  occurrence at position 0 counts as none (the C++ uses 0 as "no match").
"""

from __future__ import annotations

from collections.abc import Sequence


def simple_draft(history: Sequence[int], sampled: int, size_n: int, size_m: int) -> list[int]:
    """The draft `common_ngram_simple_draft` makes from `history` (the tokens the target has
    seen: prompt and accepted output) and `sampled` (the token just emitted)."""
    cur_len = len(history)
    if size_n < 1 or size_m < 1 or cur_len <= size_n + size_m + 1:
        return []
    pattern = [*history[cur_len - size_n + 1:], sampled]
    match_pos = 0
    for j in range(cur_len - size_n - 1, 0, -1):
        if list(history[j:j + size_n]) == pattern:
            match_pos = j
            break
    if match_pos == 0:
        return []
    copy_max = min(size_m, cur_len - (match_pos + size_n))
    if copy_max < size_n:
        return []
    start = match_pos + size_n
    return list(history[start:start + copy_max])


class SimpleNgramProposer:
    """Proposes what `simple_draft` drafts, cut to the step's budget. Stateless: the C++
    searches the whole history every step, and so does this (its cost is the lookup term
    the family declares)."""

    def __init__(self, size_n: int, size_m: int) -> None:
        if size_n < 1 or size_m < 1:
            raise ValueError(f"need size_n >= 1 and size_m >= 1, got {size_n}, {size_m}")
        self.size_n, self.size_m = size_n, size_m

    def begin(self, prompt: Sequence[int]) -> None:
        pass

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        if max_tokens <= 0 or not seq:
            return []
        return simple_draft(seq[:-1], seq[-1], self.size_n, self.size_m)[:max_tokens]
