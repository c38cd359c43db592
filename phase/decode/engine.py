"""The decoding engine: loads target (and draft) once, runs greedy fixed-length generations.

Every strategy does the same prefill: the prompt minus its last token goes through each model
in play (target, and the draft when drafting); the last prompt token is the input of the
first decode step. So each strategy's decode window holds exactly the forward passes that
produce the N generated tokens, and plain's `steps` equals N, as in llama-bench's tg test.

One speculative step, with the accepted sequence S whose last token the target has not yet
seen, and at most L = min(k, tokens still to generate - 1) proposals d1..dL:

    target forward [S[-1], d1..dL] in one batch, logits for all rows -> argmax t0..tL
    m = longest prefix with d_i == t_(i-1);  keep d1..dm plus the target's own t_m
    remove the rejected positions from the target's KV cache (the draft trims its own)

Capping L at the tokens still to generate minus one means the step's bonus token is the last
one needed: no proposal is ever made past the end, and no step overshoots N.

Evidence for divergences: given the plain reference's tokens, a run compares each token it
produces with the reference's and, at the first that differs, records the gap between the two
best logits of the row that produced it (one extra pass over one row per run, no cost per
token beyond a comparison). A plain run can record that gap for every token (`record_gaps`),
which is how a campaign's plain references get their `top2_gaps`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from phase.base.errors import UsageProblem
from phase.costmodel import CostTable, NoCost, Objective, cost_table
from phase.decode.backend import system_info
from phase.decode.batched import BatchedDecoder
from phase.decode.loops import Decoded, plain_loop, speculate_loop
from phase.decode.native import ContextOptions, NativeModel
from phase.decode.placement import ModelPlacement
from phase.decode.profiler import (
    BlockLoad,
    BlockMeter,
    ProfileContext,
    ProfileSettings,
    profile_models,
)
from phase.decode.proposer_kits import GreedyProposers
from phase.decode.reference_loop import plain_on_reference, speculate_on_reference
from phase.decode.template import format_prompt
from phase.decode.vocab import check_compatible
from phase.decode.vocab_file import check_fit
from phase.decode.window import Edges, Repeat, timed_window
from phase.policy.proposers import Proposer
from phase.policy.result import DecodeResult
from phase.policy.sampling import SamplingSettings
from phase.policy.strategies import Strategy
from phase.results import CostProfile

Callback = Callable[[], object] | None


class Engine:
    """Target (and optional draft) loaded once; `run` is repeatable and runs are independent.

    n_threads defaults to the physical cores this process may use (llama-bench's default);
    n_threads_batch to n_threads; n_ctx has no default here (a campaign's is in
    phase.campaign.plan). Greedy decoding draws no random numbers, so there is no seed.
    `flash_attn` is auto|on|off and `n_gpu_layers` -1 (all, where the build has an
    accelerator): llama.cpp's and llama-bench's defaults, so the two measure the same thing.
    """

    def __init__(
        self,
        target_path: str | Path,
        draft_path: str | Path | None = None,
        *,
        n_ctx: int,
        n_threads: int | None = None,
        n_threads_batch: int | None = None,
        flash_attn: str = "auto",
        n_gpu_layers: int = -1,
        verbose: bool = False,
        n_seq_max: int = 1,
    ) -> None:
        """`n_seq_max`: how many requests `batched` may decode at once (each model's context
        then holds that many sequences in one shared KV buffer)."""
        if n_ctx < 2:
            raise UsageProblem(f"n_ctx must be at least 2 (got {n_ctx})")
        for name, value in (("n_threads", n_threads), ("n_threads_batch", n_threads_batch)):
            if value is not None and value < 1:
                raise UsageProblem(f"{name} must be >= 1 (got {value})")
        if n_seq_max < 1:
            raise UsageProblem(f"n_seq_max must be >= 1 (got {n_seq_max})")
        options = ContextOptions(n_ctx=n_ctx, n_threads=n_threads,
                                 n_threads_batch=n_threads_batch, flash_attn=flash_attn,
                                 n_gpu_layers=n_gpu_layers, verbose=verbose,
                                 n_seq_max=n_seq_max)
        self.target = NativeModel(target_path, options)
        self.draft: NativeModel | None = None
        try:
            if draft_path is not None:
                self.draft = NativeModel(draft_path, options)
                check_compatible(
                    self.target.vocab_info(), self.draft.vocab_info(),
                    names=(Path(target_path).name, Path(draft_path).name),
                )
        except BaseException:
            self.close()
            raise
        self.n_ctx = min(m.n_ctx for m in self._models())
        self.n_batch = min(m.n_batch for m in self._models())
        self.n_threads = self.target.n_threads
        self.n_threads_batch = self.target.n_threads_batch
        # Both models are loaded with the same decision unless the draft's own probe differs;
        # the target's is what a results file records.
        self.extra_buffers = self.target.extra_buffers
        # What `auto` decides with (use_profile): the measured costs and what to minimise.
        self.cost_profile: CostProfile | None = None
        self.objective: Objective = "time"
        self.energy_sensors: tuple[str, ...] | None = None

    def set_threads(self, n_threads: int, n_threads_batch: int | None = None) -> None:
        """Decode (and prefill, `n_threads_batch`, default the same) on this many threads from
        the next run on, in both models; what every later result records."""
        batch = n_threads_batch or n_threads
        if n_threads < 1 or batch < 1:
            raise UsageProblem(f"threads must be >= 1 (got {n_threads}, {batch})")
        for m in self._models():
            m.set_threads(n_threads, batch)
        self.n_threads, self.n_threads_batch = n_threads, batch

    # -- lifetime -------------------------------------------------------------------------

    def _models(self) -> list[NativeModel]:
        return [m for m in (self.target, self.draft) if m is not None]

    def close(self) -> None:
        for m in self._models():
            m.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- information ----------------------------------------------------------------------

    def model_info(self, role: str) -> dict[str, object]:
        """architecture, quant (file type name), n_vocab, plus name, n_params, path."""
        if role == "target":
            return self.target.info()
        if role == "draft":
            if self.draft is None:
                raise UsageProblem("no draft model is loaded")
            return self.draft.info()
        raise UsageProblem(f"unknown model role '{role}': target or draft")

    def system_info(self) -> str:
        return system_info()

    def placement(self) -> ModelPlacement:
        """Where llama.cpp put the models, as it logged it: the target's accelerator and
        layer counts, and every device the target or the draft used."""
        target = self.target.placement
        devices = list(target.devices)
        if self.draft is not None:
            devices += [d for d in self.draft.placement.devices if d not in devices]
        return replace(target, devices=tuple(devices))

    def format_prompt(self, user_text: str, chat_template: bool = True) -> list[int]:
        return format_prompt(self.target, user_text, chat_template=chat_template)

    def detokenize(self, tokens: list[int]) -> str:
        return self.target.detokenize(tokens)

    # -- costs ----------------------------------------------------------------------------

    def profile(self, contexts: Sequence[ProfileContext], settings: ProfileSettings,
                meter: BlockMeter | None = None,
                energy_reason: str | None = None,
                loads: BlockLoad | None = None) -> CostProfile:
        """Measure what passes cost at these KV fills (phase.decode.profiler); `loads`
        measures other work, whose disturbed blocks are repeated and left out."""
        for ctx in contexts:
            self.check_fits(max(ctx.kv_tokens, 1), max(settings.target_batches))
        return profile_models(self.target, self.draft, contexts, settings, meter,
                              energy_reason, loads)

    def use_profile(self, profile: CostProfile, objective: Objective = "time",
                    sensors: Sequence[str] | None = None) -> None:
        """The costs `auto` decides with; UsageProblem when they cannot serve the objective
        (the energy objective needs energy per pass). `sensors`: whose joules, summed, are
        the energy (the campaign's chip-energy sensors; default: the profile's first)."""
        try:
            cost_table(profile, profile.points[0].kv_tokens, objective, sensors)
        except NoCost as exc:
            raise UsageProblem(f"auto cannot minimise {objective}: {exc}") from None
        self.cost_profile, self.objective = profile, objective
        self.energy_sensors = tuple(sensors) if sensors else None

    def cost_table(self, kv_tokens: int) -> CostTable:
        if self.cost_profile is None:
            raise UsageProblem("auto needs a cost profile: measure one with Engine.profile() "
                               "and pass it to Engine.use_profile()")
        return cost_table(self.cost_profile, kv_tokens, self.objective, self.energy_sensors)

    def proposer_for(self, strategy: Strategy, kv_tokens: int = 0) -> Proposer | None:
        """The proposer `run` uses for `strategy` (None for plain). Exposed so a caller can
        wrap it (tests corrupt proposals to exercise rollback) and pass it back to `run`.
        `kv_tokens`: the run's mean KV fill, at which `auto` reads its costs."""
        return strategy.family.proposer(strategy, GreedyProposers(self.draft, self.cost_table),
                                       kv_tokens)

    def batched(self, strategy: Strategy, settings: SamplingSettings | None = None, *,
                record_gaps: bool = False,
                expected: Mapping[tuple[int, ...], Sequence[int]] | None = None,
                ) -> BatchedDecoder:
        """A decoder of up to n_seq_max requests at once with this engine's models and costs
        (phase.decode.batched); greedy, or sampled with `settings`. Its sequences share the
        contexts `run` uses: run one or the other at a time. `expected`: each prompt's
        expected output, by its tokens, for the decoder's first-divergence evidence."""
        return BatchedDecoder(self.target, strategy, draft=self.draft, costs=self.cost_table,
                              settings=settings, record_gaps=record_gaps, expected=expected)

    # -- running --------------------------------------------------------------------------

    def run(
        self,
        prompt_tokens: Sequence[int],
        strategy: Strategy,
        n_tokens: int,
        *,
        on_decode_start: Callback = None,
        on_decode_end: Callback = None,
        proposer: Proposer | None = None,
        reference: Sequence[int] | None = None,
        record_gaps: bool = False,
        min_window_s: float = 0.0,
        max_passes: int = 1,
    ) -> DecodeResult:
        """Generate exactly `n_tokens` greedily (end-of-sequence ignored) after the prompt.

        The callbacks run immediately before the first decode step and right after the last
        (also when decoding fails), outside the timed decode window. With `reference` (the
        plain decoding of the same prompt) the result records the first divergence from it
        and the gap there; `record_gaps` (plain only) records every token's top-2 logit gap.

        `min_window_s` > 0: the decode repeats back-to-back between the two callbacks until
        that long has passed since the first began (at most `max_passes` passes in all), each
        pass from the prompt's cache with everything generated dropped, so greedy decoding
        produces the same tokens again (phase.campaign.windows sizes energy windows so). The
        result describes the first pass and lists every pass's time and output (`passes`).
        """
        if max_passes < 1:
            raise UsageProblem(f"max_passes must be >= 1 (got {max_passes})")
        prompt, proposer = self._start(prompt_tokens, strategy, n_tokens, proposer)
        if record_gaps and strategy.family.takes_k:
            raise UsageProblem("record_gaps is for plain decoding (the references)")
        ref = list(reference) if reference is not None else []
        gaps: list[float] | None = [] if record_gaps else None
        loop: Callable[[], Decoded] = (
            partial(plain_loop, self.target, prompt, n_tokens, ref, gaps) if proposer is None
            else partial(speculate_loop, self.target, prompt, n_tokens, strategy.max_proposal,
                         proposer, ref))
        again: Callable[[], Decoded] = (
            partial(plain_loop, self.target, prompt, n_tokens, [], None) if proposer is None
            else partial(speculate_loop, self.target, prompt, n_tokens, strategy.max_proposal,
                         proposer, []))
        repeat = Repeat(again, min_window_s, max_passes) if min_window_s > 0 else None
        return self._timed_run(strategy, prompt, proposer, loop, gaps,
                               on_decode_start, on_decode_end, repeat)

    def run_on_reference(self, prompt_tokens: Sequence[int], strategy: Strategy,
                         n_tokens: int, reference: Sequence[int], *,
                         proposer: Proposer | None = None) -> DecodeResult:
        """`strategy`'s passes and proposals while every position takes `reference`'s token
        (phase.decode.reference_loop): what the strategy costs on that text. For the bench
        (bench/spec_bench.py): not greedy decoding, so the result counts the tokens the
        reference overrode and never becomes a results-file run."""
        prompt, proposer = self._start(prompt_tokens, strategy, n_tokens, proposer)
        ref = list(reference)
        if len(ref) < n_tokens:
            raise UsageProblem(f"following a text needs a reference of at least {n_tokens} "
                               f"tokens (got {len(ref)})")
        loop: Callable[[], Decoded] = (
            partial(plain_on_reference, self.target, prompt, n_tokens, ref) if proposer is None
            else partial(speculate_on_reference, self.target, prompt, n_tokens,
                         strategy.max_proposal, proposer, ref))
        return self._timed_run(strategy, prompt, proposer, loop, None, None, None)

    def _start(self, prompt_tokens: Sequence[int], strategy: Strategy, n_tokens: int,
               proposer: Proposer | None) -> tuple[list[int], Proposer | None]:
        """The checked prompt and the run's proposer (the strategy's own unless given)."""
        prompt = [int(t) for t in prompt_tokens]
        self._check(prompt, strategy, n_tokens)
        if proposer is None:
            proposer = self.proposer_for(strategy, len(prompt) + n_tokens // 2)
        elif not strategy.family.takes_k:
            raise UsageProblem("plain decoding takes no proposer")
        return prompt, proposer

    def _timed_run(self, strategy: Strategy, prompt: list[int], proposer: Proposer | None,
                   loop: Callable[[], Decoded], gaps: list[float] | None,
                   on_decode_start: Callback, on_decode_end: Callback,
                   repeat: Repeat | None = None) -> DecodeResult:
        """The run in the timed window (phase.decode.window), as every run is measured."""
        edges = Edges()
        if proposer is not None:
            edges = Edges(proposer.begin, getattr(proposer, "restart", None) or proposer.begin)
        window = timed_window(
            self._models(), prompt, edges, loop, gaps,
            lambda: list(getattr(proposer, "decisions", None) or []) or None,
            on_decode_start, on_decode_end, repeat)
        return window.result(strategy, prompt, self.target.detokenize(window.first.generated),
                             (self.n_threads, self.n_threads_batch))

    def check_fits(self, prompt_tokens: int, n_tokens: int) -> None:
        """Raise UsageProblem unless a prompt of this length plus n_tokens fits what llama.cpp
        allocated: the KV cache (`n_ctx`, rounded up to a multiple of 256) and the largest
        batch (`n_batch`, the n_ctx asked for), which the prefill and every verification
        pass must fit (see vocab_file.check_fit, the same check before loading)."""
        check_fit(prompt_tokens, n_tokens, min(self.n_ctx, self.n_batch))

    def _check(self, prompt: list[int], strategy: Strategy, n_tokens: int) -> None:
        self.check_fits(len(prompt), n_tokens)
        vocab = self.target.n_vocab
        bad = next((t for t in prompt if not 0 <= t < vocab), None)
        if bad is not None:
            raise UsageProblem(f"prompt token {bad} is outside the vocabulary (0..{vocab - 1})")
        if not isinstance(strategy, Strategy):
            raise UsageProblem(f"not a Strategy: {strategy!r}; use parse_strategy()")
