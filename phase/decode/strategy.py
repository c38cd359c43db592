"""Decoding strategies by name: `plain`, `draft-K`, `ngram` / `ngram-K`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from phase.errors import UsageProblem

DEFAULT_DRAFT_KS: tuple[int, ...] = (2, 4, 8, 16)

# ngram defaults. n from 4 down to 2: a 4-token suffix that recurs almost always marks text
# being copied (a quoted passage, a repeated identifier path), so its continuation is a good
# guess; longer suffixes rarely add precision but miss more. 1-grams are left out because a
# single common token (a space, a newline, "the") recurs everywhere, and on a CPU every
# rejected proposal still costs a row of the batched verify pass. k = 8: copied spans usually
# run for tens of tokens, so 8 lets a hit pay off several-fold per target pass, while a miss
# wastes at most 8 rows.
NGRAM_N_MIN = 2
NGRAM_N_MAX = 4
NGRAM_K = 8

_NAMES = ("plain", "draft", "ngram")
_PATTERN = re.compile(r"^(plain|draft|ngram)(?:-(-?\d+))?$")


@dataclass(frozen=True)
class Strategy:
    """`name` is plain, draft or ngram; `k` is the most tokens proposed per step (None for
    plain). `ngram_n_min`/`ngram_n_max` bound the suffix lengths the ngram proposer tries."""

    name: str
    k: int | None = None
    ngram_n_min: int = NGRAM_N_MIN
    ngram_n_max: int = NGRAM_N_MAX

    def __post_init__(self) -> None:
        if self.name not in _NAMES:
            raise UsageProblem(f"unknown strategy '{self.name}': use plain, draft-K or ngram[-K]")
        if self.name == "plain":
            if self.k is not None:
                raise UsageProblem("plain takes no k")
        elif self.k is None or self.k < 1:
            raise UsageProblem(f"{self.name} needs k >= 1 (got {self.k})")
        if not 1 <= self.ngram_n_min <= self.ngram_n_max:
            raise UsageProblem(
                f"ngram n range must satisfy 1 <= n_min <= n_max "
                f"(got {self.ngram_n_min}..{self.ngram_n_max})"
            )

    @property
    def label(self) -> str:
        """The canonical spelling: plain, draft-4, ngram-8."""
        return "plain" if self.name == "plain" else f"{self.name}-{self.k}"

    @property
    def max_proposal(self) -> int:
        return self.k or 0

    def __str__(self) -> str:
        return self.label


def parse_strategy(text: str, *, ngram_n_min: int = NGRAM_N_MIN,
                   ngram_n_max: int = NGRAM_N_MAX, ngram_k: int = NGRAM_K) -> Strategy:
    """plain | draft-K | ngram | ngram-K (K >= 1). `draft` alone is refused: k is the variable
    being studied, so it has to be said; `ngram` alone proposes up to `ngram_k` tokens."""
    m = _PATTERN.match(text.strip())
    if not m:
        raise UsageProblem(
            f"unknown strategy '{text}': use plain, draft-K (e.g. draft-4) or ngram[-K]"
        )
    name, k_text = m.group(1), m.group(2)
    if name == "plain":
        if k_text is not None:
            raise UsageProblem(f"'{text}': plain takes no k")
        return Strategy("plain")
    if k_text is None:
        if name == "draft":
            raise UsageProblem(f"'{text}': say how many tokens to draft, e.g. draft-4")
        k = ngram_k
    else:
        k = int(k_text)
    if k < 1:
        raise UsageProblem(f"'{text}': k must be >= 1")
    return Strategy(name, k, ngram_n_min=ngram_n_min, ngram_n_max=ngram_n_max)
