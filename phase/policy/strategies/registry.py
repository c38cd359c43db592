"""Decoding strategies by name: `plain`, `draft-K`, `ngram` / `ngram-K`, `auto`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from phase.errors import UsageProblem

DEFAULT_DRAFT_KS: tuple[int, ...] = (2, 4, 8, 16)

# ngram defaults: propose only after a verbatim match of at least 6 tokens of context (keys
# of 6 to 16 tokens are indexed; a match is extended backwards to measure its context).
# Where a batched verification costs nearly a one-token pass per row (a CPU with few cores),
# a kept guess saves only the fixed part of a pass while a rejected one costs a whole row, so
# a guess must be right most of the time to pay. A long verbatim context is what makes a
# guess that likely: replaying the prompts' plain outputs through the proposer
# (bench/ngram_replay.py), contexts of 6+ tokens were mostly kept on the edit task and rarely
# fired on new code or prose, while the previous defaults (2-4 token suffixes, 8 tokens) spent
# long verifications on guesses kept less than half the time and ran slower than plain.
# How many tokens: bare `ngram` adapts its length (ngram_length: from 4, +2 after a proposal
# kept whole, -1 after a rejection) up to NGRAM_K; `ngram-K` proposes up to K every step.
# A fixed 4 was the best fixed length in replays, and the adaptive length beat it on the edit
# task's long copy runs (see ngram_length). One host's figures for all of this:
# bench/results/notes-from-docstrings.md.
NGRAM_N_MIN = 6
NGRAM_N_MAX = 16
NGRAM_K = 16
NGRAM_ADAPTIVE = True
# `auto` considers proposals of up to this many tokens: the profile measures passes of up to
# AUTO_K + 1 tokens.
AUTO_K = 16

_NAMES = ("plain", "draft", "ngram", "auto")
_PATTERN = re.compile(r"^(plain|draft|ngram|auto)(?:-(-?\d+))?$")


@dataclass(frozen=True)
class Strategy:
    """`name` is plain, draft, ngram or auto; `k` is the most tokens proposed per step (None
    for plain). `ngram_n_min` is the shortest matched context the ngram proposer proposes
    after, `ngram_n_max` the longest key it indexes (matches are extended past it);
    `adaptive` (ngram only): the length grows and shrinks with the outcomes, up to k
    (`ngram_length`)."""

    name: str
    k: int | None = None
    ngram_n_min: int = NGRAM_N_MIN
    ngram_n_max: int = NGRAM_N_MAX
    adaptive: bool = False

    def __post_init__(self) -> None:
        if self.name not in _NAMES:
            raise UsageProblem(
                f"unknown strategy '{self.name}': use plain, draft-K, ngram[-K] or auto"
            )
        if self.name == "plain":
            if self.k is not None:
                raise UsageProblem("plain takes no k")
        elif self.k is None or self.k < 1:
            raise UsageProblem(f"{self.name} needs k >= 1 (got {self.k})")
        if self.adaptive and self.name != "ngram":
            raise UsageProblem(f"only ngram adapts its length, not {self.name}")
        if not 1 <= self.ngram_n_min <= self.ngram_n_max:
            raise UsageProblem(
                f"ngram n range must satisfy 1 <= n_min <= n_max "
                f"(got {self.ngram_n_min}..{self.ngram_n_max})"
            )

    @property
    def label(self) -> str:
        """The canonical spelling: plain, draft-4, ngram-4 (fixed), ngram (adaptive), auto."""
        if self.name in ("plain", "auto") or self.adaptive:
            return self.name
        return f"{self.name}-{self.k}"

    @property
    def max_proposal(self) -> int:
        return self.k or 0

    def __str__(self) -> str:
        return self.label


def parse_strategy(text: str, *, ngram_n_min: int = NGRAM_N_MIN,
                   ngram_n_max: int = NGRAM_N_MAX, ngram_k: int = NGRAM_K,
                   ngram_adaptive: bool = NGRAM_ADAPTIVE) -> Strategy:
    """plain | draft-K | ngram | ngram-K (K >= 1) | auto. `draft` alone is refused: k is the
    variable being studied, so it has to be said; `ngram` alone proposes up to `ngram_k`
    tokens, adapting its length when `ngram_adaptive` (results files from before adaptive
    lengths record a fixed one); `ngram-K` always proposes up to K; `auto` chooses its
    proposer and k (up to AUTO_K) at every step."""
    m = _PATTERN.match(text.strip())
    if not m:
        raise UsageProblem(
            f"unknown strategy '{text}': use plain, draft-K (e.g. draft-4), ngram[-K] or auto"
        )
    name, k_text = m.group(1), m.group(2)
    if name in ("plain", "auto"):
        if k_text is not None:
            raise UsageProblem(f"'{text}': {name} takes no k")
        if name == "auto":
            return Strategy("auto", AUTO_K, ngram_n_min=ngram_n_min, ngram_n_max=ngram_n_max)
        return Strategy("plain")
    if k_text is None:
        if name == "draft":
            raise UsageProblem(f"'{text}': say how many tokens to draft, e.g. draft-4")
        return Strategy(name, ngram_k, ngram_n_min=ngram_n_min, ngram_n_max=ngram_n_max,
                        adaptive=ngram_adaptive)
    k = int(k_text)
    if k < 1:
        raise UsageProblem(f"'{text}': k must be >= 1")
    return Strategy(name, k, ngram_n_min=ngram_n_min, ngram_n_max=ngram_n_max)
