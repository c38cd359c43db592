"""Sampling settings, the numpy distribution, the verification rules on tiny synthetic rows
whose outcome probabilities are known in closed form, and the chi-square arithmetic."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pytest

from phase.base.errors import UsageProblem
from phase.policy.exactness import (
    chi2_critical,
    chi2_sf,
    goodness_of_fit,
    noncentrality_for,
    samples_for_shift,
)
from phase.policy.sampling import SamplingSettings, distribution, draw
from phase.policy.speculative_sampling import (
    greedy_match,
    llama_speculative,
    rejection,
    wrong,
)

DRAWS = 40_000
ALPHA = 1e-4  # per check: the file's many checks together rarely fail by chance


def test_settings_round_trip_through_json() -> None:
    s = SamplingSettings(temperature=0.7, top_k=40, top_p=0.95, min_p=0.05, seed=12)
    assert SamplingSettings.from_dict(json.loads(json.dumps(s.as_dict()))) == s
    assert s.with_seed(3).seed == 3 and s.with_seed(3).top_k == 40


@pytest.mark.parametrize("field, value, words", [
    ("temperature", 0.0, "temperature must be > 0"),
    ("top_k", -1, "top_k must be an integer >= 0"),
    ("top_p", 0.0, "top_p must be in (0, 1]"),
    ("min_p", 1.0, "min_p must be in [0, 1)"),
    ("seed", 0xFFFFFFFF, "seed must be an integer"),
])
def test_bad_settings_name_the_field(field: str, value: object, words: str) -> None:
    with pytest.raises(UsageProblem) as err:
        SamplingSettings(**{field: value})  # type: ignore[arg-type]
    assert words in str(err.value)


def test_unknown_field_in_a_file_is_named() -> None:
    with pytest.raises(UsageProblem, match=r"unknown field.*temp"):
        SamplingSettings.from_dict({"temp": 1.0})


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


LOGITS = np.log(np.array([0.40, 0.25, 0.15, 0.10, 0.06, 0.04])).astype(np.float32)


def test_no_truncation_is_the_tempered_softmax() -> None:
    p = distribution(LOGITS, SamplingSettings(temperature=0.5))
    assert np.allclose(p, _softmax(LOGITS.astype(np.float64) / 0.5), atol=1e-6)


def test_top_k_then_temperature() -> None:
    p = distribution(LOGITS, SamplingSettings(temperature=2.0, top_k=3))
    assert np.count_nonzero(p) == 3 and p[3:].sum() == 0
    assert np.allclose(p[:3], _softmax(LOGITS[:3].astype(np.float64) / 2.0), atol=1e-6)


def test_top_p_uses_probabilities_before_temperature() -> None:
    # Cumulative (T = 1): 0.40, 0.65, 0.80 -> top_p 0.7 keeps three tokens, whatever T is;
    # at T = 5 the tempered probabilities would have needed more.
    p = distribution(LOGITS, SamplingSettings(temperature=5.0, top_p=0.7))
    assert np.count_nonzero(p) == 3


def test_min_p_is_relative_to_the_best_before_temperature() -> None:
    # p >= 0.3 * 0.40 = 0.12 keeps 0.40, 0.25, 0.15.
    p = distribution(LOGITS, SamplingSettings(temperature=3.0, min_p=0.3))
    assert np.count_nonzero(p) == 3


def test_draw_never_picks_a_zero_and_follows_the_weights() -> None:
    rng = np.random.default_rng(0)
    probs = np.array([0.0, 0.5, 0.0, 0.3, 0.2])
    counts = Counter(draw(probs, rng) for _ in range(DRAWS))
    assert set(counts) == {1, 3, 4}
    _fits([counts[i] for i in (1, 3, 4)], [0.5, 0.3, 0.2])


def _fits(observed: list[int], expected: list[float]) -> None:
    n = sum(observed)
    stat = sum((o - n * e) ** 2 / (n * e) for o, e in zip(observed, expected, strict=True))
    assert chi2_sf(stat, len(observed) - 1) > ALPHA, (observed, [n * e for e in expected])


# Two steps of a 4-token vocabulary: the target's rows p0, p1, p2 and the draft's q0, q1.
P = [np.array([0.5, 0.3, 0.2, 0.0]), np.array([0.1, 0.6, 0.2, 0.1]),
     np.array([0.25, 0.25, 0.25, 0.25])]
Q = [np.array([0.2, 0.6, 0.1, 0.1]), np.array([0.3, 0.3, 0.3, 0.1])]


def _run(rule, proposer, n: int = DRAWS, seed: int = 1) -> list[tuple[int, list[int]]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        proposal, q = proposer(rng)
        verdict = rule(P, q, proposal, rng)
        out.append((verdict.accepted, verdict.tokens))
    return out


def _sampled(rng: np.random.Generator) -> tuple[list[int], list[np.ndarray]]:
    return [draw(Q[0], rng), draw(Q[1], rng)], Q


@pytest.fixture(scope="module")
def rejection_runs() -> list[tuple[int, list[int]]]:
    """The rejection rule's DRAWS verdicts on sampled proposals: two tests read different
    marginals of the same draws, so they are drawn once."""
    return _run(rejection, _sampled)


def test_rejection_sampling_emits_p_at_every_position(
        rejection_runs: list[tuple[int, list[int]]]) -> None:
    runs = rejection_runs
    first = Counter(t[0] for _, t in runs)
    _fits([first[i] for i in range(3)], list(P[0][:3]))
    assert first[3] == 0  # p0 gives token 3 nothing though q0 proposes it
    # Given a kept first proposal, the next token is p1's, whatever happens to it.
    second = Counter(t[1] for a, t in runs if a >= 1)
    _fits([second[i] for i in range(4)], list(P[1]))
    third = Counter(t[2] for a, t in runs if a == 2)
    _fits([third[i] for i in range(4)], list(P[2]))


def test_rejection_keeps_min_p_q_in_expectation(
        rejection_runs: list[tuple[int, list[int]]]) -> None:
    beta = [float(np.minimum(P[i], Q[i]).sum()) for i in range(2)]  # 0.6 and 0.7
    counts = Counter(a for a, _ in rejection_runs)
    expected = [1 - beta[0], beta[0] * (1 - beta[1]), beta[0] * beta[1]]
    _fits([counts[i] for i in range(3)], expected)


def test_point_mass_proposal_keeps_with_p_of_x_else_p_without_x() -> None:
    runs = _run(rejection, lambda rng: ([1], None))
    kept = Counter(a for a, _ in runs)
    _fits([kept[0], kept[1]], [0.7, 0.3])
    replaced = Counter(t[0] for a, t in runs if a == 0)
    assert replaced[1] == 0
    _fits([replaced[0], replaced[2]], [0.5 / 0.7, 0.2 / 0.7])


def test_greedy_match_is_exact_but_keeps_only_p_of_the_top_proposal() -> None:
    runs = _run(greedy_match, lambda rng: ([1, 1], None))
    first = Counter(t[0] for _, t in runs)
    _fits([first[i] for i in range(3)], list(P[0][:3]))
    kept = Counter(a for a, _ in runs)
    _fits([kept[0], kept[1], kept[2]], [0.7, 0.3 * 0.4, 0.3 * 0.6])


def test_llama_speculative_keeps_min_1_p_over_q_of_the_drafts_top_token() -> None:
    # The example drafts q's most probable token: 1 at both steps.
    runs = _run(llama_speculative, lambda rng: ([1, 1], Q))
    kept = Counter(a for a, _ in runs)
    a0 = min(1.0, 0.3 / 0.6)  # the second step's ratio is 0.6 / 0.3: always kept
    assert kept[1] == 0
    _fits([kept[0], kept[2]], [1 - a0, a0])


def test_llama_speculative_residual_pairs_candidates_by_position() -> None:
    # Target keeps ids {0, 2}, draft {1, 2}: sorted by id and subtracted by position,
    # token 0 is reduced by q(1) and token 2 by q(2), not by their own draft mass.
    p = [np.array([0.6, 0.0, 0.4]), np.array([1 / 3] * 3)]
    q = [np.array([0.0, 0.5, 0.5])]
    rng = np.random.default_rng(3)
    seen = Counter()
    for _ in range(4000):
        verdict = llama_speculative(p, q, [1], rng)
        if verdict.accepted == 0:
            seen[verdict.tokens[0]] += 1
    # residual: max(0, 0.6 - 0.5) = 0.1 for id 0, max(0, 0.4 - 0.5) = 0 for id 2
    assert set(seen) == {0}


def test_wrong_rule_never_emits_what_the_draft_over_rates() -> None:
    runs = _run(wrong, _sampled, n=5000)
    first = Counter(t[0] for _, t in runs)
    assert first[1] == 0 and first[3] == 0  # q0 > p0 for tokens 1 and 3
    assert first[0] > 0


def test_chi_square_tails_match_tables() -> None:
    assert chi2_critical(0.05, 1) == pytest.approx(3.841, abs=1e-3)
    assert chi2_critical(0.001, 1) == pytest.approx(10.828, abs=1e-3)
    assert chi2_critical(0.001, 10) == pytest.approx(29.588, abs=1e-3)
    assert chi2_sf(7.815, 3) == pytest.approx(0.05, abs=1e-4)
    # One degree of freedom: noncentrality for power 0.9 at 0.001 is (z_.9995 + z_.9)^2.
    assert noncentrality_for(1, 0.001, 0.9) == pytest.approx((3.2905 + 1.2816) ** 2, rel=1e-3)


def test_sample_size_grows_with_the_top_probabilitys_variance() -> None:
    n_half = samples_for_shift(0.5, 0.02, 5, 0.001, 0.9)
    n_tenth = samples_for_shift(0.1, 0.02, 5, 0.001, 0.9)
    assert n_tenth < n_half
    assert n_half == math.ceil(noncentrality_for(5, 0.001, 0.9) * 0.25 / 0.02**2)


def test_goodness_of_fit_pools_rare_outcomes_and_detects_a_shift() -> None:
    exact = {"a": 0.5, "b": 0.3, "c": 0.19, "d": 0.005, "e": 0.005}
    rng = np.random.default_rng(5)
    keys = list(exact)
    fair = [keys[i] for i in rng.choice(5, size=20_000, p=list(exact.values()))]
    result = goodness_of_fit(fair, exact)
    assert result.categories == 4 and result.top == "a"  # a, b, c and d+e pooled
    assert result.p_value > ALPHA
    shifted = [keys[i] for i in rng.choice(5, size=20_000, p=[0.52, 0.28, 0.19, 0.005, 0.005])]
    assert goodness_of_fit(shifted, exact).p_value < 0.001
