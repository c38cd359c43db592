"""Sampling settings and the distribution a token is drawn from: the truncated, tempered softmax.

Plain sampled decoding draws through llama.cpp's own sampler chain (phase.decode.chain); the
numpy `distribution` here is what speculative verification needs on top, p and q as whole
rows, and it must be the same distribution the chain draws from. The order is llama.cpp's
common sampler order with every sampler phase does not expose left out (they are no-ops at
their defaults): common/common.h `common_params_sampling::samplers` = penalties, dry,
top_n_sigma, top_k, typical_p, top_p, min_p, xtc, temperature, then `dist` appended by
common_sampler_init. So: top-k, top-p, min-p, temperature, softmax. What each does, from
src/llama-sampling.cpp (llama_sampler_{top_k,top_p,min_p,temp,dist}_apply):

- top-k (k <= 0: off): the k highest logits (ties at the boundary broken by sort order);
- top-p (p >= 1: off): softmax of the remaining logits *before* temperature (float32), then
  the shortest prefix in descending order whose running sum reaches p (at least one token);
- min-p (p <= 0: off): logits >= max logit + log(p), i.e. probability >= p * the best's, on
  the logits before temperature;
- temperature: logits / T (T > 0 here; llama.cpp's T <= 0 is greedy, which phase's greedy
  loops already are);
- dist: softmax over what is left, drawn with the seeded mt19937 (the chain) or numpy.

tests/test_sampling_exact.py is what shows the chain and this function agree.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from phase.base.errors import UsageProblem

# llama.cpp's LLAMA_DEFAULT_SEED (0xFFFFFFFF) means "seed from the clock": never recordable.
MAX_SEED = 0xFFFFFFFE


@dataclass(frozen=True)
class SamplingSettings:
    """What a sampled run draws with; `as_dict` is what a results file records, so any run can
    be regenerated from it."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        problems = []
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            problems.append(f"temperature must be > 0 (got {self.temperature}); greedy "
                            "decoding is the strategies' unsampled mode")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 0:
            problems.append(f"top_k must be an integer >= 0, 0 for off (got {self.top_k!r})")
        if not 0 < self.top_p <= 1:
            problems.append(f"top_p must be in (0, 1], 1 for off (got {self.top_p})")
        if not 0 <= self.min_p < 1:
            problems.append(f"min_p must be in [0, 1), 0 for off (got {self.min_p})")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) \
                or not 0 <= self.seed <= MAX_SEED:
            problems.append(f"seed must be an integer in 0..{MAX_SEED} (got {self.seed!r})")
        if problems:
            raise UsageProblem("sampling settings: " + "; ".join(problems))

    def with_seed(self, seed: int) -> SamplingSettings:
        return SamplingSettings(self.temperature, self.top_k, self.top_p, self.min_p, seed)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SamplingSettings:
        unknown = set(data) - {"temperature", "top_k", "top_p", "min_p", "seed"}
        if unknown:
            raise UsageProblem(f"sampling settings: unknown field(s) {', '.join(sorted(unknown))}")
        return cls(**data)


def _candidates(logits: np.ndarray, top_k: int) -> np.ndarray:
    """Token ids in descending logit order: the top k (all when k is 0 or too large)."""
    n = logits.shape[0]
    ids = np.argpartition(-logits, top_k - 1)[:top_k] if 0 < top_k < n else np.arange(n)
    return ids[np.argsort(-logits[ids], kind="stable")]


def _top_p_keep(sorted_logits: np.ndarray, top_p: float) -> int:
    """How many of the (descending) candidates top-p keeps, computed in float32 as llama.cpp
    does, so a running sum that lands on p decides the same way."""
    shifted = np.exp(sorted_logits - sorted_logits[0], dtype=np.float32)
    probs = shifted / np.float32(shifted.sum(dtype=np.float32))
    reached = np.nonzero(np.cumsum(probs, dtype=np.float32) >= np.float32(top_p))[0]
    return int(reached[0]) + 1 if reached.size else sorted_logits.shape[0]


def distribution(logits: np.ndarray, settings: SamplingSettings) -> np.ndarray:
    """The probabilities (float64, one per vocabulary entry, zero outside the truncation) that
    llama.cpp's chain top-k, top-p, min-p, temp, dist draws a token from."""
    row = np.asarray(logits, dtype=np.float32)
    ids = _candidates(row, settings.top_k)
    kept = row[ids]
    if settings.top_p < 1.0:
        n = _top_p_keep(kept, settings.top_p)
        ids, kept = ids[:n], kept[:n]
    if settings.min_p > 0.0:
        floor = kept[0] + np.float32(math.log(settings.min_p))
        n = max(1, int(np.count_nonzero(kept >= floor)))
        ids, kept = ids[:n], kept[:n]
    scaled = kept / np.float32(settings.temperature)
    weights = np.exp((scaled - scaled[0]).astype(np.float64))
    out = np.zeros(row.shape[0], dtype=np.float64)
    out[ids] = weights / weights.sum()
    return out


def draw(probs: np.ndarray, rng: np.random.Generator) -> int:
    """One token from a probability row (any non-negative weights with a positive sum); never
    a zero-weight token: the first whose running sum exceeds u * total."""
    # The array methods np.cumsum and np.searchsorted call, without their wrappers, which took
    # half of a draw's time (a sampled step draws once per verified row).
    cdf = probs.cumsum()
    total = cdf[-1]
    if not total > 0:
        raise ValueError("cannot draw from a row with no probability mass")
    index = int(cdf.searchsorted(rng.random() * total, side="right"))
    if index >= probs.shape[0]:  # u * total rounded up to the total: the last token with mass
        index = int(np.nonzero(probs)[0][-1])
    return index
