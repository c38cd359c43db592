"""`auto`: at every step, the proposer and k expected to gain the most over plain decoding.

The candidates are a plain step (no proposal), the n-gram matcher's continuation cut to k
tokens, and the draft model drafting k tokens (k = 1..k_max). For each, the expected tokens
are 1 + a_1 + a_1·a_2 + … with a_i the online estimate of position i's acceptance
(`estimates`), and the cost comes from the measured profile (`costmodel.CostTable`: the
target's pass of k + 1 tokens, the draft's catch-up pass and its k - 1 single passes, the
lookup). The lookup is made every step (it is what tells whether a match exists), so it is
part of every candidate's cost. The winner is the candidate whose expected tokens exceed by
the most what plain decoding would make for the same cost: for the run's tokens per unit cost
(time, or energy) that serves better than each step's own ratio (see `best_proposal`). It is
proposed and verified exactly as the fixed strategies do; `decisions` keeps what was chosen and
why, one per step.

The draft model is not kept in step when it is not drafting: when it drafts again it first
takes, in one batch, every token it has not seen, and that catch-up is costed as such.

Serving many requests at once (phase.decode.batched), one target pass carries every active
request's token and proposal, so what a proposal costs depends on the batch (`at_batch`): a
plain step makes `requests` tokens for one pass of that many rows, so each unit of cost is worth
requests / c_t(requests) tokens, and a proposal of k tokens adds c_t(carried + k) - c_t(carried)
to the pass every request waits for. Where the curve is steep (a CPU, whose pass costs grow
nearly linearly in rows) that added cost outgrows what the proposal saves as the batch grows,
and auto stops proposing; where it is flat (a GPU at small batches) proposals keep paying.
The serving loop also hands auto its own steps' costs (`step_prices.StepPrices`): once they
fit a line, a row a proposal adds is priced no lower than that line's slope, and one
`Evidence` for all its requests: each request's auto learns from every request's steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from phase.costmodel import CostTable
from phase.policy.estimates import NgramEstimates, PositionEstimate, ngram_buckets
from phase.policy.ngram import NgramMatcher
from phase.policy.step_prices import StepPrices
from phase.policy.strategies import Proposing, proposing_of

K_MAX = 16
# Fading per step: evidence from ~50 steps ago counts a third as much as the latest.
DECAY = 0.98
# The draft model's prior: promising enough to be tried where the cost model says drafting
# can pay at all, worth two observations, so a few poor drafts rule it out for a while.
DRAFT_PRIOR = 0.8
DRAFT_PRIOR_WEIGHT = 2.0


class Drafter(Protocol):
    """The draft model's proposer as auto drives it (the greedy DraftProposer, or the sampled
    draft behind it): auto never reaches the model itself, only what it proposes."""

    def begin(self, prompt: Sequence[int]) -> None: ...

    def restart(self, prompt: Sequence[int]) -> None: ...

    def propose(self, seq: list[int], max_tokens: int) -> list[int]: ...


@dataclass(frozen=True)
class Evidence:
    """What auto has learned of how far each proposer's guesses are kept: the n-gram
    matcher's per matched-context bucket, the draft model's per position.

    A one-request run's auto starts from the priors and learns as it goes. A serving run's
    requests are short (32 tokens in the study), so an auto that learned per request would
    spend its whole request near its priors, whose modest n-gram rates price most matches
    out: at concurrency 8 on a 2-core VM it proposed on 20 of 590 request-steps and ran as
    plain decoding. What a proposer's guesses are worth is a property of the models
    and the workload, not of one request, so the batched decoder hands every request's auto
    one Evidence for the run (each request keeps its own matcher and pending guesses). Every
    request's step fades it, so its memory is counted in request-steps."""

    ngram: list[PositionEstimate]
    draft: PositionEstimate

    @classmethod
    def fresh(cls, k_max: int) -> Evidence:
        return cls(ngram_buckets(k_max, DECAY),
                   PositionEstimate(k_max, DRAFT_PRIOR, DRAFT_PRIOR_WEIGHT, DECAY))


@dataclass(frozen=True)
class Decision:
    proposer: str  # none | ngram | draft
    k: int
    expected_tokens: float
    # Expected tokens per unit cost of this choice over a plain step's (1 / c_t(1)).
    expected_gain: float
    match_tokens: int

    def step_fields(self) -> dict[str, Any]:
        """What a results Step records of this decision."""
        return {"proposer": self.proposer, "expected_tokens": self.expected_tokens,
                "expected_gain": self.expected_gain, "match_tokens": self.match_tokens}


def best_proposal(rates: Sequence[float], costs: Sequence[float],
                  plain: float) -> tuple[int, float]:
    """(k, expected tokens) of the k with the largest expected surplus over plain decoding,
    tokens - cost / plain; costs[k] is the cost of a step proposing k tokens (costs[0]: none).

    Why the surplus and not the step's own tokens per cost: a step's ratio is highest for a
    short, safe proposal, but the run is what must be fast. Every unit of cost a step takes
    could have produced 1 / plain tokens by plain decoding, so a step is worth what it yields
    beyond that; a longer proposal that adds tokens at a better rate than plain decoding's is
    worth taking even where it lowers the step's ratio. (Replaying the edit prompt's steps,
    the surplus rule gave slightly more tokens per unit cost than the ratio rule, under linear
    and concave cost curves alike: bench/results/notes-from-docstrings.md.)
    """
    best_k, best_tokens = 0, 1.0
    best_value = 1.0 - costs[0] / plain
    tokens, reach = 1.0, 1.0
    for k in range(1, len(costs)):
        reach *= rates[k - 1]
        tokens += reach
        value = tokens - costs[k] / plain
        if value > best_value:
            best_k, best_tokens, best_value = k, tokens, value
    return best_k, best_tokens


class AutoProposer:
    """A proposer that decides per step; `observe` tells it how each step went."""

    def __init__(self, table: CostTable, draft: Drafter | None,
                 matcher: NgramMatcher | None = None, k_max: int = K_MAX, *,
                 mirrors: bool = True, lazy_draft: bool = False,
                 evidence: Evidence | None = None) -> None:
        """`mirrors`: the draft re-evaluates each verified batch before it proposes again, a
        pass auto prices (the greedy DraftProposer does; the sampled draft keeps its own rows
        and does not). `lazy_draft`: the draft does not read the prompt at `begin`; its first
        proposal catches up on the whole prompt, and auto prices that catch-up. Serving wants
        this: there a request's prefill is inside the timed load, and a draft prefilled for
        every request auto never drafts for is pure cost. `evidence`: acceptance estimates
        shared with other requests' autos (`Evidence`), kept across `begin`; None: its own,
        fresh at every `begin`."""
        self.table = table
        self.mirrors = mirrors
        self.lazy_draft = lazy_draft
        self.draft = draft if table.draft is not None else None
        self.matcher = matcher or NgramMatcher()
        self.k_max = k_max
        # Per-step costs looked up once: a step proposing k tokens verifies k + 1 rows.
        self._base = [table.lookup + table.target(k + 1) for k in range(k_max + 1)]
        self._plain = table.plain()
        self._share = 1  # requests whose draft passes share each draft pass (at_batch)
        self._evidence = evidence
        self.decisions: list[Decision] = []
        self._start()

    def _start(self) -> None:
        evidence = self._evidence or Evidence.fresh(self.k_max)
        self.ngram = NgramEstimates(self.k_max, DECAY, buckets=evidence.ngram)
        self.draft_rates = evidence.draft
        self.decisions = []
        self._feed = 1  # tokens the draft model has not seen (prefill leaves it one short)
        # The batch the draft proposer re-evaluates before its next proposal (DraftProposer's
        # mirror of the target's last verification of its guesses); None before it drafted.
        self._mirror: int | None = None
        self._last: Decision | None = None

    def begin(self, prompt: Sequence[int]) -> None:
        self._start()
        self.matcher.begin(prompt)
        if self.draft is None:
            return
        if self.lazy_draft:
            self._feed = len(prompt)  # the draft has seen none of it
        else:
            self.draft.begin(prompt)

    def restart(self, prompt: Sequence[int]) -> None:
        """Another pass over the same prompt: fresh estimates, the draft's prompt cache kept."""
        self._start()
        self.matcher.begin(prompt)
        if self.draft is not None:
            self.draft.restart(prompt)

    def at_batch(self, requests: int, carried: int, prices: StepPrices | None = None) -> None:
        """Price the next choice inside a batch of `requests` requests whose pass already
        carries `carried` tokens (every request's next token and the proposals made before
        this one): a plain step's share is c_t(requests) / requests, a proposal's the rows it
        adds. The draft's passes are shared the same way (it drafts every request at once).
        At one request and without `prices` this is the one-request pricing exactly.

        `prices`: the run's own steps so far (time objective only). Once they fit a line, a
        plain step's share is that line's pass of `requests` rows over `requests`, and a row
        a proposal adds costs no less than the line's slope: the profile's neighbouring
        points can differ by less than a row costs (step_prices)."""
        if requests < 1 or carried < requests:
            raise ValueError(f"a batch of {requests} requests carrying {carried} tokens")
        t = self.table
        added = [max(0.0, t.target(carried + k) - t.target(carried))
                 for k in range(self.k_max + 1)]
        line = prices.line() if prices is not None and t.unit == "ms" else None
        if line is None:
            self._plain = t.target(requests) / requests
        else:
            fixed, per_row = line
            self._plain = (fixed + per_row * requests) / requests
            added = [max(a, k * per_row) for k, a in enumerate(added)]
        self._base = [t.lookup + self._plain + a for a in added]
        self._share = requests

    def _draft_cost(self, tokens: int) -> float:
        """This request's share of a draft pass of `tokens` tokens per drafting request."""
        draft = self.table.draft
        assert draft is not None  # asked only where the table has the draft's costs
        return draft(tokens * self._share) / self._share

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        self.ngram.score(seq)
        limit = min(max_tokens, self.k_max)
        match = self.matcher.lookup(seq, self.k_max)
        self.ngram.expect(len(seq), match.context, match.continuation)
        plain = self._plain
        base = self._base[:limit + 1]
        # (surplus over plain, proposer, k, expected tokens, cost)
        choice = (1.0 - base[0] / plain, "none", 0, 1.0, base[0])
        n_avail = min(limit, len(match.continuation))
        if n_avail > 0:
            k, tokens = best_proposal(self.ngram.rates(match.context, n_avail),
                                      base[:n_avail + 1], plain)
            if k > 0 and tokens - base[k] / plain > choice[0]:
                choice = (tokens - base[k] / plain, "ngram", k, tokens, base[k])
        if self.draft is not None and limit > 0:
            draft = self._draft_cost
            # The mirror of its last verified batch, the catch-up pass (its logits give the
            # first guess), then k - 1 single passes.
            mirror = draft(self._mirror) if self._mirror is not None else 0.0
            first, single = mirror + draft(self._feed), draft(1)
            costs = [base[0]] + [base[k] + first + (k - 1) * single
                                 for k in range(1, limit + 1)]
            k, tokens = best_proposal(self.draft_rates.rates(limit), costs, plain)
            if k > 0 and tokens - costs[k] / plain > choice[0]:
                choice = (tokens - costs[k] / plain, "draft", k, tokens, costs[k])
        _, who, k, tokens, cost = choice
        decision = Decision(who, k, tokens, tokens * plain / cost, match.context)
        self.decisions.append(decision)
        self._last = decision
        kind = proposing_of(who)  # once per step: the registry lookup scans its families
        if kind is Proposing.LOOKUP:
            return match.continuation[:k]
        if kind is Proposing.DRAFT:
            assert self.draft is not None
            return self.draft.propose(seq, k)
        return []

    def observe(self, proposed: int, accepted: int) -> None:
        """The step's outcome: `accepted` of its `proposed` tokens were kept."""
        self.draft_rates.fade()
        last = self._last
        if last is not None and proposing_of(last.proposer) is Proposing.DRAFT and proposed > 0:
            self.draft_rates.observe(proposed, accepted)
            # The next draft call mirrors this batch, after which only the newest token is new.
            self._mirror = proposed + 1 if self.mirrors else None
            self._feed = 1
        else:
            self._feed += accepted + 1
