"""Predicted cost of runs: from their own steps, or from acceptance rates alone.

A run's predicted decode cost is the sum over its steps of what the step asked of the models:

    plain step                  c_t(1)
    n-gram step, k proposals    lookup + c_t(k + 1)
    draft step, k proposals     c_d(b) + c_d(1) + (k - 1)·c_d(1) + c_t(k + 1)

where c_d(b) is the draft's mirror of the batch the target last verified (b = the previous
step's proposals + 1; phase.decode.proposers.DraftProposer re-evaluates it as the target did,
so that both models computed every kept position the same way; it computes no logits, and
from schema 5 the profile times the draft's batches that way), after which the draft has
seen all but the newest token. That is the issue's Σ (k·c_d + c_t(k + 1)) with the draft's
catch-up made explicit. (`auto`'s draft steps are charged the same way; its feed counts the
tokens of steps that did not draft.) The prediction keeps its
terms apart (target passes, proposing) so that a miss can be blamed on the term that is off:
each step also records the measured `verify_ms` and `propose_ms` that the terms predict.

For a strategy that was not run, the same sum is taken over expected steps: with per-position
acceptance rates a_i, a step of k proposals yields `expected_tokens(a_1..a_k)` tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum

from phase.costmodel.acceptance import expected_tokens
from phase.costmodel.curve import CostTable, NoCost
from phase.results import Step


class Proposing(Enum):
    """What a step asked of the models besides the target's pass: the cost terms a strategy
    family declares for its steps (phase.policy.strategies), so that this module needs no
    strategy's name."""

    NONE = "none"  # nothing: a plain step
    LOOKUP = "lookup"  # an n-gram lookup
    DRAFT = "draft"  # draft passes: the mirror of the last batch, the feed and the proposals


StepProposing = Callable[[Step], Proposing]


@dataclass(frozen=True)
class Terms:
    """A run's decode cost split by what it was spent on (one unit: ms or J)."""

    target: float  # target passes (plain steps and verifications)
    propose: float  # draft passes and n-gram lookups

    @property
    def total(self) -> float:
        return self.target + self.propose


def step_costs(steps: Sequence[Step], table: CostTable, proposing: StepProposing,
               every_step: bool = False) -> list[Terms]:
    """The predicted cost of each step, in order (the draft's catch-up depends on order).
    `proposing`: each step's terms; `every_step`: the draft is asked at every step, even
    one that proposes nothing (a fixed draft strategy)."""
    return [Terms(target, propose)
            for target, propose in _step_terms(steps, table, proposing, every_step)]


def run_terms(steps: Sequence[Step], table: CostTable, proposing: StepProposing,
              every_step: bool = False) -> Terms:
    target = propose = 0.0
    for t, p in _step_terms(steps, table, proposing, every_step):
        target += t
        propose += p
    return Terms(target, propose)


def _step_terms(steps: Sequence[Step], table: CostTable, proposing: StepProposing,
                every_step: bool) -> Iterator[tuple[float, float]]:
    """Each step's (target, propose) cost, as plain numbers: validation prices every step
    of a file's runs several times over."""
    feed = 1  # prefill leaves the draft one token short: the prompt's last
    mirrored: int | None = None  # the batch the draft re-evaluates at its next call
    for step in steps:
        how = proposing(step)
        target = table.target(step.proposed + 1)
        drafted = how is Proposing.DRAFT and (step.proposed > 0 or every_step)
        if drafted:
            # A fixed draft strategy asks its proposer at every step, the last one (nothing
            # may be proposed there) included; each call first mirrors the previous batch.
            mirror = table.draft(mirrored) if mirrored is not None and table.draft else 0.0
            cost = table.draft_step(step.proposed, feed) if step.proposed > 0 else 0.0
            yield target, mirror + cost
            mirrored, feed = step.proposed + 1, 1
            continue
        # A lookup happens on every step of an n-gram run, and on every auto step (its
        # decision looks for a match first, so its undrafted steps count as lookups).
        yield target, (table.lookup if how is not Proposing.NONE else 0.0)
        feed += step.accepted + 1


def measured_terms_ms(steps: Sequence[Step]) -> Terms:
    """What the trace measured for the same terms: verify_ms and propose_ms, summed."""
    return Terms(sum(s.verify_ms for s in steps), sum(s.propose_ms for s in steps))


@dataclass(frozen=True)
class Expected:
    """A strategy's expected cost per generated token, from acceptance rates alone."""

    tokens_per_step: float
    cost_per_step: float

    @property
    def cost_per_token(self) -> float:
        return self.cost_per_step / self.tokens_per_step


def expected_draft(table: CostTable, rates: Sequence[float], k: int) -> Expected:
    """draft-k with conditional acceptance rates a_1..a_k, in steady state: each step mirrors
    the previous step's batch of k + 1 tokens, then feeds one token and proposes k."""
    if table.draft is None:
        raise NoCost("no draft model was profiled")
    tokens = expected_tokens(rates[:k])
    return Expected(tokens, table.draft(k + 1) + table.draft_step(k, 1) + table.target(k + 1))


def expected_ngram(table: CostTable, rates: Sequence[float], k: int) -> Expected:
    return Expected(expected_tokens(rates[:k]), table.lookup + table.target(k + 1))
