"""One timed sampled run for a campaign: the greedy Engine.run's window, with the sampled loops.

The same shape as Engine.run so a sampled run is measured exactly as a greedy one: prefill
(every model in play takes the prompt but its last token) outside the window, the decode
window between the two callbacks, wall and CPU time by `timed.timed_decode`, and, where the
energy window must be longer than one decode, more passes back to back from the prompt's
cache. Each pass draws with the run's own seed, so every pass repeats the first's tokens (as a
greedy pass does) and the run is regenerable from its recorded settings. The greedy loops are
untouched: nothing here runs for a temperature-0 run.

Proposals are as in phase.decode.sampled: draft-k draws from the draft's q (the same
truncation and temperature as the target), n-gram proposes point masses (a fixed length for
`ngram-k`, the greedy loop's adaptive length for a bare `ngram`), auto decides per step
(phase.decode.sampled_auto); every proposal is verified by rejection sampling.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from phase.decode.loops import Decoded
from phase.decode.proposer_kits import SampledProposers
from phase.decode.sampled import (
    DraftSampler,
    SampledProposer,
    SampledRun,
    plain_sampled,
    speculate_sampled,
)
from phase.decode.sampling import SamplingSettings
from phase.decode.timed import decode_result, timed_decode
from phase.errors import UsageProblem
from phase.policy.strategies import Strategy
from phase.results import Pass, token_sha256

if TYPE_CHECKING:
    from phase.decode.engine import Engine
    from phase.decode.result import DecodeResult

Callback = Callable[[], None] | None


def _proposer(engine: Engine, strategy: Strategy, settings: SamplingSettings,
              kv_tokens: int) -> tuple[SampledProposer | None, DraftSampler | None]:
    """The run's proposer, and the draft sampler whose cache the prefill must build."""
    if not strategy.family.samples:
        raise UsageProblem(f"{strategy.label} has no sampled variant: run it at temperature 0")
    proposers = SampledProposers(engine.draft, engine.cost_table, settings)
    return strategy.family.proposer(strategy, proposers, kv_tokens), proposers.prefill_draft


def _loop(engine: Engine, prompt: list[int], n_tokens: int, strategy: Strategy,
          proposer: SampledProposer | None, settings: SamplingSettings) -> Callable[[], Decoded]:
    def run() -> Decoded:
        done: SampledRun
        if proposer is None:
            done = plain_sampled(engine.target, prompt, n_tokens, settings)
        else:
            done = speculate_sampled(engine.target, prompt, n_tokens, strategy.max_proposal,
                                     proposer, "rejection", settings)
        return Decoded(done.generated, list(done.trace), None)
    return run


def run_sampled(engine: Engine, prompt_tokens: Sequence[int], strategy: Strategy,
                n_tokens: int, settings: SamplingSettings, *, on_decode_start: Callback = None,
                on_decode_end: Callback = None, min_window_s: float = 0.0,
                max_passes: int = 1) -> DecodeResult:
    """Generate exactly `n_tokens` by sampling with `settings` (its seed included), timed as
    Engine.run times a greedy decode; the result describes the first pass."""
    if max_passes < 1:
        raise UsageProblem(f"max_passes must be >= 1 (got {max_passes})")
    prompt = [int(t) for t in prompt_tokens]
    engine.check_fits(len(prompt), n_tokens)
    proposer, draft = _proposer(engine, strategy, settings, len(prompt) + n_tokens // 2)
    started_unix = time.time()
    t0 = time.perf_counter()
    engine.target.clear()
    if len(prompt) > 1:
        engine.target.decode(prompt[:-1], 0, 0)
    if draft is not None:
        draft.prepare(prompt)
    if proposer is not None:
        proposer.restart(prompt)
    prefill_s = time.perf_counter() - t0
    loop = _loop(engine, prompt, n_tokens, strategy, proposer, settings)
    if on_decode_start is not None:
        on_decode_start()
    window0 = time.perf_counter()
    passes: list[Pass] = []
    try:
        timed = timed_decode(loop, None)
        decisions = list(getattr(proposer, "decisions", None) or []) or None
        if min_window_s > 0:
            passes = [Pass(decode_s=timed.decode_s, tokens=len(timed.generated),
                           output_sha256=token_sha256(timed.generated))]
            while len(passes) < max_passes and time.perf_counter() - window0 < min_window_s:
                engine.target.truncate(len(prompt) - 1)
                if proposer is not None:
                    proposer.restart(prompt)
                again = timed_decode(loop, None)
                passes.append(Pass(decode_s=again.decode_s, tokens=len(again.generated),
                                   output_sha256=token_sha256(again.generated)))
    finally:
        if on_decode_end is not None:
            on_decode_end()
    result = decode_result(strategy, prompt, timed, started_unix, prefill_s, decisions,
                           engine.target.detokenize(timed.generated),
                           (engine.n_threads, engine.n_threads_batch))
    result.passes = passes
    return result
