"""auto's batched pricing from the run's own steps (phase.policy.step_prices), no model: the
fitted line, and what it changes in auto's choices where the profile's neighbouring points
under-price a row."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from cost_factories import make_profile

from phase.costmodel import cost_table
from phase.policy.auto import AutoProposer
from phase.policy.step_prices import MIN_STEPS, StepPrices

# The target curve the serving campaign of 2026-12-07 profiled at KV 130 (ms by rows): above
# 8 rows its neighbouring points differ by less than a row costs, and sometimes fall.
NOISY = {1: 55, 2: 98, 3: 125, 4: 158, 5: 183, 6: 196, 7: 300, 8: 378, 9: 393, 10: 388,
         11: 452, 12: 387, 13: 473, 14: 425, 15: 466, 16: 401, 17: 553}


def _line(fixed: float, per_row: float, sizes: range, repeats: int = 3) -> StepPrices:
    prices = StepPrices()
    for _ in range(repeats):
        for rows in sizes:
            prices.observe(rows, fixed + per_row * rows)
    return prices


def test_the_line_is_fitted_only_from_enough_steps_of_different_sizes() -> None:
    prices = StepPrices()
    for _ in range(MIN_STEPS + 5):
        prices.observe(8, 300.0)
    assert prices.line() is None  # one size: no slope to speak of
    prices = StepPrices()
    for rows in (8, 9, 10, 11):
        prices.observe(rows, 20.0 + 35.0 * rows)
    assert prices.line() is None  # too few steps
    fixed, per_row = _line(20.0, 35.0, range(8, 13)).line() or (0.0, 0.0)
    assert fixed == pytest.approx(20.0) and per_row == pytest.approx(35.0)
    assert _line(20.0, 35.0, range(8, 13)).pass_ms(10) == pytest.approx(370.0)


def test_a_falling_line_is_held_flat_and_bad_steps_are_ignored() -> None:
    prices = _line(500.0, -10.0, range(8, 13))
    prices.observe(9, float("nan"))
    prices.observe(0, 100.0)
    fixed, per_row = prices.line() or (None, None)
    assert per_row == 0.0
    assert fixed == pytest.approx(500.0 - 10.0 * 10)  # the mean step


def _proposed(profile_curve: dict[int, float], prices: StepPrices | None,
              requests: int = 8) -> int:
    """Tokens auto proposes on a copied text that its guesses get 3 times in 4 right."""
    auto = AutoProposer(cost_table(make_profile(lambda b: float(profile_curve[min(b, 17)])),
                                   130), None)
    rng = random.Random(5)
    prompt = [rng.randrange(1000) for _ in range(150)]
    truth = [t if rng.random() < 0.75 else rng.randrange(1000, 2000) for t in prompt[:100]]
    auto.begin(prompt)
    seq, proposed = list(prompt), 0
    while len(seq) - len(prompt) < len(truth):
        done = len(seq) - len(prompt)
        auto.at_batch(requests, requests, prices)
        proposal = auto.propose(seq, len(truth) - done - 1)
        m = 0
        while m < len(proposal) and proposal[m] == truth[done + m]:
            m += 1
        seq.extend(truth[done:done + m + 1])
        auto.observe(len(proposal), m)
        proposed += len(proposal)
    return proposed


def test_measured_steps_stop_proposals_the_profile_under_prices() -> None:
    # The serving runs' own steps cost about 35 ms a row at these batches: at 8 requests a
    # plain token's share is 37.5 ms, so a guess right 3 times in 4 does not pay for its row.
    measured = _line(20.0, 35.0, range(8, 14))
    alone = _proposed(NOISY, None)
    priced = _proposed(NOISY, measured)
    assert alone > 20  # rows look nearly free between the profile's noisy points
    assert priced < 0.25 * alone


def test_steps_that_agree_with_a_smooth_profile_change_no_choice() -> None:
    # Rows nearly free (a GPU at small batches): proposals pay, and steps measured on the
    # profile's own line leave every choice as the profile alone makes it.
    smooth = {b: 100.0 + 2.0 * b for b in range(1, 18)}
    alone = _proposed(smooth, None)
    assert alone > 20
    assert _proposed(smooth, _line(100.0, 2.0, range(8, 14))) == alone


def test_energy_prices_ignore_step_times() -> None:
    # Joules and milliseconds do not mix: an energy table prices from its profile alone.
    table = cost_table(make_profile(joules_per_ms={"chip": 0.02}), 100, "energy")
    auto, alone = AutoProposer(table, None), AutoProposer(table, None)
    auto.at_batch(4, 4, _line(1000.0, 1000.0, range(4, 9)))
    alone.at_batch(4, 4)
    assert auto._base == alone._base and auto._plain == alone._plain


@pytest.mark.model
def test_the_serving_loop_hands_auto_its_own_step_costs(test_model_path: Path) -> None:
    """Every step of the batched loop is observed at the rows its pass carried, and every
    auto proposer is priced with that same record (the one the decoder hands `at_batch`)."""
    from phase.decode import Engine
    from phase.policy.batching import Request
    from phase.policy.strategies import parse_strategy

    handed: list[StepPrices | None] = []
    with Engine(test_model_path, n_ctx=1024, n_threads=1, n_seq_max=4) as eng:
        eng.use_profile(make_profile(lambda b: 10.0 + 0.1 * b))
        decoder = eng.batched(parse_strategy("auto"))
        prompt = eng.format_prompt("Repeat exactly: one two three, one two three, one two")
        for i in range(4):
            decoder.admit(Request(i, tuple(prompt), 16))
        for active in decoder._slots:
            assert active is not None
            auto = active.proposer
            priced = auto.at_batch

            def recording(requests: int, carried: int, prices: StepPrices | None = None,
                          priced: Callable[..., None] = priced) -> None:
                handed.append(prices)
                priced(requests, carried, prices)
            auto.at_batch = recording  # type: ignore[method-assign]  # a spy on the call
        rows = []
        while decoder.active():
            rows.append(decoder.step().batch_tokens)
    assert [r for r, _ in decoder.step_prices._steps] == rows
    assert handed and all(p is decoder.step_prices for p in handed)
