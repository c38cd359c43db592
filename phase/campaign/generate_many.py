"""Many requests at once from the command line (`phase generate --concurrency N --workload
FILE`): a workload's prompts served by phase's batched loop, and what each request and the
whole run measured.

It is the serving study's path on a small scale: the decoder is `Engine.batched`
(phase.decode.batched, continuous batching, a proposer per request), driven by the closed-loop
load generator (phase.serving.load.run_closed) at the concurrency asked for, and its figures
are phase.serving.metrics'. Nothing is written: the record is returned for the command to
print. Every input is checked before a model loads: the workload file (line and field named),
the counts, the sampler settings, and that every prompt fits its context.

A request ends at its token budget or at an end-of-generation token, as a server's would. With
`compare_plain`, each prompt the run used is then decoded alone, plainly, and each greedy
request's tokens are compared with that: batched passes compute a row differently from
one-token passes in the last bits, so where they part the record keeps both passes' top-2
logit gaps (a near-tie flips; a clear margin that flips is a decoder bug).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from phase.base.errors import UsageProblem
from phase.campaign.serving_run import TokenTap
from phase.decode.engine import Engine
from phase.decode.generate import profile_for
from phase.decode.template import format_prompt
from phase.decode.vocab import check_compatible
from phase.decode.vocab_file import VocabFile, check_fit
from phase.policy.batching import BatchDecoder, StepReport
from phase.policy.result import compare_to_plain
from phase.policy.sampling import SamplingSettings
from phase.policy.strategies import Strategy, parse_strategy
from phase.serving.load import run_closed
from phase.serving.metrics import ServingMetrics, serving_metrics
from phase.serving.records import ClosedLoop, RunRecord, to_jsonable
from phase.serving.windows import Energy
from phase.validate.settings import RuleSettings
from phase.workloads.resolve import resolve_workload
from phase.workloads.workload import Workload

Say = Callable[[str], None]
NO_ENERGY = "phase generate reads no energy sensor; phase measure serving does"
NEAR_TIE = RuleSettings().near_tie_gap


@dataclass(frozen=True)
class ManyRequest:
    """What to serve: `workload` is an embedded name or a JSONL path; `n_requests` None sends
    every prompt once; `n_ctx` is each request's context (the engine holds `concurrency`
    of them in one KV buffer)."""

    model: str
    draft: str | None
    strategy: str
    workload: str
    n_tokens: int
    n_ctx: int
    concurrency: int = 1
    n_requests: int | None = None
    raw: bool = False
    threads: int | None = None
    compare_plain: bool = False
    # None: greedy decoding.
    sampling: SamplingSettings | None = None


def check_counts(concurrency: int, n_requests: int | None) -> None:
    """Refuse counts that serve nobody (exit 2), naming the option."""
    if concurrency < 1:
        raise UsageProblem(f"--concurrency: {concurrency} requests at once serves nobody; "
                           "give 1 or more")
    if n_requests is not None and n_requests < 1:
        raise UsageProblem(f"--requests: {n_requests} requests is nothing to serve; give 1 or "
                           "more (leave it out to send every prompt of the workload once)")


def _check_strategy(req: ManyRequest, strategy: Strategy) -> None:
    if req.sampling is not None and not strategy.family.samples:
        raise UsageProblem(f"{strategy.label} has no sampled variant: leave out --temperature")
    if req.sampling is not None and req.compare_plain:
        raise UsageProblem("--compare-plain compares greedy outputs token for token; a sampled "
                           "output is compared by its distribution (the sampled campaigns' "
                           "exactness test): leave out one of --compare-plain, --temperature")
    if strategy.family.needs_draft and not req.draft:
        raise UsageProblem(f"{strategy.label} needs a draft model: pass --draft NAME|PATH")


class _Tap(TokenTap):
    """The serving study's token tap, also saying on stderr as each request finishes."""

    def __init__(self, decoder: BatchDecoder, total: int, say: Say) -> None:
        super().__init__(decoder)
        self.total, self.say, self.finished = total, say, 0

    def step(self) -> StepReport:
        report = super().step()
        for e in report.emissions:
            if e.finished:
                self.finished += 1
                self.say(f"request {e.request_id} done: {len(self.tokens[e.request_id])} "
                         f"tokens ({self.finished}/{self.total})")
        return report


def _prompts(req: ManyRequest, workload: Workload, target: Any, draft: Any) -> list[list[int]]:
    """Every prompt's tokens, each checked to fit a request's context, with the vocabulary
    alone (before the weights load)."""
    out = []
    with VocabFile(target.path) as vocab:
        for p in workload.prompts:
            tokens = format_prompt(vocab, p.text, chat_template=not req.raw)
            check_fit(len(tokens), req.n_tokens, req.n_ctx,
                      what=f"{workload.path or workload.name}: prompt {p.id}")
            out.append(tokens)
        if draft is not None:
            with VocabFile(draft.path) as draft_vocab:
                check_compatible(vocab.vocab_info(), draft_vocab.vocab_info(),
                                 names=(target.path.name, draft.path.name))
    return out


def _warm_up(engine: Engine, strategy: Strategy, sampling: SamplingSettings | None,
             prompt: list[int], n_tokens: int, say: Say) -> None:
    """One short untimed request first: the first decode of a fresh context allocates its
    compute buffers and warms the caches, which would otherwise land in the first requests'
    time to first token (serving benchmarks warm up the same way)."""
    say(f"warm-up: one untimed request of {n_tokens} token(s)")
    decoder = engine.batched(strategy, sampling)
    try:
        run_closed(decoder, [tuple(prompt)], ClosedLoop(1, 1, n_tokens, 0))
    finally:
        decoder.close()


def generate_many(req: ManyRequest, progress: Say | None = None) -> dict[str, Any]:
    """Serve `req` and return its record (see `many_record`)."""
    from phase.models.sources import resolve

    say = progress or (lambda _m: None)
    check_counts(req.concurrency, req.n_requests)
    strategy = parse_strategy(req.strategy)
    _check_strategy(req, strategy)
    workload = resolve_workload(req.workload)
    target = resolve(req.model, progress=lambda m: say(f"target: {m}"))
    draft = None
    if strategy.family.uses_draft and req.draft:
        draft = resolve(req.draft, progress=lambda m: say(f"draft: {m}"))
    prompts = _prompts(req, workload, target, draft)
    n_requests = req.n_requests or len(prompts)
    # The order seed: the sampler's when sampling (one seed reproduces the run), else 0.
    load = ClosedLoop(req.concurrency, n_requests, req.n_tokens,
                      req.sampling.seed if req.sampling is not None else 0)
    say(f"loading {target.path.name}" + (f" + {draft.path.name}" if draft else "")
        + f" for {req.concurrency} sequence(s)")
    with Engine(target.path, draft.path if draft else None, n_ctx=req.n_ctx * req.concurrency,
                n_threads=req.threads, n_threads_batch=req.threads,
                n_seq_max=req.concurrency) as engine:
        if strategy.family.needs_profile:
            profile_for(engine, max(prompts, key=len), req.n_tokens, say)
        _warm_up(engine, strategy, req.sampling, min(prompts, key=len), min(2, req.n_tokens), say)
        decoder = engine.batched(strategy, req.sampling, record_gaps=req.compare_plain)
        tap = _Tap(decoder, n_requests, say)
        say(f"serving {n_requests} request(s) of {workload.name}, {req.concurrency} at once")
        try:
            run = run_closed(tap, [tuple(p) for p in prompts], load)
        finally:
            decoder.close()
        texts = {i: engine.detokenize(t) for i, t in tap.tokens.items()}
        plain = _compare(engine, run, prompts, tap.tokens, decoder.gaps, req.n_tokens, say) \
            if req.compare_plain else {}
        meta = {"model": target.name, "model_path": str(target.path),
                "draft": draft.name if draft else None, "strategy": strategy.label,
                "n_threads": engine.target.n_threads}
    return many_record(req, meta, workload, run, tap.tokens, texts, plain)


def _compare(engine: Engine, run: RunRecord, prompts: list[list[int]],
             tokens: dict[int, list[int]], gaps: dict[int, list[float]] | None, n_tokens: int,
             say: Say) -> dict[int, dict[str, Any]]:
    """Per request: whether its tokens are single-request plain decoding's, up to where the
    request ended (its budget, or an end-of-generation token plain decoding runs past)."""
    references: dict[int, tuple[list[int], list[float]]] = {}
    for index in sorted({r.prompt_index for r in run.requests}):
        say(f"plain reference for prompt {index + 1} of {len(prompts)}")
        result = engine.run(prompts[index], parse_strategy("plain"), n_tokens, record_gaps=True)
        references[index] = (result.token_ids, result.top2_gaps or [])
    out = {}
    for r in run.requests:
        ref, ref_gaps = references[r.prompt_index]
        got = tokens.get(r.id, [])
        matches, first = compare_to_plain(got, ref[:len(got)])
        if matches and len(got) < n_tokens and not (got and engine.target.is_end(got[-1])):
            matches, first = False, len(got)
        entry: dict[str, Any] = {"matches_plain": matches, "first_divergence": first,
                                 "divergence_gaps": None, "near_tie": None}
        if first is not None and gaps is not None and first < min(len(got), len(ref)):
            pair = [gaps[r.id][first], ref_gaps[first]]
            entry["divergence_gaps"] = pair
            entry["near_tie"] = max(pair) < NEAR_TIE
        out[r.id] = entry
    return out


def _no_energy(metrics: ServingMetrics) -> dict[str, Any]:
    """The metrics as JSON, their energy saying why there is none: this command reads no
    sensor, which is not the same as the machine having none."""
    blank = Energy(None, None, None, NO_ENERGY)
    steady = metrics.steady_state
    return to_jsonable(replace(
        metrics, whole_run=replace(metrics.whole_run, energy=blank),
        steady_state=replace(steady, energy=blank) if steady is not None else None))


def many_record(req: ManyRequest, meta: dict[str, Any], workload: Workload, run: RunRecord,
                tokens: dict[int, list[int]], texts: dict[int, str],
                plain: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The run as JSON values: `requests` one entry per request in arrival order (its prompt,
    latencies from phase.serving.metrics, proposals, tokens and text, and with compare_plain
    whether it matches plain), `aggregate` the run's figures."""
    metrics = _no_energy(serving_metrics(run, steady_b=req.concurrency))
    per_request = {m["id"]: m for m in metrics.pop("requests")}
    requests = []
    for r in run.requests:
        m = per_request[r.id]
        prompt = workload.prompts[r.prompt_index]
        requests.append({
            "id": r.id, "prompt_id": prompt.id, "category": prompt.category,
            "prompt_tokens": r.prompt_tokens, "output_tokens": r.output_tokens,
            "queued_s": m["queued_s"], "ttft_s": m["ttft_s"], "tpot_s": m["tpot_s"],
            "e2e_s": m["e2e_s"], "proposed": sum(e.proposed for e in r.emissions),
            "accepted": sum(e.accepted for e in r.emissions),
            "token_ids": tokens.get(r.id, []), "text": texts.get(r.id, ""),
            **plain.get(r.id, {})})
    steps = run.steps
    aggregate = {
        **metrics, "steps": len(steps),
        "mean_batch": float(np.mean([s.active for s in steps])) if steps else None,
        "mean_batch_tokens": float(np.mean([s.batch_tokens for s in steps])) if steps else None,
    }
    return {
        **meta, "chat_template": not req.raw,
        "sampling": req.sampling.as_dict() if req.sampling is not None else None,
        "workload": {"name": workload.name, "source": workload.source,
                     "sha256": workload.sha256, "prompts": len(workload.prompts)},
        "load": to_jsonable(run.load), "n_ctx_per_request": req.n_ctx,
        "compared_to_plain": req.compare_plain,
        "requests": requests, "aggregate": aggregate,
    }
