"""Break-even acceptance: how often proposals must be kept for speculation to pay on this host.

For a proposer that offers k tokens per step, the break-even acceptance α* is the i.i.d.
acceptance at which a step's expected tokens per unit cost equal plain decoding's:

    (1 - α^(k+1)) / (1 - α)  /  cost_k(α)  =  1 / c_t(1)

with cost_k the step's cost (draft: its passes plus the target's k + 1 token pass; n-gram:
the lookup plus that pass). Above α* the proposer beats plain decoding; where even α = 1
does not (the draft model costs too much per token, or a long verification costs more than
the tokens it can yield), there is no break-even and `None` says that nothing can pay.
"""

from __future__ import annotations

from collections.abc import Callable

from phase.costmodel.acceptance import iid_expected_tokens
from phase.costmodel.curve import CostTable, NoCost
from phase.costmodel.predict import Expected

# A proposer's expected step (phase.costmodel.predict.expected_draft, expected_ngram): its
# strategy family (phase.policy.strategies) says which one is its.
ExpectedStep = Callable[[CostTable, list[float], int], Expected]


def _advantage(table: CostTable, proposer: ExpectedStep, k: int, alpha: float) -> float:
    """Expected tokens per cost of the proposer at α, over plain decoding's."""
    expected = proposer(table, [alpha] * k, k)
    return iid_expected_tokens(alpha, k) / expected.cost_per_step * table.plain()


def break_even(table: CostTable, proposer: ExpectedStep, k: int,
               tolerance: float = 1e-4) -> float | None:
    """α* for `proposer` (a family's expected step) proposing k tokens; None when even α = 1
    does not beat plain decoding, or the table lacks its costs (no draft model was
    profiled). Bisection: the advantage grows with α."""
    try:
        at_one = _advantage(table, proposer, k, 1.0)
    except NoCost:
        return None
    if at_one < 1.0:
        return None
    lo, hi = 0.0, 1.0
    if _advantage(table, proposer, k, lo) >= 1.0:
        return 0.0
    while hi - lo > tolerance:
        mid = (lo + hi) / 2
        if _advantage(table, proposer, k, mid) >= 1.0:
            hi = mid
        else:
            lo = mid
    return hi


def best_k(table: CostTable, proposer: ExpectedStep, rates: list[float],
           ks: range = range(1, 17)) -> tuple[int, float]:
    """The k (and its tokens per cost over plain's) that measured per-position acceptance
    rates make best; (0, 1.0) when no k beats plain decoding."""
    best, best_adv = 0, 1.0
    for k in ks:
        if k > len(rates):
            break
        expected = proposer(table, rates, k)
        adv = expected.tokens_per_step / expected.cost_per_step * table.plain()
        if adv > best_adv:
            best, best_adv = k, adv
    return best, best_adv
