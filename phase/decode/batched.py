"""Many requests decoded together: continuous batching in phase's own loop (a BatchDecoder,
phase.policy.batching).

The target context holds one sequence per request slot (n_seq_max = capacity, one KV buffer
shared by all). `admit` prefills a request's prompt, all but its last token, into a free
sequence. Each `step` is ONE llama_decode carrying, for every active request, its last
accepted token plus its proposal, each row tagged with the request's sequence and position;
then, per request, the engine's step (phase.decode.engine): greedy verification
(policy.acceptance) or rejection sampling (policy.speculative_sampling) over that request's
rows, the rejected positions removed from its sequence only, the emitted tokens appended. A
request ends at max_new_tokens or at an end-of-generation token; its sequence is then freed
(in the draft too) and the slot takes the next admitted request.

Proposers are per request, built by the strategy's family (phase.policy.strategies) from
this module's kit: n-gram state per request, draft proposals through one shared draft context
that drafts every asking request in the same passes (batched_draft), and `auto` priced at the
step's batch (AutoProposer.at_batch) with this run's own measured step costs
(policy.step_prices) and one acceptance evidence for every request (policy.auto.Evidence). A
proposal is capped at the request's tokens still to generate minus one, as in the one-request
loops, so no request overshoots max_new_tokens.

Sampling: each request draws from its own generator, seeded by the run's seed and the
request's id, so a request's tokens do not depend on which others share its steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from phase.base.errors import UsageProblem
from phase.costmodel import CostTable
from phase.decode.batched_draft import BatchedDraft, DraftSlot, SampledDraftSlot
from phase.decode.loops import Divergence
from phase.decode.native import NativeModel
from phase.decode.sampled import TargetRows
from phase.policy.acceptance import greedy_verdict
from phase.policy.auto import K_MAX, AutoProposer, Evidence
from phase.policy.batching import Emission, Request, StepReport
from phase.policy.proposers import AdaptiveNgramProposer, NgramProposer
from phase.policy.sampled_auto import SampledAuto
from phase.policy.sampled_proposers import AdaptiveNgramSampler, NgramSampler
from phase.policy.sampling import SamplingSettings
from phase.policy.speculative_sampling import Rows, Verdict, rejection
from phase.policy.step_prices import StepPrices
from phase.policy.strategies import Strategy

Costs = Callable[[int], CostTable]


class SlotProposers:
    """What a family builds one request's proposer from (phase.policy.strategies.Proposers):
    the request's handle on the shared draft, its own n-gram state, auto at the batch."""

    def __init__(self, draft: BatchedDraft | None, slot: int, costs: Costs | None,
                 settings: SamplingSettings | None,
                 evidence: dict[int, Evidence] | None = None) -> None:
        self._draft, self._slot, self._costs, self._settings = draft, slot, costs, settings
        # The run's auto evidence by k_max, shared by every request (auto.Evidence).
        self._evidence = {} if evidence is None else evidence

    def draft(self) -> DraftSlot | None:
        if self._draft is None:
            return None
        kind = DraftSlot if self._settings is None else SampledDraftSlot
        return kind(self._draft, self._slot)

    def ngram(self, n_min: int, n_max: int, k_max: int | None) -> Any:
        if self._settings is None:
            return (NgramProposer(n_min, n_max) if k_max is None
                    else AdaptiveNgramProposer(n_min, n_max, k_max))
        return NgramSampler(n_min, n_max) if k_max is None \
            else AdaptiveNgramSampler(n_min, n_max, k_max)

    def auto(self, kv_tokens: int, k_max: int) -> Any:
        if self._costs is None:
            raise UsageProblem("auto needs a cost profile: measure one with Engine.profile() "
                               "and pass it to Engine.use_profile()")
        table = self._costs(kv_tokens)
        draft = self.draft()
        k_max = k_max if self._settings is None else min(K_MAX, k_max)
        evidence = self._evidence.setdefault(k_max, Evidence.fresh(k_max))
        if self._settings is None:
            # No mirror pass: the batched draft keeps its own rows (batched_draft). The draft
            # reads a prompt only when auto first drafts for it (AutoProposer's lazy_draft).
            return AutoProposer(table, draft, k_max=k_max, mirrors=False, lazy_draft=True,
                                evidence=evidence)
        return SampledAuto(table, draft if isinstance(draft, SampledDraftSlot) else None,
                           k_max, evidence)


@dataclass
class _Active:
    """One admitted request: its sequence id, tokens (prompt + emitted) and proposer."""

    request: Request
    slot: int
    seq: list[int]
    proposer: Any
    rng: np.random.Generator | None
    emitted: int = 0
    proposal: list[int] = field(default_factory=list)
    q_rows: Rows | None = None
    # what it is expected to emit, until it first parts from it (then None: nothing to watch)
    expected: Sequence[int] | None = None

    @property
    def pos(self) -> int:  # KV position of seq[-1], the one token the target has not seen
        return len(self.seq) - 1

    @property
    def remaining(self) -> int:
        return self.request.max_new_tokens - self.emitted


class BatchedDecoder:
    """A BatchDecoder over a target (and draft) whose contexts hold `capacity` sequences.

    `settings` None decodes greedily; otherwise every request samples with them (its seed
    mixed with the request's id). `costs` is auto's cost table at a KV fill. `record_gaps`:
    keep, per request id, the top-2 logit gap of the row each emitted token came from (the
    evidence that tells a near-tie flip from a decoder bug, as the one-request runs keep).
    `expected`: each prompt's expected output (by its tokens); a request of that prompt then
    records in `divergences` where it first parts from it and the top-2 logit gap of the
    row that emitted the differing token: one gap per differing request, not one per token
    as `record_gaps` costs (a row of a 151k vocabulary takes about 1 ms).

    `prefill_s`: per request id, the seconds its target prefill took at admission, that
    pass alone (no draft, no proposer): the same work in every run that serves the same
    prompts, whatever the strategy, so a run's prefill speed tells a slowed machine from a
    slow strategy (phase.analysis.slowdown)."""

    def __init__(self, target: NativeModel, strategy: Strategy, *,
                 draft: NativeModel | None = None, costs: Costs | None = None,
                 settings: SamplingSettings | None = None, capacity: int | None = None,
                 record_gaps: bool = False,
                 expected: Mapping[tuple[int, ...], Sequence[int]] | None = None) -> None:
        self.target, self.strategy, self.settings = target, strategy, settings
        self._capacity = capacity or target.n_seq_max
        for role, model in (("target", target), ("draft", draft)):
            if model is not None and model.n_seq_max < self._capacity:
                raise UsageProblem(f"the {role} context holds {model.n_seq_max} sequences, "
                                   f"fewer than a capacity of {self._capacity}")
        if settings is not None and not strategy.family.samples:
            raise UsageProblem(f"{strategy.label} has no sampled variant")
        uses_draft = draft is not None and strategy.family.uses_draft
        self._draft = BatchedDraft(draft, settings) if uses_draft and draft else None
        self._costs = costs
        self._slots: list[_Active | None] = [None] * self._capacity
        self.steps = 0
        self.gaps: dict[int, list[float]] | None = {} if record_gaps else None
        self._expected = expected
        self.divergences: dict[int, Divergence] = {}
        self.prefill_s: dict[int, float] = {}
        self.step_prices = StepPrices()
        self._evidence: dict[int, Evidence] = {}

    @property
    def capacity(self) -> int:
        return self._capacity

    def active(self) -> int:
        return sum(a is not None for a in self._slots)

    def admit(self, request: Request) -> None:
        if not request.prompt:
            raise UsageProblem(f"request {request.id}: an empty prompt")
        if request.max_new_tokens < 1:
            raise UsageProblem(f"request {request.id}: max_new_tokens must be >= 1")
        need = len(request.prompt) + request.max_new_tokens
        if need > self.target.n_ctx:
            raise UsageProblem(f"request {request.id}: {need} tokens do not fit a context of "
                               f"{self.target.n_ctx}")
        slot = next((i for i, a in enumerate(self._slots) if a is None), None)
        if slot is None:
            raise ValueError(f"no free sequence for request {request.id} "
                             f"({self._capacity} active)")
        prompt = list(request.prompt)
        self.target.seq_remove(slot, 0)
        if len(prompt) > 1:
            n = len(prompt) - 1
            started = time.perf_counter()
            self.target.decode_rows(prompt[:-1], list(range(n)), [slot] * n, [False] * n)
            self.target.synchronize()
            self.prefill_s[request.id] = time.perf_counter() - started
        kit = SlotProposers(self._draft, slot, self._costs, self.settings, self._evidence)
        proposer = self.strategy.family.proposer(
            self.strategy, kit, len(prompt) + request.max_new_tokens // 2)
        if proposer is not None:
            (proposer.begin if self.settings is None else proposer.restart)(prompt)
        rng = None
        if self.settings is not None:
            rng = np.random.default_rng((self.settings.seed, request.id))
        watch = self._expected.get(tuple(prompt)) if self._expected is not None else None
        self._slots[slot] = _Active(request, slot, prompt, proposer, rng, expected=watch)

    def step(self) -> StepReport:
        active = [a for a in self._slots if a is not None]
        if not active:
            return StepReport((), 0)
        self._propose(active)
        tokens: list[int] = []
        positions: list[int] = []
        seqs: list[int] = []
        starts: list[int] = []
        for a in active:
            starts.append(len(tokens))
            rows = [a.seq[-1], *a.proposal]
            tokens.extend(rows)
            positions.extend(range(a.pos, a.pos + len(rows)))
            seqs.extend([a.slot] * len(rows))
        started = time.perf_counter()
        self.target.decode_rows(tokens, positions, seqs, [True] * len(tokens))
        self.steps += 1
        emissions = tuple(self._settle(a, row0) for a, row0 in zip(active, starts, strict=True))
        # The pass and its verification, what auto's `at_batch` prices per row: draft passes
        # are priced apart (their own curve), and admissions' prefill is outside any step.
        self.step_prices.observe(len(tokens), (time.perf_counter() - started) * 1000.0)
        return StepReport(emissions, len(tokens))

    def _propose(self, active: list[_Active]) -> None:
        """Every request's proposal for this step; draft proposals drafted together last."""
        k = self.strategy.max_proposal
        carried = len(active)
        for a in active:
            a.proposal, a.q_rows = [], None
            limit = min(k, a.remaining - 1)
            if a.proposer is None:
                continue
            at_batch = getattr(a.proposer, "at_batch", None)
            if at_batch is not None:
                at_batch(len(active), carried, self.step_prices)
            if self.settings is None:
                a.proposal = list(a.proposer.propose(a.seq, limit))[:limit]
            else:
                made, a.q_rows = a.proposer.propose(a.seq, limit, a.rng)
                a.proposal = list(made)[:limit]
            carried += len(a.proposal) or (self._draft.asked(a.slot) if self._draft else 0)
        if self._draft is not None:
            drafted = self._draft.draft()
            for a in active:
                if a.slot in drafted:
                    tokens, a.q_rows = drafted[a.slot]
                    a.proposal = tokens[:max(0, a.remaining - 1)]

    def _settle(self, a: _Active, row0: int) -> Emission:
        """Verify one request's rows, roll its sequence back past the rejections, emit."""
        target, proposal = self.target, a.proposal
        verdict: Verdict
        if self.settings is None:
            verdict = greedy_verdict(proposal, lambda i: target.argmax(row0 + i))
        else:
            assert a.rng is not None
            p = TargetRows(target, len(proposal) + 1, self.settings, row0)
            verdict = rejection(p, a.q_rows, proposal, a.rng)
        m = verdict.accepted
        if m < len(proposal):
            target.seq_remove(a.slot, a.pos + m + 1)
        kept = verdict.tokens[:a.remaining]
        end = next((i for i, t in enumerate(kept) if target.is_end(t)), None)
        if end is not None:
            kept = kept[:end + 1]
        if self.gaps is not None:  # kept[i] came from row i
            self.gaps.setdefault(a.request.id, []).extend(
                target.top2_gap(row0 + i) for i in range(len(kept)))
        if a.expected is not None:
            self._watch(a, kept, row0)
        a.seq.extend(kept)
        a.emitted += len(kept)
        observe = getattr(a.proposer, "observe", None)
        if observe is not None:
            observe(len(proposal), m)
        finished = end is not None or a.remaining <= 0
        if finished:
            self._free(a.slot)
        return Emission(a.request.id, tuple(kept), len(proposal), min(m, len(kept)), finished)

    def _watch(self, a: _Active, kept: Sequence[int], row0: int) -> None:
        """Record where `a` first parts from its expected output. Here, before the next
        step's decode, the rows' logits are still this step's: kept[i] came from row i."""
        assert a.expected is not None
        for i, token in enumerate(kept):
            at = a.emitted + i
            if at >= len(a.expected) or token != a.expected[at]:
                self.divergences[a.request.id] = Divergence(at, self.target.top2_gap(row0 + i))
                a.expected = None
                return

    def _free(self, slot: int) -> None:
        self.target.seq_remove(slot, 0)
        if self._draft is not None:
            self._draft.free(slot)
        self._slots[slot] = None

    def close(self) -> None:
        """Free every sequence (the requests still active are dropped)."""
        for slot, a in enumerate(self._slots):
            if a is not None:
                self._free(slot)
