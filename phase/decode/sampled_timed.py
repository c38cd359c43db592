"""One timed sampled run for a campaign: the greedy Engine.run's window, with the sampled loops.

The window is Engine.run's own (phase.decode.window), so a sampled run is measured exactly as
a greedy one: every model cleared and the prompt prefilled outside it, the decode between the
two callbacks, and, where the energy window must be longer than one decode, more passes back
to back from the prompt's cache. Each pass draws with the run's own seed, so every pass
repeats the first's tokens (as a greedy pass does) and the run is regenerable from its
recorded settings. The greedy loops are untouched: nothing here runs for a temperature-0 run.

Proposals are as in phase.decode.sampled: draft-k draws from the draft's q (the same
truncation and temperature as the target), n-gram proposes point masses (a fixed length for
`ngram-k`, the greedy loop's adaptive length for a bare `ngram`), auto decides per step
(phase.policy.sampled_auto); every proposal is verified by rejection sampling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from phase.base.errors import UsageProblem
from phase.decode.loops import Decoded
from phase.decode.proposer_kits import SampledProposers
from phase.decode.sampled import (
    DraftSampler,
    SampledRun,
    plain_sampled,
    speculate_sampled,
)
from phase.decode.window import Edges, Repeat, timed_window
from phase.policy.sampled_proposers import SampledProposer
from phase.policy.sampling import SamplingSettings
from phase.policy.speculative_sampling import RECORDED
from phase.policy.strategies import Strategy

if TYPE_CHECKING:
    from phase.decode.engine import Engine
    from phase.policy.result import DecodeResult

Callback = Callable[[], None] | None


def _proposer(engine: Engine, strategy: Strategy, settings: SamplingSettings,
              kv_tokens: int) -> tuple[SampledProposer | None, DraftSampler | None]:
    """The run's proposer, and the draft sampler whose cache the prefill must build."""
    if not strategy.family.samples:
        raise UsageProblem(f"{strategy.label} has no sampled variant: run it at temperature 0")
    proposers = SampledProposers(engine.draft, engine.cost_table, settings)
    return strategy.family.proposer(strategy, proposers, kv_tokens), proposers.prefill_draft


# The one rule a campaign's sampled runs verify with: exact for draws from q and point masses.
RULE = "rejection"


def _loop(engine: Engine, prompt: list[int], n_tokens: int, strategy: Strategy,
          proposer: SampledProposer | None, settings: SamplingSettings) -> Callable[[], Decoded]:
    def run() -> Decoded:
        done: SampledRun
        if proposer is None:
            done = plain_sampled(engine.target, prompt, n_tokens, settings)
        else:
            done = speculate_sampled(engine.target, prompt, n_tokens, strategy.max_proposal,
                                     proposer, RULE, settings)
        return Decoded(done.generated, list(done.trace), None)
    return run


def _start(draft: DraftSampler | None, proposer: SampledProposer, prompt: list[int]) -> None:
    """After the target's prefill: the draft's prompt cache, then the proposer on it."""
    if draft is not None:
        draft.prepare(prompt)
    proposer.restart(prompt)


def run_sampled(engine: Engine, prompt_tokens: Sequence[int], strategy: Strategy,
                n_tokens: int, settings: SamplingSettings, *, on_decode_start: Callback = None,
                on_decode_end: Callback = None, min_window_s: float = 0.0,
                max_passes: int = 1) -> DecodeResult:
    """Generate exactly `n_tokens` by sampling with `settings` (its seed included), in the
    timed window Engine.run's greedy decode has (phase.decode.window); the result describes
    the first pass."""
    if max_passes < 1:
        raise UsageProblem(f"max_passes must be >= 1 (got {max_passes})")
    prompt = [int(t) for t in prompt_tokens]
    engine.check_fits(len(prompt), n_tokens)
    proposer, draft = _proposer(engine, strategy, settings, len(prompt) + n_tokens // 2)
    edges = Edges()
    if proposer is not None:
        edges = Edges(partial(_start, draft, proposer), proposer.restart)
    loop = _loop(engine, prompt, n_tokens, strategy, proposer, settings)
    repeat = Repeat(loop, min_window_s, max_passes) if min_window_s > 0 else None
    models = [m for m in (engine.target, engine.draft) if m is not None]
    window = timed_window(models, prompt, edges, loop, None,
                          lambda: list(getattr(proposer, "decisions", None) or []) or None,
                          on_decode_start, on_decode_end, repeat)
    result = window.result(strategy, prompt, engine.target.detokenize(window.first.generated),
                           (engine.n_threads, engine.n_threads_batch))
    if proposer is not None:  # plain proposes nothing, so nothing is verified
        result.verification = RECORDED[RULE].verification
    return result
