"""The cost model without a model: curves, acceptance, step costs, break-even, the profile
schema. Profiles here are fixtures with chosen curves (tests/cost_factories.py)."""

from __future__ import annotations

import pytest
from cost_factories import make_pass, make_point, make_profile
from pydantic import ValidationError

from phase.costmodel import (
    Curve,
    NoCost,
    cost_table,
    expected_tokens,
    iid_expected_tokens,
    position_rates,
)
from phase.costmodel.breakeven import best_k, break_even
from phase.costmodel.curve import points_at_fill
from phase.costmodel.predict import expected_draft, expected_ngram
from phase.policy.strategies import run_terms, step_costs
from phase.results import CostProfile, PassCost, Step


def step(proposed: int, accepted: int, proposer: str | None = None) -> Step:
    return Step(proposed=proposed, accepted=accepted, propose_ms=0.0, verify_ms=0.0,
                proposer=proposer)


def test_curve_interpolates_between_and_extends_beyond_the_measured_sizes() -> None:
    c = Curve((1, 2, 4), (10.0, 14.0, 20.0))
    assert c(1) == 10.0 and c(2) == 14.0 and c(4) == 20.0
    assert c(3) == pytest.approx(17.0)
    assert c(6) == pytest.approx(26.0)  # the last segment, extended: +3 per token
    assert c(0) == 10.0  # below the first size: the smallest pass
    with pytest.raises(ValueError, match="ascend"):
        Curve((2, 1), (1.0, 2.0))


def test_cost_table_interpolates_in_position_and_holds_outside() -> None:
    profile = make_profile(points=[make_point(100, lambda b: 10.0 * b),
                                   make_point(300, lambda b: 20.0 * b)])
    assert cost_table(profile, 200).target(2) == pytest.approx(30.0)
    assert cost_table(profile, 50).target(1) == pytest.approx(10.0)
    assert cost_table(profile, 900).target(1) == pytest.approx(20.0)
    assert cost_table(profile, 200).draft is None


def test_points_at_fill_names_the_points_a_cost_is_read_from() -> None:
    # Listed out of order: indices are the file's, fills are sorted.
    points = [make_point(300, lambda b: 20.0 * b), make_point(100, lambda b: 10.0 * b),
              make_point(700, lambda b: 30.0 * b)]
    assert points_at_fill(points, 200) == [1, 0]  # blended between 100 and 300
    assert points_at_fill(points, 300) == [0]  # exactly one fill
    assert points_at_fill(points, 50) == [1]  # held below the first
    assert points_at_fill(points, 900) == [2]  # and beyond the last
    assert points_at_fill(points, 500) == [0, 2]


def test_energy_table_needs_energy_per_pass() -> None:
    timed = make_profile()
    with pytest.raises(NoCost, match="fixture: no sensor"):
        cost_table(timed, 100, "energy")
    metered = make_profile(lambda b: 10.0 * b, joules_per_ms={"rapl": 0.02})
    table = cost_table(metered, 100, "energy")
    assert table.unit == "J"
    assert table.target(3) == pytest.approx(0.6)
    # A lookup is charged at the power of a one-token pass: 0.05 ms at 0.02 J/ms.
    assert table.lookup == pytest.approx(0.001)
    with pytest.raises(NoCost):
        cost_table(metered, 100, "energy", sensor="other")
    frozen = make_profile(lambda b: 10.0 * b, joules_per_ms={"rapl": 0.0})
    with pytest.raises(NoCost, match="costs 0 J"):
        cost_table(frozen, 100, "energy")


def test_energy_of_several_chip_sensors_is_summed() -> None:
    # Two sockets (or two GPUs): the chip energy is both packages' joules.
    two = make_profile(lambda b: 10.0 * b, joules_per_ms={"package-0": 0.02, "package-1": 0.01})
    both = cost_table(two, 100, "energy", ["package-0", "package-1"])
    assert both.target(3) == pytest.approx(0.9)
    assert cost_table(two, 100, "energy", "package-1").target(3) == pytest.approx(0.3)
    assert cost_table(two, 100, "energy").target(3) == pytest.approx(0.6)  # the first alone
    with pytest.raises(NoCost, match="package-2"):
        cost_table(two, 100, "energy", ["package-0", "package-2"])


@pytest.mark.parametrize(("alpha", "k", "tokens"),
                         [(0.0, 4, 1.0), (1.0, 4, 5.0), (0.5, 2, 1.75), (0.8, 1, 1.8)])
def test_iid_expected_tokens(alpha: float, k: int, tokens: float) -> None:
    assert iid_expected_tokens(alpha, k) == pytest.approx(tokens)
    assert expected_tokens([alpha] * k) == pytest.approx(tokens)


def test_position_rates_count_what_each_position_saw() -> None:
    rates = position_rates([step(4, 4), step(4, 1), step(2, 0), step(0, 0)])
    # Position 1 tried by all three proposing steps, kept by two; position 2 tried by the
    # two that kept position 1; position 3 only by the step that kept everything.
    assert rates.tried == (3, 2, 1, 1)
    assert rates.kept == (2, 1, 1, 1)
    assert rates.steps == 3
    assert rates.alpha == pytest.approx(5 / 7)
    assert rates.rates(5)[:2] == pytest.approx([2 / 3, 1 / 2])
    assert rates.rates(5)[4] == pytest.approx(5 / 7)  # never tried: the pooled rate


def test_step_costs_follow_the_draft_catch_up() -> None:
    table = cost_table(make_profile(lambda b: 10.0 * b, draft=lambda b: 1.0 + b), 100)
    costs = step_costs([step(3, 3), step(3, 1), step(0, 0)], "draft-3", table)
    # Drafting 3: the draft first mirrors the batch of 4 the target last verified (c_d(4) = 5;
    # nothing to mirror before the first step), then one pass over the one unseen token and
    # two one-token passes; the last step proposes nothing but its call still mirrors.
    # The target verifies 4 rows.
    assert [c.propose for c in costs] == pytest.approx([2 + 2 * 2, 5 + 2 + 2 * 2, 5.0])
    assert [c.target for c in costs] == pytest.approx([40.0, 40.0, 10.0])
    ngram = run_terms([step(2, 2), step(0, 0)], "ngram-4", table)
    assert ngram.propose == pytest.approx(2 * 0.05)  # a lookup on every step
    assert ngram.target == pytest.approx(30.0 + 10.0)
    assert run_terms([step(0, 0)] * 4, "plain", table).total == pytest.approx(40.0)


def test_auto_steps_are_costed_by_their_recorded_proposer() -> None:
    table = cost_table(make_profile(lambda b: 10.0 * b, draft=lambda b: 1.0 + b), 100)
    steps = [step(0, 0, "none"), step(2, 2, "ngram"), step(2, 0, "draft")]
    costs = step_costs(steps, "auto", table)
    # The draft had not seen 1 + 1 + 3 tokens when it drafted: one catch-up pass of 5.
    assert costs[2].propose == pytest.approx(6.0 + 2.0)
    assert costs[0].propose == costs[1].propose == pytest.approx(0.05)


def test_break_even_where_drafting_can_and_cannot_pay() -> None:
    # Verification rides on one weight read (a GPU): 9 rows cost little more than 1.
    cheap = cost_table(make_profile(lambda b: 10.0 + 0.5 * b, draft=lambda b: 1.0), 100)
    alpha = break_even(cheap, expected_draft, 4)
    assert alpha is not None and 0.0 < alpha < 0.5
    expected = expected_draft(cheap, [alpha] * 4, 4)
    assert expected.tokens_per_step / expected.cost_per_step == pytest.approx(
        1 / cheap.plain(), rel=1e-3)
    # A CPU: every row costs nearly a plain step, and the draft nearly as much as the target.
    costly = cost_table(make_profile(lambda b: 11.0 + 30.0 * b, draft=lambda b: 20.0 * b), 100)
    assert break_even(costly, expected_draft, 4) is None
    ngram = break_even(costly, expected_ngram, 4)
    assert ngram is not None and ngram > 0.7
    k, speedup = best_k(costly, expected_ngram, [0.95] * 16)
    assert 1 <= k <= 16 and speedup > 1.0
    assert best_k(costly, expected_ngram, [0.3] * 16) == (0, 1.0)
    assert expected_ngram(costly, [1.0] * 4, 4).tokens_per_step == 5.0


def test_profile_requires_reasons_for_what_is_missing() -> None:
    with pytest.raises(ValidationError, match="draft_reason"):
        CostProfile(points=[make_point(10, lambda b: float(b))], position_rule="x", blocks=1,
                    min_block_s=0.0, ngram_lookup_ms=0.1, energy_reason="none", wall_s=1.0)
    with pytest.raises(ValidationError, match="energy_reason"):
        CostProfile(points=[make_point(10, lambda b: float(b))], position_rule="x", blocks=1,
                    min_block_s=0.0, ngram_lookup_ms=0.1, draft_reason="none", wall_s=1.0)
    with pytest.raises(ValidationError, match="block_passes"):
        PassCost.model_validate({**make_pass(1, 2.0).model_dump(), "block_passes": [1]})
