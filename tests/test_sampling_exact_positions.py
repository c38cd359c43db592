"""Exactness at every position of a proposal, at full power, on a tiny scripted vocabulary.

The claim: a sampled speculative run's tokens are distributed as the target's own sampling
distribution, at every position. Here the real loop (phase.decode.sampled: SampledDecoder,
speculate_sampled, DraftSampler, NgramSampler, the rejection rule) runs against scripted
models (tests/scripted_model.py: 8 tokens, a row per distinct KV content, llama.cpp's cells
and truncation), so the expected distribution is computed exactly and the draws are cheap:

- each run generates M = 5 tokens with k = 4: its first step proposes 4 tokens (the
  draft's draws from q, or the n-gram's 4-token continuation of a repeating prompt: point
  masses), so positions 1..4 are a proposal's and 5 the target's own token; every run's first
  step is checked to propose all 4, and a rejection at each position 1..4 happens in at
  least 1% of the runs (counted), after which the loop truncates the target's KV memory and
  later rows see only what the rollback left: a rejected token left in it, or a kept one
  dropped, changes every later row;
- the campaign's sampler settings (experiments/speculative_sampling.py): top-k 40, top-p
  0.95, min-p 0.05, at each of its temperatures 0.3, 0.7, 1.0; the draft samples with the
  same settings (as a campaign's does) from its own rows;
- the exact marginal of each position t_i (i = 1..5) sums the product of the target's
  distributions (phase.policy.sampling.distribution) over every prefix; each position is
  tested by Pearson's chi-square (scipy.stats.chisquare), outcomes below 1% pooled, at
  alpha = 0.001 / 5, so a (temperature, proposer) test that is exact fails with probability
  at most 0.001.

Power (scipy.stats.ncx2): moving an outcome's probability by delta (the rest moved in
proportion, the least detectable alternative) gives noncentrality N delta^2 / (p (1 - p)),
smallest at p = 1/2. With N = 10 500 runs, each position's test (its own degrees of freedom,
alpha 0.001 / 5, power 0.9) detects any shift of at least 2.6 to 3.0 points: computed and
checked (<= 3) by `test_the_draws_detect_a_three_point_shift`, which prints them per
temperature (2.59 to 2.90 at T = 0.3, 2.90 to 2.96 at 0.7 and 1.0).

What a broken loop did here (tried by hand, not committed), every (temperature, proposer)
test failing each time: a verification that keeps every proposal without the min(1, p/q)
test (p-values 1e-35 to 0), a rollback that leaves the first rejected proposal in the
target's memory (1e-11 to 0 at positions 3..5), and one that drops the last kept token too
(1e-25 to 0). The `wrong` rule (keep iff p(x) > q(x)) is run here as the committed negative
control, on fewer draws (its shift is large).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import numpy as np
import pytest
from scipy import optimize, stats
from scripted_model import VOCAB, ScriptedModel, logits

from phase.decode.sampled import SampledDecoder, SampledRun
from phase.policy.sampling import SamplingSettings, distribution

# ~8 s a test on one core: a run is ~0.7 ms of numpy.
pytestmark = pytest.mark.slow

TEMPERATURES = (0.3, 0.7, 1.0)  # experiments/speculative_sampling.py's sampled levels
TOP_K, TOP_P, MIN_P = 40, 0.95, 0.05  # its PLAN's sample_top_k, sample_top_p, sample_min_p
M, K = 5, 4
N = 10_500
CONTROL_N = 3000
ALPHA, POWER, SHIFT = 0.001, 0.9, 0.03
MIN_CATEGORY_P = 0.01
# A repeating prompt: the n-gram proposer finds "2 3 4 5" after the closing "0 1".
PROMPT = [*range(VOCAB), *range(VOCAB), 0, 1]

Loop = Callable[[SampledDecoder, SamplingSettings], SampledRun]
LOOPS: dict[str, Loop] = {
    "draft": lambda d, s: d.draft_k(M, K, s),
    "ngram": lambda d, s: d.ngram(M, K, s, n_min=2, n_max=4),
    "draft, wrong rule": lambda d, s: d.draft_k(M, K, s, "wrong"),
}


def _settings(temperature: float, seed: int = 0) -> SamplingSettings:
    return SamplingSettings(temperature, TOP_K, TOP_P, MIN_P, seed)


@cache
def exact_marginals(temperature: float) -> tuple[np.ndarray, ...]:
    """P(t_i = v) for i = 1..M: the target's distributions multiplied along every prefix."""
    settings = _settings(temperature)
    out = [np.zeros(VOCAB) for _ in range(M)]

    def walk(context: tuple[int, ...], mass: float, i: int) -> None:
        p = distribution(logits(context), settings)
        out[i] += mass * p
        if i + 1 < M:
            for token in np.nonzero(p)[0]:
                walk((*context, int(token)), mass * float(p[token]), i + 1)

    walk(tuple(PROMPT), 1.0, 0)
    return tuple(out)


def _cells(exact: np.ndarray) -> tuple[list[int], bool]:
    """The outcomes tested on their own, and whether the rest is pooled into one more."""
    kept = [int(v) for v in np.nonzero(exact >= MIN_CATEGORY_P)[0]]
    return kept, exact[kept].sum() < 1 - 1e-9


def _fit(tokens: np.ndarray, exact: np.ndarray) -> float:
    """Pearson's chi-square p-value of one position's tokens against its exact marginal."""
    kept, pooled = _cells(exact)
    counts = np.bincount(tokens, minlength=VOCAB)
    observed = [*counts[kept], counts.sum() - counts[kept].sum()] if pooled else counts[kept]
    expected = [*exact[kept], 1 - exact[kept].sum()] if pooled else exact[kept]
    n = len(tokens)
    return float(stats.chisquare(observed, n * np.asarray(expected) / np.sum(expected)).pvalue)


def smallest_shift(df: int, n: int) -> float:
    """The shift of an outcome's probability (the least detectable one, at p = 1/2) that a
    chi-square test at ALPHA / M detects with POWER after n draws (scipy.stats.ncx2)."""
    critical = stats.chi2.isf(ALPHA / M, df)
    lam = optimize.brentq(lambda x: stats.ncx2.sf(critical, df, x) - POWER, 1e-6, 1e3)
    return math.sqrt(lam * 0.25 / n)


@pytest.mark.parametrize("temperature", TEMPERATURES)
def test_the_draws_detect_a_three_point_shift(temperature: float) -> None:
    shifts = []
    for exact in exact_marginals(temperature):
        kept, pooled = _cells(exact)
        assert abs(exact.sum() - 1) < 1e-9
        shifts.append(smallest_shift(len(kept) - (0 if pooled else 1), N))
    print(f"T={temperature}: N={N} detects shifts of "
          + ", ".join(f"{100 * s:.2f}" for s in shifts) + " points at positions 1..5")
    assert max(shifts) <= SHIFT


def _draws(proposer: str, temperature: float, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    """n seeded runs: their tokens (n x M) and where each first step's proposal was first
    rejected (0..K-1; K: kept whole)."""
    decoder = SampledDecoder(ScriptedModel(), ScriptedModel(salt=1), PROMPT)  # type: ignore[arg-type]  # the NativeModel calls the loop makes
    tokens = np.zeros((n, M), dtype=np.int64)
    rejected_at = np.zeros(n, dtype=np.int64)
    for seed in range(n):
        run = LOOPS[proposer](decoder, _settings(temperature, seed))
        first = run.trace[0]
        assert len(run.generated) == M and first[0] == K, (seed, run)
        tokens[seed] = run.generated
        rejected_at[seed] = first[1]
    return tokens, rejected_at


@pytest.mark.parametrize("temperature", TEMPERATURES)
@pytest.mark.parametrize("proposer", ["draft", "ngram"])
def test_every_position_keeps_the_targets_distribution(proposer: str,
                                                       temperature: float) -> None:
    tokens, rejected_at = _draws(proposer, temperature)
    rejections = np.bincount(rejected_at, minlength=K + 1)[:K]
    p_values = [_fit(tokens[:, i], exact)
                for i, exact in enumerate(exact_marginals(temperature))]
    print(f"{proposer} T={temperature}: rejections at 1..{K} {rejections.tolist()}; "
          "p-values " + ", ".join(f"{p:.3g}" for p in p_values))
    assert min(p_values) > ALPHA / M, p_values
    # Every position's rejection happened often enough to exercise the rollback after it.
    assert (rejections >= 0.01 * N).all(), f"rejections at positions 1..{K}: {rejections}"


def test_a_wrong_acceptance_fails() -> None:
    """The negative control: keep x iff p(x) > q(x) drops what the draft over-rates."""
    tokens, _ = _draws("draft, wrong rule", 1.0, CONTROL_N)
    p_values = [_fit(tokens[:, i], exact) for i, exact in enumerate(exact_marginals(1.0))]
    assert min(p_values) <= ALPHA / M, p_values
