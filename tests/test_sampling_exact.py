"""Exactness of sampled decoding, proven statistically on the real test model.

The claim: for every strategy the first two generated tokens (m = 2) are distributed as the
target's own sampling distribution, the one plain sampling draws from. The reference is that
distribution computed exactly: p(t1) from the prompt's row and p(t2 | t1) from the row after
each possible t1 (the test model's real one-token passes, truncated and tempered by
phase.policy.sampling.distribution). Each strategy's samples are tested against it with
Pearson's chi-square goodness of fit twice, on t1 and on the pair (t1, t2), each at
α/2 = 0.0005, so a strategy that is exact fails with probability at most α = 0.001.

Sample size (phase.policy.exactness): N = max over the two tests of λ* p_top (1 - p_top) / δ²
with δ = 0.02, λ* the noncentrality at which the test (its own degrees of freedom, α/2) has
power 0.9, p_top the most probable category's exact probability. Then any alternative that
moves the most probable first token's (or pair's) probability by 2 points is detected with
probability >= 0.9. For this prompt N is 17 902 per strategy (the test prints it).

Two levels, because N real runs of every strategy would take the better part of an hour on
two shared cores:

- Full power, on the real rows: plain draws through llama.cpp's chain (seeded dist), each seed's
  two tokens from its own chain, the seeds taken in blocks so that each distinct first token
  costs one pass instead of one per seed; the speculative strategies run their verification
  rule (the same functions the loops call) on the real target and draft rows of this prompt.
- Reduced power, the whole loop: LOOP_SEEDS real sampled runs per strategy (auto among
  them, phase.policy.sampled_auto, once choosing the draft and once the n-gram at its first
  step, under two fixed cost tables) through phase.decode.sampled (real passes, KV
  rollback, the draft model's own cache), tested the same way; the shift they can detect
  with power 0.9 is printed (about 24 points at 100 seeds: a coarse check of its own). Each
  of those runs must also give, seed for seed, the pair the full-power level drew for that
  seed (all did when this was written, at 200 seeds as at 100), which is what carries the
  full-power verdict over to the loops. 200 seeds (17 points) cost 44 s of a 2-core suite
  for a check whose verdict is not its own.

In both, a deliberately wrong acceptance rule (keep iff p(x) > q(x)) must fail; so must
llama-speculative's rule on its own proposals (q's most probable token), at full power.

The draft is the test model at a lower temperature (0.6 against the target's 1.0) with the
same truncation, so q differs from p where it matters; the n-gram proposal is the prompt's own
continuation (" mat" after "on the"), a point mass. Every run's seed is its index; the
settings are TARGET and DRAFT below, so any sample can be regenerated.

Every position of a proposal (issue 47), with the campaign's sampler settings: the section at
the end (its comment states its power). The same claim on a tiny scripted vocabulary, at the
campaign's three temperatures and positions 1..4: tests/test_sampling_exact_positions.py.
What those caught when the loop was broken by hand (not committed): keeping every proposal
without the min(1, p/q) test failed the real-rows level for draft and n-gram (p-values 0 at
every position) and the real-loop n-gram test (the real-loop draft test, at 30 seeds, passed:
its own power is that poor); a rollback that left the first rejected proposal in the KV
memory failed the real-rows level at positions 2 and 3 (p < 1e-160) and the real loop by
llama.cpp's own refusal (DecodeFailed: inconsistent sequence positions).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from phase.costmodel import CostTable, Curve
from phase.decode import Engine
from phase.decode.chain import SamplerChain
from phase.decode.native import NativeModel
from phase.decode.sampled import SampledDecoder, SampledRun
from phase.policy.exactness import (
    MIN_CATEGORY_P,
    categories,
    chi2_critical,
    goodness_of_fit,
    noncentrality_for,
    samples_for_shift,
)
from phase.policy.sampled_auto import SampledAuto
from phase.policy.sampled_proposers import NgramSampler
from phase.policy.sampling import SamplingSettings, distribution, draw
from phase.policy.speculative_sampling import RULES

pytestmark = [pytest.mark.model, pytest.mark.slow]

PROMPT = "The cat sat on the mat. The dog sat on the"
TARGET = SamplingSettings(temperature=1.0, top_k=10, top_p=0.95, min_p=0.0, seed=0)
DRAFT = SamplingSettings(temperature=0.6, top_k=10, top_p=0.95, min_p=0.0, seed=0)
SHIFT, ALPHA, POWER = 0.02, 0.001, 0.9
K = 2  # proposals per step (at m = 2 a step proposes at most one: the last token is drawn)
LOOP_SEEDS = 100
LOOP_MIN_P = 10 / LOOP_SEEDS  # at least 10 expected per category at this N
BLOCK = 2000  # chains alive at once in the plain test
Pair = tuple[int, int]


@dataclass
class Setup:
    target: NativeModel
    draft: NativeModel
    prompt: list[int]
    # The rows restricted to the tokens any of them can give (`ids`; exact, as every other
    # token has probability 0), so the rules draw from ~100 entries instead of the vocabulary.
    ids: np.ndarray
    p0: np.ndarray
    q0: np.ndarray
    p1: dict[int, np.ndarray]  # p(t2 | t1) for every t1 either side can give, by real id
    ngram: int  # the n-gram proposal at the first position (an index into ids)
    first: dict[Hashable, float]
    pairs: dict[Hashable, float]


def _row(target: NativeModel, prompt: list[int], after: Sequence[int]) -> np.ndarray:
    """The target's logits after the prompt and `after`, by one-token passes as plain's."""
    n = len(prompt)
    target.truncate(n - 1)
    target.decode([prompt[-1]], n - 1, 1)
    for i, token in enumerate(after):
        target.decode([token], n + i, 1)
    return target.logits(0)


@pytest.fixture(scope="module")
def setup(test_model_path: Path) -> Setup:
    with Engine(test_model_path, test_model_path, n_ctx=128, n_threads=1) as engine:
        assert engine.draft is not None
        prompt = engine.format_prompt(PROMPT, chat_template=False)
        engine.target.clear()
        engine.target.decode(prompt[:-1], 0, 0)
        logits = _row(engine.target, prompt, [])
        p0, q0 = distribution(logits, TARGET), distribution(logits, DRAFT)
        ngram = NgramSampler(2, 4)
        ngram.restart(prompt)
        proposal, _ = ngram.propose(list(prompt), 1, np.random.default_rng(0))
        assert len(proposal) == 1, "the prompt must give the n-gram proposer a continuation"
        support = set(np.nonzero(p0)[0]) | set(np.nonzero(q0)[0]) | {proposal[0]}
        p1 = {int(t): distribution(_row(engine.target, prompt, [int(t)]), TARGET)
              for t in support}
        first = {int(t): float(p0[t]) for t in np.nonzero(p0)[0]}
        pairs = {(t, int(u)): first[t] * float(p1[t][u])
                 for t in first for u in np.nonzero(p1[t])[0]}
        ids = np.array(sorted(support.union(*(np.nonzero(r)[0] for r in p1.values()))))
        index = {int(t): i for i, t in enumerate(ids)}
        yield Setup(engine.target, engine.draft, prompt, ids, p0[ids], q0[ids],
                    {t: r[ids] for t, r in p1.items()}, index[proposal[0]], first, pairs)


def _needed(exact: dict[Hashable, float], min_p: float = MIN_CATEGORY_P) -> int:
    kept, pooled = categories(exact, min_p)
    df = len(kept) - (0 if pooled > 0 else 1)
    return samples_for_shift(exact[kept[0]], SHIFT, df, ALPHA / 2, POWER)


def _check(pairs: list[Pair], setup: Setup, label: str, min_p: float = MIN_CATEGORY_P,
           exact: bool = True) -> None:
    """Both tests; `exact` False: the strategy must fail at least one."""
    firsts = [p[0] for p in pairs]
    fit1 = goodness_of_fit(firsts, setup.first, min_p)
    fit2 = goodness_of_fit(pairs, setup.pairs, min_p)
    where = (f"{label}: N={len(pairs)}, seeds 0..{len(pairs) - 1}, target {TARGET.as_dict()}, "
             f"draft {DRAFT.as_dict()}; first token p={fit1.p_value:.2e} "
             f"(top {fit1.top_observed:.4f} vs {fit1.top_expected:.4f}), pair p={fit2.p_value:.2e}")
    print(where)
    if exact:
        assert fit1.p_value > ALPHA / 2 and fit2.p_value > ALPHA / 2, where
    else:
        assert min(fit1.p_value, fit2.p_value) <= ALPHA / 2, where


def _plain_pairs(setup: Setup, n: int) -> list[Pair]:
    """n seeded plain runs through llama.cpp's chain: seed i's first token from the prompt's
    row, its second from the row after that token, drawn by seed i's own chain."""
    out: list[Pair] = []
    for start in range(0, n, BLOCK):
        chains = [SamplerChain(TARGET.with_seed(s)) for s in range(start, min(n, start + BLOCK))]
        try:
            _row(setup.target, setup.prompt, [])
            firsts = [c.sample(setup.target) for c in chains]
            seconds = [0] * len(chains)
            for token in set(firsts):
                _row(setup.target, setup.prompt, [token])
                for i, c in enumerate(chains):
                    if firsts[i] == token:
                        seconds[i] = c.sample(setup.target)
            out.extend(zip(firsts, seconds, strict=True))
        finally:
            for c in chains:
                c.close()
    return out


def _step_pairs(setup: Setup, rule: str, proposer: str, n: int) -> list[Pair]:
    """n runs of m = 2 as speculate_sampled makes them, the rule given the real rows: one
    proposal (drawn from q, or the n-gram's point mass), then the target's token."""
    verify = RULES[rule]
    out: list[Pair] = []
    for seed in range(n):
        rng = np.random.default_rng(seed)
        if proposer == "ngram":
            proposal, q = [setup.ngram], None
        elif proposer == "draft-top":  # what both llama.cpp tools draft: q's most probable
            proposal, q = [int(setup.q0.argmax())], [setup.q0]
        else:
            proposal, q = [draw(setup.q0, rng)], [setup.q0]
        p_rows = [setup.p0, setup.p1[int(setup.ids[proposal[0]])]]
        tokens = [int(setup.ids[t]) for t in verify(p_rows, q, proposal, rng).tokens]
        if len(tokens) == 1:  # rejected: the next step proposes nothing, draws from p
            bonus = verify([setup.p1[tokens[0]]], None, [], rng).tokens[0]
            tokens.append(int(setup.ids[bonus]))
        out.append((tokens[0], tokens[1]))
    return out


def test_sample_size_has_the_stated_power(setup: Setup) -> None:
    n = max(_needed(setup.first), _needed(setup.pairs))
    print(f"N = {n} per strategy (first token top p={max(setup.first.values()):.3f}, "
          f"pair top p={max(setup.pairs.values()):.3f})")
    assert 1000 < n < 60_000
    # q must differ from p where it matters, or the speculative tests prove little
    assert float(np.minimum(setup.p0, setup.q0).sum()) < 0.95
    assert setup.ids.size < 200


def test_plain_through_llama_cpps_chain_is_the_numpy_distribution(setup: Setup) -> None:
    n = max(_needed(setup.first), _needed(setup.pairs))
    _check(_plain_pairs(setup, n), setup, "plain (llama.cpp chain)")


@pytest.mark.parametrize("rule, proposer, exact", [
    ("rejection", "draft", True),
    ("rejection", "ngram", True),
    ("greedy-match", "ngram", True),
    ("wrong", "draft", False),
    # llama-speculative's rule keeps more when q is flatter than p, but with the draft's top
    # token as its proposal its output is not the target's distribution.
    ("llama-speculative", "draft-top", False),
])
def test_speculative_rules_on_real_rows(setup: Setup, rule: str, proposer: str,
                                        exact: bool) -> None:
    n = max(_needed(setup.first), _needed(setup.pairs))
    _check(_step_pairs(setup, rule, proposer, n), setup, f"{rule}, {proposer}", exact=exact)


# auto's costs (ms): a target pass of b tokens costs little more than one of a single token,
# so proposing pays. With the draft nearly free auto drafts; without a draft model it can
# only take the n-gram's point mass. Either way it must keep p, as the fixed strategies do.
_TARGET_COST = Curve((1, 2, 3), (10.0, 10.5, 11.0))
AUTO_TABLES = {
    "auto-2 (draft)": CostTable("ms", _TARGET_COST, Curve((1,), (0.01,)), 0.001, 32),
    "auto-2 (n-gram)": CostTable("ms", _TARGET_COST, None, 0.001, 32),
}
# What auto must choose at the first step under each table (checked on every run).
AUTO_CHOICE = {"auto-2 (draft)": "draft", "auto-2 (n-gram)": "ngram"}


def _auto(label: str) -> Callable[[SampledDecoder, SamplingSettings], SampledRun]:
    def run(d: SampledDecoder, s: SamplingSettings) -> SampledRun:
        table = AUTO_TABLES[label]
        draft = d.draft_sampler(DRAFT) if table.draft is not None else None
        auto = SampledAuto(table, draft, K)
        out = d.run(2, K, auto, s)
        assert auto.decisions[0].proposer == AUTO_CHOICE[label], auto.decisions
        return out
    return run


LOOPS: dict[str, Callable[[SampledDecoder, SamplingSettings], SampledRun]] = {
    "plain": lambda d, s: d.plain(2, s),
    "draft-2": lambda d, s: d.draft_k(2, K, s, "rejection", DRAFT),
    "ngram-2": lambda d, s: d.ngram(2, K, s, n_min=2, n_max=4),
    **{label: _auto(label) for label in AUTO_TABLES},
    "draft-2, wrong rule": lambda d, s: d.draft_k(2, K, s, "wrong", DRAFT),
}


@pytest.fixture(scope="module")
def decoder(setup: Setup) -> SampledDecoder:
    return SampledDecoder(setup.target, setup.draft, setup.prompt)


def test_loop_sample_size(setup: Setup) -> None:
    """What LOOP_SEEDS runs can detect (printed), and that it is at least a coarse check."""
    kept, pooled = categories(setup.first, LOOP_MIN_P)
    df = len(kept) - (0 if pooled > 0 else 1)
    p_top = setup.first[kept[0]]
    detectable = (noncentrality_for(df, ALPHA / 2, POWER) * p_top * (1 - p_top)
                  / LOOP_SEEDS) ** 0.5
    critical = chi2_critical(ALPHA / 2, df)
    print(f"{LOOP_SEEDS} runs each detect a {100 * detectable:.1f}-point shift of the top "
          f"first token with power {POWER} (critical chi-square {critical:.1f})")
    assert detectable < 0.25


# What the full-power level ran for each loop: the same draws on the same seeds.
SIMULATED: dict[str, Callable[[Setup, int], list[Pair]]] = {
    "plain": _plain_pairs,
    "draft-2": lambda setup, n: _step_pairs(setup, "rejection", "draft", n),
    "ngram-2": lambda setup, n: _step_pairs(setup, "rejection", "ngram", n),
    # auto's step is the fixed strategy's step for the proposer it chose (AUTO_CHOICE), so
    # the full-power verdict on that strategy covers it.
    "auto-2 (draft)": lambda setup, n: _step_pairs(setup, "rejection", "draft", n),
    "auto-2 (n-gram)": lambda setup, n: _step_pairs(setup, "rejection", "ngram", n),
    "draft-2, wrong rule": lambda setup, n: _step_pairs(setup, "wrong", "draft", n),
}


@pytest.mark.parametrize("label", list(LOOPS))
def test_whole_loop_keeps_the_distribution(setup: Setup, decoder: SampledDecoder,
                                           label: str) -> None:
    """The loop's own distribution test, and seed by seed the same pairs as the full-power
    level: so that level's verdict is the loop's. A batched row differs from a one-token
    row in its last bits and could move a draw that lands on a boundary: 1% may differ."""
    pairs: list[Pair] = []
    for seed in range(LOOP_SEEDS):
        generated = LOOPS[label](decoder, TARGET.with_seed(seed)).generated
        assert len(generated) == 2
        pairs.append((generated[0], generated[1]))
    _check(pairs, setup, f"loop {label}", LOOP_MIN_P, exact="wrong" not in label)
    same = sum(a == b for a, b in zip(pairs, SIMULATED[label](setup, LOOP_SEEDS), strict=True))
    print(f"loop {label}: {same}/{LOOP_SEEDS} seeds give the full-power level's pair")
    assert same >= 0.99 * LOOP_SEEDS


# --- Every position of a proposal, with the campaign's sampler settings (issue 47) ---------
#
# The target samples as the campaign's runs do (experiments/speculative_sampling.py: top-k
# 40, top-p 0.95, min-p 0.05) at its temperature 1.0; the test model drafts for itself, so its
# q takes the campaign's lowest temperature, 0.3, with the same truncation (at equal settings
# q would equal p and nothing would be rejected). Each run generates M_POS = 3 tokens with
# K_POS = 2: a first proposal of 2 (the draft's draws, or the n-gram's point masses " mat"
# ".") and the target's token after them; a rejection at position 1 or 2 truncates the
# target's KV memory. Tested per position 1..3 against the exact marginal (the real rows'
# distributions multiplied along every prefix), Pearson's chi-square at α/3 each.
#
# Two levels again. Full power: the real loop (speculate_sampled, DraftSampler,
# NgramSampler, the rejection rule) run POS_N times over the test model's real rows, served
# by a KV-faithful stand-in (tests/scripted_model.py) that computes each context's row once
# with real one-token passes; at POS_N = 12 000 each position's test detects any 3-point shift
# with power 0.9 at α/3 (smallest detectable 2.6 to 2.95 points, printed). The real model:
# POS_LOOP seeds per proposer through the real loop with llama.cpp's KV memory (~20 s on two
# shared cores), tested the same way (their own power is poor, 45 to 49 points at N = 30,
# printed)
# and, seed for seed, giving the tokens the full-power level gave (a batched row differs from
# a one-token row in its last bits, which may move a draw at a boundary: one may differ). That
# identity carries the full-power verdict over to the real memory's rollback.
CAMPAIGN = SamplingSettings(temperature=1.0, top_k=40, top_p=0.95, min_p=0.05, seed=0)
CAMPAIGN_DRAFT = SamplingSettings(temperature=0.3, top_k=40, top_p=0.95, min_p=0.05, seed=0)
M_POS, K_POS = 3, 2
POS_N, POS_LOOP = 12_000, 30
POS_SHIFT = 0.03


class _RealRows:
    """The target's logits after the prompt and a continuation, by one-token passes (as
    plain's and the draft's), computed once per context; the KV memory keeps the longest
    prefix shared with the previous context, so a depth-first walk costs one pass a row."""

    def __init__(self, setup: Setup) -> None:
        self.model, self.prompt = setup.target, tuple(setup.prompt)
        self.rows: dict[tuple[int, ...], np.ndarray] = {}
        self.fed: list[int] = []  # tokens after prompt[:-1] in the memory

    def __call__(self, context: tuple[int, ...]) -> np.ndarray:
        if context not in self.rows:
            want = [self.prompt[-1], *context[len(self.prompt):]]
            assert context[:len(self.prompt)] == self.prompt
            keep = 0
            while keep < min(len(self.fed), len(want) - 1) and self.fed[keep] == want[keep]:
                keep += 1
            base = len(self.prompt) - 1
            self.model.truncate(base + keep)
            for i in range(keep, len(want)):
                self.model.decode([want[i]], base + i, 1)
            self.fed = want
            self.rows[context] = self.model.logits(0)
        return self.rows[context]


def _marginals(rows: _RealRows) -> list[dict[Hashable, float]]:
    """P(t_i = v), i = 1..M_POS: every prefix with positive probability walked."""
    out: list[dict[Hashable, float]] = [{} for _ in range(M_POS)]

    def walk(context: tuple[int, ...], mass: float, i: int) -> None:
        p = distribution(rows(context), CAMPAIGN)
        for token in np.nonzero(p)[0]:
            share = mass * float(p[token])
            out[i][int(token)] = out[i].get(int(token), 0.0) + share
            if i + 1 < M_POS and share > 0:
                walk((*context, int(token)), share, i + 1)

    walk(rows.prompt, 1.0, 0)
    assert len(rows.rows) < 1000, "a prompt whose continuations branch too widely to walk"
    return out


@pytest.fixture(scope="module")
def positions(setup: Setup) -> tuple[_RealRows, list[dict[Hashable, float]]]:
    rows = _RealRows(setup)
    exact = _marginals(rows)
    print(f"{len(rows.rows)} real rows walked")
    assert all(abs(sum(e.values()) - 1) < 1e-9 for e in exact)
    return rows, exact


POS_LOOPS: dict[str, Callable[[SampledDecoder, SamplingSettings], SampledRun]] = {
    "draft": lambda d, s: d.draft_k(M_POS, K_POS, s, "rejection", CAMPAIGN_DRAFT),
    "ngram": lambda d, s: d.ngram(M_POS, K_POS, s, n_min=2, n_max=4),
}


def _position_fits(runs: list[list[int]], exact: list[dict[Hashable, float]],
                   min_p: float = MIN_CATEGORY_P) -> list[float]:
    return [goodness_of_fit([r[i] for r in runs], exact[i], min_p).p_value
            for i in range(M_POS)]


def _shift_detected(exact: dict[Hashable, float], n: int, min_p: float) -> float:
    """The smallest move of an outcome's probability (at p = 1/2, the least detectable) a
    test at α/M_POS detects with power POWER after n draws."""
    kept, pooled = categories(exact, min_p)
    df = max(1, len(kept) - (0 if pooled > 0 else 1))
    return float((noncentrality_for(df, ALPHA / M_POS, POWER) * 0.25 / n) ** 0.5)


class _Relabelled:
    """The real rows over a smaller vocabulary, so that POS_N runs cost seconds: only the
    tokens any walked row's top-k keeps (and the prompt's), renumbered 0..n-1. Exact: top-k
    keeps the same tokens of every row, and top-p, min-p and the softmax only ever read those.
    The n-gram lookup is blind to the numbering."""

    def __init__(self, rows: _RealRows) -> None:
        self.real = rows
        keep = set(rows.prompt)
        for row in rows.rows.values():
            keep.update(int(t) for t in np.argpartition(-row, CAMPAIGN.top_k)[:CAMPAIGN.top_k])
        self.ids = np.array(sorted(keep))
        self.index = {int(t): i for i, t in enumerate(self.ids)}
        self.prompt = [self.index[t] for t in rows.prompt]
        for row in rows.rows.values():  # the same distributions, checked rather than argued
            for settings in (CAMPAIGN, CAMPAIGN_DRAFT):
                full = distribution(row, settings)
                assert full[self.ids].sum() == pytest.approx(1.0, abs=1e-12)
                assert np.allclose(distribution(row[self.ids], settings), full[self.ids],
                                   rtol=1e-9, atol=1e-12)

        self.unwalked = 0  # rows asked for that the walk did not reach (only a broken loop)

    def __call__(self, context: tuple[int, ...]) -> np.ndarray:
        real = tuple(int(self.ids[t]) for t in context)
        self.unwalked += real not in self.real.rows
        return self.real(real)[self.ids]


@dataclass
class Simulated:
    generated: list[list[int]]  # per seed, real token ids
    outcomes: list[int]  # first proposal rejected at position 1, 2, or kept whole
    unwalked: int


@pytest.fixture(scope="module")
def simulated(positions: tuple[_RealRows, list[dict[Hashable, float]]]
              ) -> dict[str, Simulated]:
    """POS_N seeded runs of each proposer through the real loop over the real rows."""
    from scripted_model import ScriptedModel

    out: dict[str, Simulated] = {}
    for label, loop in POS_LOOPS.items():
        rows = _Relabelled(positions[0])
        decoder = SampledDecoder(ScriptedModel(rows=rows), ScriptedModel(rows=rows),  # type: ignore[arg-type]  # the NativeModel calls the loop makes
                                 rows.prompt)
        runs = [loop(decoder, CAMPAIGN.with_seed(seed)) for seed in range(POS_N)]
        assert all(r.trace[0][0] == K_POS for r in runs)  # every first step proposes K_POS
        outcomes = [sum(r.trace[0][1] == a for r in runs) for a in range(K_POS + 1)]
        print(f"{label}: first proposal rejected at position 1, 2 / kept whole: {outcomes} "
              f"({rows.ids.size} tokens kept of the vocabulary)")
        out[label] = Simulated([[int(rows.ids[t]) for t in r.generated] for r in runs],
                               outcomes, rows.unwalked)
    return out


@pytest.mark.parametrize("label", list(POS_LOOPS))
def test_every_position_on_the_real_rows(positions: tuple[_RealRows, list[dict[Hashable,
                                                                                  float]]],
                                         simulated: dict[str, Simulated],
                                         label: str) -> None:
    _, exact = positions
    shifts = [_shift_detected(e, POS_N, MIN_CATEGORY_P) for e in exact]
    done = simulated[label]
    p_values = _position_fits(done.generated, exact)
    print(f"{label}, real rows, N={POS_N}: shifts detected {[round(100 * s, 2) for s in shifts]}"
          f" points; p-values {[f'{p:.3g}' for p in p_values]}")
    assert max(shifts) <= POS_SHIFT and min(p_values) > ALPHA / M_POS, p_values
    # A rejection at each position, often enough to exercise the rollback after it; and no
    # row the loop read was one the walk did not reach (a rollback that left a token in).
    assert min(done.outcomes[:K_POS]) >= 0.01 * POS_N, done.outcomes
    assert done.unwalked == 0


@pytest.mark.parametrize("label", list(POS_LOOPS))
def test_every_position_through_the_real_memory(
        setup: Setup, positions: tuple[_RealRows, list[dict[Hashable, float]]],
        simulated: dict[str, Simulated], label: str) -> None:
    _, exact = positions
    decoder = SampledDecoder(setup.target, setup.draft, setup.prompt)
    runs = [POS_LOOPS[label](decoder, CAMPAIGN.with_seed(seed)).generated
            for seed in range(POS_LOOP)]
    min_p = 5 / POS_LOOP
    shifts = [_shift_detected(e, POS_LOOP, min_p) for e in exact]
    p_values = _position_fits(runs, exact, min_p)
    same = sum(a == b for a, b in zip(runs, simulated[label].generated, strict=False))
    print(f"{label}, real loop, N={POS_LOOP}: shifts detected "
          f"{[round(100 * s, 1) for s in shifts]} points; p-values "
          f"{[f'{p:.3g}' for p in p_values]}; {same}/{POS_LOOP} seeds as the real rows'")
    assert min(p_values) > ALPHA / M_POS, p_values
    assert same >= POS_LOOP - 1
