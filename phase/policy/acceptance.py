"""Greedy verification of a speculative step: which proposals the target keeps.

The target verifies [last, d1..dL] in one pass; row i's argmax t_i is what it would say after
the i-th verified token. A proposal is kept up to its first token that differs from the
target's (d_(i+1) == t_i), and the step always ends on the target's own token after the kept
prefix, so a step emits at least one token and never a token greedy decoding would not.
(The sampled counterpart, rejection sampling, is phase.policy.speculative_sampling.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from phase.policy.speculative_sampling import Verdict


def greedy_verdict(proposal: Sequence[int], argmax: Callable[[int], int]) -> Verdict:
    """How many proposals to keep and what the step emits; `argmax(i)` is row i's argmax,
    read only as far as the proposal is kept (plus the row after it)."""
    m = 0
    nxt = argmax(0)
    while m < len(proposal) and proposal[m] == nxt:
        m += 1
        nxt = argmax(m)
    return Verdict(m, [*proposal[:m], nxt])
