"""The serving_reference section: phase's batched decoding against llama.cpp's own
`llama-server` with the same settings, under a closed loop at concurrency N.

For each strategy (plain, ngram-simple-K) and each N in CONCURRENCIES, one server is started with
`-np N` (bench/llama_server.py) and phase's batched decoder is opened with N sequences; their
runs alternate (bench.common.alternate), each a closed loop of N clients over the same
requests: the project's prompts, chat-formatted, sent as token ids, in a seeded order, each
generating at most n_predict tokens greedily (both sides stop at end-of-generation, as a
`phase.policy.batching.Request` does). Rows: phase's aggregate tokens/s over the server's
(target: within 10%) and, for n-gram, the difference in acceptance (target: within 5 points),
medians of the repeats.

The phase side is `phase_side`/`phase_decoder`: phase's batched decoder
(phase.decode.batched, opened through `Engine.batched`) driven in a closed loop through the
BatchDecoder interface (phase/policy/batching.py). Where it cannot run, the section measures
the server alone and every row says why phase's figure is missing.
"""

from __future__ import annotations

import importlib
import random
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench.common import Context, Section, alternate, median, ratio
from bench.decode_bench import NGRAM_K, PROMPTS
from bench.llama_server import Aggregate, LlamaServer, ServerSettings, aggregate, closed_loop
from phase.analysis.bench_rows import BenchRow
from phase.base.errors import PhaseError
from phase.policy.batching import BatchDecoder, Request
from phase.policy.strategies import Strategy, is_baseline, parse_strategy

NAME = "serving_reference"
CONCURRENCIES = (1, 2, 4, 8)
# llama.cpp's own n-gram rule on both sides (phase.policy.ngram_simple), so that the
# acceptance row compares the same proposals: phase's `ngram-K` matches on the longest
# context instead, and made fewer, all-kept proposals at N=8 (bench/results/2026-12-07-vm.md).
STRATEGIES = ("plain", f"ngram-simple-{NGRAM_K}")
PROMPT_NAMES = ("edit", "code", "prose")
ROUNDS = 2  # requests per client in one run: every client sends twice
ORDER_SEED = 46
SPEED_TOLERANCE = 0.10  # phase within 10% of the server's tokens/s
ACCEPT_TOLERANCE = 0.05  # acceptance within 5 points
PHASE_DECODER = "phase.decode.batched"
SERVER = "llama-server"


# --- the phase side -------------------------------------------------------------------------


def _batched_module() -> Any:
    try:
        return importlib.import_module(PHASE_DECODER)
    except ModuleNotFoundError as exc:
        if exc.name is None or not PHASE_DECODER.startswith(exc.name):
            raise
        raise PhaseError(f"phase's batched decoder is not available yet ({PHASE_DECODER} "
                         "does not exist in this checkout): the serving_reference section "
                         "measures llama-server alone until it lands") from None


def phase_unavailable() -> str | None:
    """Why the phase side cannot run here, or None when it can."""
    try:
        _batched_module()
    except PhaseError as exc:
        return str(exc)
    return None


@contextmanager
def phase_decoder(model: Path, strategy: Strategy, concurrency: int, *, draft: Path | None,
                  threads: int, n_ctx: int) -> Iterator[BatchDecoder]:
    """phase's batched decoder with `concurrency` sequences, closed on leaving the block. Its
    one KV buffer holds `n_ctx` per sequence, as the server's --kv-unified with -np N does."""
    module = _batched_module()
    from phase.decode import Engine

    with Engine(model, draft, n_ctx=n_ctx * concurrency, n_threads=threads,
                n_seq_max=concurrency) as engine:
        decoder: Any = engine.batched(strategy)
        assert isinstance(decoder, module.BatchedDecoder)
        try:
            yield decoder
        finally:
            decoder.close()


def drive(decoder: BatchDecoder, prompts: Sequence[Sequence[int]], order: Sequence[int],
          concurrency: int, n_predict: int) -> Aggregate:
    """A closed loop at `concurrency` over a BatchDecoder: as soon as a request finishes,
    the next in `order` is admitted. Aggregate figures as the server side counts them."""
    pending = deque(Request(i, tuple(prompts[p]), n_predict) for i, p in enumerate(order))
    limit = min(concurrency, decoder.capacity)
    emitted = proposed = accepted = 0
    start = time.perf_counter()
    while pending or decoder.active():
        while pending and decoder.active() < limit:
            decoder.admit(pending.popleft())
        report = decoder.step()
        if not report.emissions:
            raise PhaseError(f"the batched decoder stepped {decoder.active()} active "
                             "request(s) and emitted nothing")
        for emission in report.emissions:
            emitted += len(emission.tokens)
            proposed += emission.proposed
            accepted += emission.accepted
    return Aggregate(requests=len(order), output_tokens=emitted,
                     wall_s=time.perf_counter() - start, drafted=proposed, accepted=accepted)


def phase_side(model: Path, strategy: Strategy, concurrency: int,
               prompts: Sequence[Sequence[int]], n_predict: int, *,
               order: Sequence[int] | None = None, draft: Path | None = None,
               threads: int = 1, n_ctx: int = 4096) -> Aggregate:
    """phase's aggregate figures for one closed-loop run (every prompt once unless `order`
    says otherwise); PhaseError "not available yet" until the batched decoder exists."""
    with phase_decoder(model, strategy, concurrency, draft=draft, threads=threads,
                       n_ctx=n_ctx) as decoder:
        return drive(decoder, prompts, order or range(len(prompts)), concurrency, n_predict)


# --- the server side ------------------------------------------------------------------------


def server_run(server: LlamaServer, prompts: Sequence[Sequence[int]], order: Sequence[int],
               concurrency: int, n_predict: int) -> Aggregate:
    records = closed_loop(lambda p: server.complete(prompts[p], n_predict, p), order,
                          concurrency)
    return aggregate(records)


def request_order(n_prompts: int, concurrency: int, rounds: int = ROUNDS,
                  seed: int = ORDER_SEED) -> list[int]:
    """Which prompt each request sends: a seeded shuffle of the prompts, repeated until
    every one of `concurrency` clients has `rounds` requests."""
    shuffled = list(range(n_prompts))
    random.Random(seed).shuffle(shuffled)
    return [shuffled[i % n_prompts] for i in range(concurrency * rounds)]


# --- the table ------------------------------------------------------------------------------


def _values(runs: Sequence[Aggregate], field: str) -> list[float]:
    values = [getattr(r, field) for r in runs]
    return [float(v) for v in values if v is not None]


def ratio_rows(label: str, concurrency: int, runs: dict[str, list[Aggregate]],
               phase_problem: str | None) -> list[BenchRow]:
    """The rows of one (strategy, concurrency): tokens/s phase over server, and for a
    speculating strategy the acceptance difference phase minus server (points)."""
    item = f"{label} N={concurrency}"
    phase_runs, server_runs = runs.get("phase", []), runs[SERVER]
    phase_tps, server_tps = (median(_values(phase_runs, "tokens_per_s")),
                             median(_values(server_runs, "tokens_per_s")))
    r = ratio(phase_tps, server_tps)
    why = f"phase side: {phase_problem}" if phase_problem else ""
    rows = [BenchRow(
        NAME, f"{item} tok/s", phase_tps, server_tps, SERVER, "tok/s", r,
        f"within {100 * SPEED_TOLERANCE:.0f}%",
        None if r is None else abs(r - 1.0) <= SPEED_TOLERANCE,
        why or "aggregate output tokens over wall time, closed loop",
        {"phase": _values(phase_runs, "tokens_per_s"),
         SERVER: _values(server_runs, "tokens_per_s")})]
    if is_baseline(label):
        return rows
    phase_acc = median(_values(phase_runs, "acceptance"))
    server_acc = median(_values(server_runs, "acceptance"))
    diff = None if phase_acc is None or server_acc is None else phase_acc - server_acc
    rows.append(BenchRow(
        NAME, f"{item} acceptance", phase_acc, server_acc, SERVER, "fraction", diff,
        f"within {100 * ACCEPT_TOLERANCE:.0f} pts",
        None if diff is None else abs(diff) <= ACCEPT_TOLERANCE,
        why or "ratio column = phase - server (acceptance points)",
        {"phase": _values(phase_runs, "acceptance"),
         SERVER: _values(server_runs, "acceptance"),
         "phase_drafted": _values(phase_runs, "drafted"),
         f"{SERVER}_drafted": _values(server_runs, "drafted")}))
    return rows


# --- the section ----------------------------------------------------------------------------


def _prompts(ctx: Context) -> list[list[int]]:
    """The project's prompts, chat-formatted as a campaign sends them, as token ids."""
    from phase.campaign import load_prompt
    from phase.decode import Engine

    with Engine(ctx.target_path, None, n_ctx=ctx.n_ctx, n_threads=ctx.threads) as engine:
        return [engine.format_prompt(load_prompt(PROMPTS / f"{name}.txt").text)
                for name in PROMPT_NAMES]


def extra_buffers(ctx: Context) -> bool:
    """phase's extra-CPU-buffer decision for the target, which the server must share."""
    from phase.decode import cpu_buffers

    return cpu_buffers.for_this_build(ctx.target_path).enabled


def _measure(ctx: Context, label: str, concurrency: int, prompts: list[list[int]],
             phase_problem: str | None) -> dict[str, list[Aggregate]]:
    """One (strategy, concurrency): a server and, where it exists, phase's decoder, their
    runs alternating."""
    assert ctx.server_bin is not None
    strategy = parse_strategy(label)
    order = request_order(len(prompts), concurrency)
    draft = ctx.draft_path if strategy.family.uses_draft else None
    settings = ServerSettings(ctx.target_path, concurrency, ctx.threads, ctx.n_ctx, strategy,
                              draft, extra_buffers(ctx))
    log = ctx.workdir / f"llama-server-{label}-{concurrency}.log"
    with ExitStack() as stack:
        server = stack.enter_context(LlamaServer(ctx.server_bin, settings, log))
        arms: dict[str, Any] = {
            SERVER: lambda: server_run(server, prompts, order, concurrency, ctx.tokens)}
        if phase_problem is None:
            decoder = stack.enter_context(phase_decoder(
                ctx.target_path, strategy, concurrency, draft=draft, threads=ctx.threads,
                n_ctx=ctx.n_ctx))
            arms["phase"] = lambda: drive(decoder, prompts, order, concurrency, ctx.tokens)
        return alternate(ctx.repeats, arms, ctx.log)


def run(ctx: Context) -> Section:
    section = Section(NAME)
    if ctx.server_bin is None:
        section.skipped = f"llama-server unavailable: {ctx.server_problem}"
        return section
    phase_problem = phase_unavailable()
    if phase_problem:
        ctx.log(phase_problem)
    prompts = _prompts(ctx)
    table: dict[str, dict[str, Any]] = {}
    for label in STRATEGIES:
        for n in CONCURRENCIES:
            ctx.log(f"{label} at concurrency {n}")
            runs = _measure(ctx, label, n, prompts, phase_problem)
            section.rows.extend(ratio_rows(label, n, runs, phase_problem))
            table[f"{label} N={n}"] = {arm: [a.as_dict() for a in rs]
                                       for arm, rs in runs.items()}
    section.info = {
        "target": ctx.target_name, "prompts": list(PROMPT_NAMES),
        "chat_template": "formatted, then sent as token ids to both sides",
        "concurrencies": list(CONCURRENCIES), "strategies": list(STRATEGIES),
        "requests_per_run": {n: n * ROUNDS for n in CONCURRENCIES}, "order_seed": ORDER_SEED,
        "n_predict": ctx.tokens, "n_ctx_per_slot": ctx.n_ctx,
        "server": "llama-server -np N --kv-unified, no prompt cache, greedy; ngram-simple-K "
                  "(phase.policy.ngram_simple on phase's side) as --spec-type ngram-simple "
                  "(size-n = phase's ngram_n_min, size-m = K)",
        "phase": phase_problem or f"{PHASE_DECODER}.BatchedDecoder, closed loop",
        "prompt_tokens": [len(p) for p in prompts],
        "runs": table,
    }
    return section

