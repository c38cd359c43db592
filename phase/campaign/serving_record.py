"""What the results file records of one serving run (the contract: phase.results.serving):
the load generator's record and metrics as a ServingRun, and the whole load as the Run's own
fields, so every summary phase computes for one-request runs applies to it unchanged.

A request's `matches_plain` compares its output with plain single-request greedy decoding of
its prompt (the campaign's plain reference), cut where the batched decoder ends a request: at
its first end-of-generation token (the one-request loops generate a fixed count past it). A
request that differs records where (`first_divergence`) and the evidence there, as a
one-request run does: the top-2 logit gap of the batched row that emitted its differing token
(the decoder's, phase.decode.batched `expected`) and the reference's gap at that position.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from phase.decode.loops import Divergence
from phase.policy.result import compare_to_plain
from phase.results import Run, token_sha256
from phase.results.serving import (
    ServingPercentiles,
    ServingRequest,
    ServingRun,
    ServingWindow,
)
from phase.serving.metrics import Percentiles, ServingMetrics
from phase.serving.records import RunRecord
from phase.serving.windows import Window


def expected_output(reference: Sequence[int], is_end: Callable[[int], bool]) -> list[int]:
    """Plain decoding's output as a served request ends it: up to its first end token."""
    end = next((i for i, t in enumerate(reference) if is_end(t)), None)
    return list(reference if end is None else reference[:end + 1])


def _pct(p: Percentiles) -> ServingPercentiles:
    return ServingPercentiles(n=p.n, mean=p.mean, p50=p.p50, p90=p.p90, p99=p.p99)


def _window(w: Window, origin: float) -> ServingWindow:
    e = w.energy
    return ServingWindow(
        name=w.name,  # type: ignore[arg-type]  # "whole run" or "steady state"
        start_s=w.start - origin, end_s=w.end - origin, duration_s=w.duration_s,
        output_tokens=w.output_tokens, finished_requests=w.finished_requests,
        output_tokens_per_s=w.output_tokens_per_s, requests_per_s=w.requests_per_s,
        energy_j=e.joules, energy_per_token_j=e.per_token_j,
        energy_per_request_j=e.per_request_j, energy_reason=e.reason)


@dataclass(frozen=True)
class ServedRun:
    """One serving run as the load generator saw it: its record and metrics, every
    request's tokens (by request id), the prompts' names (by the record's prompt index) and
    each prompt's expected output; the decoder's first divergences (by request id) and each
    prompt's reference top-2 gaps (None where the reference records none); each request's
    target prefill seconds (by request id; phase.decode.batched `prefill_s`)."""

    record: RunRecord
    metrics: ServingMetrics
    tokens: Mapping[int, Sequence[int]]
    prompt_names: Sequence[str]
    expected: Mapping[str, Sequence[int]]
    divergences: Mapping[int, Divergence] = field(default_factory=dict)
    reference_gaps: Mapping[str, Sequence[float] | None] = field(default_factory=dict)
    prefill_s: Mapping[int, float] = field(default_factory=dict)

    def _gaps(self, request_id: int, prompt: str,
              first: int | None) -> tuple[float | None, float | None]:
        """(the batched row's gap, the reference's) at the request's first divergence;
        the decoder's gap only where it saw the divergence at the same index."""
        if first is None:
            return None, None
        seen = self.divergences.get(request_id)
        ref = self.reference_gaps.get(prompt)
        return (seen.gap if seen is not None and seen.at == first else None,
                ref[first] if ref is not None and first < len(ref) else None)

    def requests(self) -> list[ServingRequest]:
        origin = self.record.started
        by_id = {m.id: m for m in self.metrics.requests}
        out = []
        for r in sorted(self.record.requests, key=lambda r: r.id):
            m, ids = by_id[r.id], list(self.tokens.get(r.id, ()))
            name = self.prompt_names[r.prompt_index]
            first = r.first_token_at
            matches, at = compare_to_plain(ids, self.expected[name])
            gap_verify, gap_reference = self._gaps(r.id, name, at)
            out.append(ServingRequest(
                id=r.id, prompt=name, prompt_tokens=r.prompt_tokens,
                arrival_s=r.arrival - origin, admission_s=r.admission - origin,
                first_token_s=None if first is None else first - origin,
                finish_s=r.finish - origin, output_tokens=r.output_tokens, token_ids=ids,
                proposed=sum(e.proposed for e in r.emissions),
                accepted=sum(e.accepted for e in r.emissions),
                ttft_s=m.ttft_s, tpot_s=m.tpot_s, e2e_s=m.e2e_s,
                matches_plain=matches, first_divergence=at,
                divergence_gap_verify=gap_verify, divergence_gap_reference=gap_reference,
                prefill_s=self.prefill_s.get(r.id)))
        return out

    def serving(self, concurrency: int, seed: int) -> ServingRun:
        m, steps = self.metrics, self.record.steps
        goodput = m.goodput
        return ServingRun(
            concurrency=concurrency, seed=seed, requests=self.requests(), steps=len(steps),
            mean_batch=sum(s.active for s in steps) / len(steps) if steps else 0.0,
            ttft_s=_pct(m.ttft_s), tpot_s=_pct(m.tpot_s), itl_s=_pct(m.itl_s),
            e2e_s=_pct(m.e2e_s), whole_run=_window(m.whole_run, self.record.started),
            steady_state=(None if m.steady_state is None
                          else _window(m.steady_state, self.record.started)),
            steady_state_reason=m.steady_state_reason,
            goodput_met=goodput.met if goodput else None,
            goodput_requests_per_s=goodput.requests_per_s if goodput else None,
            mean_accepted_length=m.acceptance.mean_accepted_length)


def first_divergence(serving: ServingRun, expected: Mapping[str, Sequence[int]]) -> int | None:
    """Where the run's concatenated output first parts from the concatenated expected
    outputs (None where every request matches)."""
    at = 0
    for r in serving.requests:
        matches, i = compare_to_plain(r.token_ids, expected[r.prompt])
        if not matches:
            return at + (i or 0)
        at += len(r.token_ids)
    return None


def acceptance_of(takes_k: bool, drafted: int, accepted: int) -> tuple[float | None, str | None]:
    """As the one-request runs record it (phase.decode.timed)."""
    if not takes_k:
        return None, "plain decoding proposes no tokens"
    if drafted == 0:
        return None, "no tokens were proposed in this run"
    return accepted / drafted, None


@dataclass(frozen=True)
class RunIdentity:
    """The scheduled run's identity and the strategy's facts a Run records."""

    run_id: str
    repeat: int
    order: int
    pool: str
    strategy: str
    k: int | None
    takes_k: bool


def whole_load_run(who: RunIdentity, serving: ServingRun, record: RunRecord,
                   expected: Mapping[str, Sequence[int]], *, text: str,
                   clocks: tuple[float, float, float]) -> Run:
    """The Run whose fields describe the whole load (phase.results.serving's docstring).
    `clocks`: (started and ended on the unix clock, CPU seconds of this process)."""
    ids = [t for r in serving.requests for t in r.token_ids]
    drafted = sum(r.proposed for r in serving.requests)
    accepted = sum(r.accepted for r in serving.requests)
    acceptance, reason = acceptance_of(who.takes_k, drafted, accepted)
    whole_s = record.ended - record.started
    in_steps = sum(s.ended - s.started for s in record.steps)
    matches = all(r.matches_plain for r in serving.requests)
    return Run(
        id=who.run_id, repeat=who.repeat, order=who.order, prompt=who.pool,
        strategy=who.strategy, k=who.k, started_unix_s=clocks[0], ended_unix_s=clocks[1],
        prompt_tokens=sum(r.prompt_tokens for r in serving.requests),
        # outside the decoder's steps: admitting (prefilling) requests, and the loop itself
        prefill_s=max(0.0, whole_s - in_steps), decode_s=whole_s, tokens=len(ids),
        tokens_per_s=len(ids) / whole_s if whole_s > 0 else 0.0, steps=serving.steps,
        drafted=drafted, accepted=accepted, acceptance=acceptance, acceptance_reason=reason,
        trace=[], cpu_s=clocks[2], energy=[], temperatures_c={},
        output_sha256=token_sha256(ids), output_text=text, token_ids=ids,
        matches_plain=matches,
        first_divergence=None if matches else first_divergence(serving, expected),
        samples=[], serving=serving)
