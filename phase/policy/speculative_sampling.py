"""Verifying a speculative step when the target samples: which proposals to keep, what to emit.

Every rule takes the target's distributions p[0..L] for the step's L+1 verified rows (row i
is the target's distribution for the token after the i-th proposal's predecessor), the
proposer's distributions q[0..L-1] (None for an n-gram proposal, a point mass), the L
proposed tokens and the run's random generator; it returns how many proposals it kept and
the tokens the step emits (those proposals, then one token of the target's own).

- `rejection` (Leviathan et al. 2023, Chen et al. 2023): keep x_i with probability
  min(1, p_i(x_i) / q_i(x_i)); at the first rejection emit a draw from the residual
  max(0, p_i - q_i) normalised; after a fully kept proposal emit a bonus draw from p_L. With
  x_i drawn from q_i, every emitted token is distributed exactly as p. A point mass q = δ_x
  is the same rule: keep x with probability p(x), else draw from p with x removed.
- `greedy-match` (llama.cpp's llama-speculative-simple): draw y_i from p_i and keep the
  proposal while y_i == x_i; the first y_i that differs is emitted. Exact for any proposal,
  but keeps x only with probability p(x).
- `llama-speculative` (llama.cpp's examples/speculative/speculative.cpp, one draft
  sequence): keep x_i when r <= p_i(x_i) / q_i(x_i), r uniform in [0, 1); on rejection
  both candidate lists (the tokens each truncation left) are sorted by token id and
  subtracted position by position, max(0, p - q), which pairs different tokens wherever the
  two lists differ; the result is normalised and drawn from. That example drafts the draft's
  most probable token (cur_p->data[0] after its chain), not a draw from q, so with it the
  output is not distributed as p: the rule is here to compare acceptance, not to decode.
- `wrong` (for the exactness test only): keep x_i iff p_i(x_i) > q_i(x_i), else draw from
  the residual. Tokens the proposer over-rates are then never emitted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from phase.policy.sampling import draw
from phase.results import Verification

Rows = Sequence[np.ndarray]


class Verdict(NamedTuple):
    accepted: int  # proposals kept
    tokens: list[int]  # what the step emits: the kept proposals and one token of the target's


Rule = Callable[[Rows, Rows | None, Sequence[int], np.random.Generator], Verdict]


def _bonus(p: Rows, proposal: Sequence[int], rng: np.random.Generator) -> Verdict:
    return Verdict(len(proposal), [*proposal, draw(p[len(proposal)], rng)])


def _residual(p_row: np.ndarray, q_row: np.ndarray | None, token: int) -> np.ndarray:
    """max(0, p - q), or p without `token` for a point mass. A rejection implies positive
    mass (p(x) < q(x) and both sum to 1); p itself covers a row rounded to nothing."""
    if q_row is None:
        out = p_row.copy()
        out[token] = 0.0
    else:
        out = np.maximum(p_row - q_row, 0.0)
    return out if out.sum() > 0 else p_row


def rejection(p: Rows, q: Rows | None, proposal: Sequence[int],
              rng: np.random.Generator) -> Verdict:
    """Leviathan/Chen speculative sampling; q None: each proposal is a point mass."""
    for i, token in enumerate(proposal):
        q_x = 1.0 if q is None else float(q[i][token])
        # u < p/q without dividing (q(x) > 0 for a token drawn from q).
        if rng.random() * q_x < p[i][token]:
            continue
        residual = _residual(p[i], None if q is None else q[i], token)
        return Verdict(i, [*proposal[:i], draw(residual, rng)])
    return _bonus(p, proposal, rng)


def greedy_match(p: Rows, q: Rows | None, proposal: Sequence[int],
                 rng: np.random.Generator) -> Verdict:
    """Sample the target; keep a proposal only where the draw equals it."""
    for i, token in enumerate(proposal):
        drawn = draw(p[i], rng)
        if drawn != token:
            return Verdict(i, [*proposal[:i], drawn])
    return _bonus(p, proposal, rng)


def _id_paired_residual(p_row: np.ndarray, q_row: np.ndarray) -> np.ndarray:
    """speculative.cpp's residual: both candidate lists sorted by id and subtracted by
    position (the i-th surviving target token minus the i-th surviving draft token)."""
    tgt = np.nonzero(p_row)[0]
    dft = np.nonzero(q_row)[0]
    n = min(tgt.size, dft.size)
    weights = p_row[tgt].copy()
    weights[:n] = np.maximum(weights[:n] - q_row[dft[:n]], 0.0)
    out = np.zeros_like(p_row)
    # All zero: the example would divide by zero; draw from p instead of failing.
    out[tgt] = weights if weights.sum() > 0 else p_row[tgt]
    return out


def llama_speculative(p: Rows, q: Rows | None, proposal: Sequence[int],
                      rng: np.random.Generator) -> Verdict:
    """examples/speculative's stochastic verification with one draft sequence."""
    if not proposal:
        return _bonus(p, proposal, rng)
    if q is None:
        raise ValueError("the llama-speculative rule needs the draft's distributions")
    for i, token in enumerate(proposal):
        r = rng.random()
        p_x, q_x = float(p[i][token]), float(q[i][token])
        if q_x > 0 and r <= p_x / q_x:
            continue
        return Verdict(i, [*proposal[:i], draw(_id_paired_residual(p[i], q[i]), rng)])
    return _bonus(p, proposal, rng)


def wrong(p: Rows, q: Rows | None, proposal: Sequence[int],
          rng: np.random.Generator) -> Verdict:
    """A deliberately wrong acceptance (keep iff p(x) > q(x)): what the test must catch."""
    for i, token in enumerate(proposal):
        q_x = 1.0 if q is None else float(q[i][token])
        if p[i][token] > q_x:
            continue
        residual = _residual(p[i], None if q is None else q[i], token)
        return Verdict(i, [*proposal[:i], draw(residual, rng)])
    return _bonus(p, proposal, rng)


RULES: dict[str, Rule] = {
    "rejection": rejection,
    "greedy-match": greedy_match,
    "llama-speculative": llama_speculative,
    "wrong": wrong,
}
# What each rule verifies: a draw from q (rejection sampling needs one), or q's most probable
# token, which is what both llama.cpp tools draft.
PROPOSES: dict[str, str] = {
    "rejection": "sample",
    "greedy-match": "top",
    "llama-speculative": "top",
    "wrong": "sample",
}


class Recorded(NamedTuple):
    """What a results file records for a rule (phase.results.verification), and whether the
    rule keeps the target's distribution exactly (with the proposals PROPOSES says)."""

    verification: Verification
    exact: bool


# Version 1 of each is the function above as it stands; a change to what a rule keeps or
# emits is a new version, so files decided by the old one still say so. `wrong` is never
# recorded: it exists only for the exactness test.
RECORDED: dict[str, Recorded] = {
    "rejection": Recorded(Verification(name="speculative-rejection-sampling", version=1), True),
    "greedy-match": Recorded(Verification(name="greedy-match-sampling", version=1), True),
    "llama-speculative": Recorded(Verification(name="llama-speculative", version=1), False),
}


def recorded_rule(verification: Verification) -> tuple[str, Recorded] | None:
    """The rule a record names (its key in RULES and what is known of it), or None for a
    name or version this phase does not know."""
    for key, known in RECORDED.items():
        if known.verification == verification:
            return key, known
    return None
