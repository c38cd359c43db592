"""Sampled decoding: plain through llama.cpp's sampler chain, speculative through a verification
rule (phase.policy.speculative_sampling) over numpy distributions (phase.policy.sampling).
`auto` (phase.policy.sampled_auto) chooses per step between them with the same verification.

Kept apart from the timed greedy loops (phase.decode.loops), which stay free of it. The step
is the greedy engine's (phase.decode.engine): the target verifies [last, x1..xL] in one batch,
then the positions after the last kept proposal leave its KV cache. Differences: the rows are
turned into distributions p (and the draft's into q), a rule decides what is kept, and the
step's last token is drawn rather than an argmax. The proposal is capped at the tokens still
to generate minus one, as in the greedy loop, so a run emits exactly `n_tokens`.

The prompt's cache is built once (`prepare`) and kept across runs: each run drops only what
the previous one generated, so thousands of seeded runs (the exactness test) cost no prefill.
A run's randomness comes from its settings' seed alone: llama.cpp's mt19937 in plain's chain,
numpy's default generator in the speculative loops (the same distribution, other streams).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from phase.base.errors import UsageProblem
from phase.decode.chain import SamplerChain
from phase.decode.native import NativeModel
from phase.decode.vocab_file import check_fit
from phase.policy.sampled_proposers import NgramSampler, SampledProposer
from phase.policy.sampling import SamplingSettings, distribution, draw
from phase.policy.speculative_sampling import PROPOSES, RULES, Rows


class SampledRun(NamedTuple):
    generated: list[int]
    proposed: int  # proposals verified
    accepted: int  # proposals kept
    steps: int  # target passes
    # Per target pass: (proposed, accepted, propose ms, verify ms), as the greedy loops' trace.
    trace: tuple[tuple[int, int, float, float], ...] = ()


def _observer(proposer: SampledProposer) -> Callable[[int, int], None] | None:
    """A proposer that learns from each step's outcome (auto) has `observe`."""
    return getattr(proposer, "observe", None)


class DraftSampler:
    """Proposals from a draft model: drawn from its distribution q (mode "sample", what
    rejection sampling needs) or its most probable token ("top", what llama.cpp drafts)."""

    def __init__(self, model: NativeModel, settings: SamplingSettings, mode: str) -> None:
        if mode not in ("sample", "top"):
            raise UsageProblem(f"draft proposal mode must be sample or top (got {mode!r})")
        self.model, self.settings, self.mode = model, settings, mode
        self._cached: list[int] = []

    def prepare(self, prompt: Sequence[int]) -> None:
        self.model.clear()
        self._cached = list(prompt[:-1])
        if self._cached:
            self.model.decode(self._cached, 0, 0)

    def restart(self, prompt: Sequence[int]) -> None:
        keep = len(prompt) - 1
        self.model.truncate(keep)
        self._cached = list(prompt[:keep])

    def propose(self, seq: list[int], max_tokens: int,
                rng: np.random.Generator) -> tuple[list[int], Rows | None]:
        if max_tokens <= 0:
            return [], []
        model, cached = self.model, self._cached
        n = 0
        limit = min(len(cached), len(seq))
        while n < limit and cached[n] == seq[n]:
            n += 1
        n = min(n, len(seq) - 1)  # the last token is always fed: its row is the first q
        model.truncate(n)
        del cached[n:]
        model.decode(seq[n:], n, 1)
        cached.extend(seq[n:])
        tokens: list[int] = []
        rows: list[np.ndarray] = []
        while True:
            q = distribution(model.logits(0), self.settings)
            token = draw(q, rng) if self.mode == "sample" else int(q.argmax())
            tokens.append(token)
            rows.append(q)
            if len(tokens) == max_tokens:
                return tokens, rows
            model.decode([token], len(cached), 1)
            cached.append(token)


class TargetRows(Sequence[np.ndarray]):
    """p for each verified row (rows row0.. of the target's last batch), computed when a rule
    first reads it (a rejection at the first row never pays for the others). A batched step
    holds several requests' rows: each reads its own from its row0."""

    def __init__(self, target: NativeModel, n: int, settings: SamplingSettings,
                 row0: int = 0) -> None:
        self.target, self.row0, self.n, self.settings = target, row0, n, settings
        self._rows: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> np.ndarray:  # type: ignore[override]  # int indices only
        if not 0 <= i < self.n:
            raise IndexError(i)
        if i not in self._rows:
            self._rows[i] = distribution(self.target.logits(self.row0 + i), self.settings)
        return self._rows[i]


def plain_sampled(target: NativeModel, prompt: list[int], n_tokens: int,
                  settings: SamplingSettings) -> SampledRun:
    """n_tokens drawn one per pass through llama.cpp's chain, seeded with settings.seed."""
    out: list[int] = []
    times: list[float] = []
    token, pos = prompt[-1], len(prompt) - 1
    clock = time.perf_counter
    with SamplerChain(settings) as chain:
        for _ in range(n_tokens):
            t0 = clock()
            target.decode([token], pos, 1)
            token = chain.sample(target, 0)
            times.append(clock() - t0)
            out.append(token)
            pos += 1
    return SampledRun(out, 0, 0, n_tokens, tuple((0, 0, 0.0, dt * 1e3) for dt in times))


def speculate_sampled(target: NativeModel, prompt: list[int], n_tokens: int, k: int,
                      proposer: SampledProposer, rule: str,
                      settings: SamplingSettings) -> SampledRun:
    """n_tokens by speculative steps of at most k proposals, verified by `rule`."""
    verify = RULES[rule]
    rng = np.random.default_rng(settings.seed)
    seq = list(prompt)
    start = len(seq)
    pos = start - 1  # KV position of seq[-1], the one token the target has not seen
    proposed = accepted = steps = 0
    observe = _observer(proposer)
    trace: list[tuple[int, int, float, float]] = []
    clock = time.perf_counter
    while (remaining := n_tokens - (len(seq) - start)) > 0:
        limit = min(k, remaining - 1)
        t0 = clock()
        proposal, q_rows = proposer.propose(seq, limit, rng)
        proposal = proposal[:limit]
        t1 = clock()
        target.decode([seq[-1], *proposal], pos, len(proposal) + 1)
        p_rows = TargetRows(target, len(proposal) + 1, settings)
        verdict = verify(p_rows, q_rows, proposal, rng)
        if verdict.accepted < len(proposal):
            target.truncate(pos + verdict.accepted + 1)
        seq.extend(verdict.tokens)
        pos += len(verdict.tokens)
        proposed += len(proposal)
        accepted += verdict.accepted
        steps += 1
        trace.append((len(proposal), verdict.accepted, (t1 - t0) * 1e3, (clock() - t1) * 1e3))
        if observe is not None:
            observe(len(proposal), verdict.accepted)
    return SampledRun(seq[start:], proposed, accepted, steps, tuple(trace))


class SampledDecoder:
    """Seeded sampled runs on one prompt, its cache built once: plain, draft-k and n-gram."""

    def __init__(self, target: NativeModel, draft: NativeModel | None,
                 prompt: Sequence[int]) -> None:
        self.target, self.draft = target, draft
        self.prompt = [int(t) for t in prompt]
        if not self.prompt:
            raise UsageProblem("sampled decoding needs a prompt of at least one token")
        target.clear()
        if len(self.prompt) > 1:
            target.decode(self.prompt[:-1], 0, 0)
        self._drafts: dict[tuple[SamplingSettings, str], DraftSampler] = {}

    def _fresh(self, n_tokens: int, k: int = 1) -> None:
        """Check the run fits, and drop what the previous run generated."""
        if k < 1:
            raise UsageProblem(f"proposals per step must be >= 1 (got {k})")
        models = [m for m in (self.target, self.draft) if m is not None]
        check_fit(len(self.prompt), n_tokens, min(min(m.n_ctx, m.n_batch) for m in models))
        self.target.truncate(len(self.prompt) - 1)

    def plain(self, n_tokens: int, settings: SamplingSettings) -> SampledRun:
        self._fresh(n_tokens)
        return plain_sampled(self.target, self.prompt, n_tokens, settings)

    def draft_sampler(self, settings: SamplingSettings, mode: str = "sample") -> DraftSampler:
        """The draft's sampler for these settings (its prompt cache built once)."""
        if self.draft is None:
            raise UsageProblem("draft-k sampling needs a draft model (none loaded)")
        q_settings = settings.with_seed(0)  # q does not depend on a seed
        key = (q_settings, mode)
        if key not in self._drafts:
            self._drafts.clear()  # one draft cache: a sampler for other settings starts over
            self._drafts[key] = DraftSampler(self.draft, q_settings, mode)
            self._drafts[key].prepare(self.prompt)
        return self._drafts[key]

    def draft_k(self, n_tokens: int, k: int, settings: SamplingSettings, rule: str = "rejection",
                draft_settings: SamplingSettings | None = None) -> SampledRun:
        """draft-k; `draft_settings` (default: the target's) shape q. Rejection sampling
        is exact for any q; the tools' rules assume the same settings on both sides."""
        if rule not in RULES:
            raise UsageProblem(f"unknown verification rule {rule!r}: {', '.join(RULES)}")
        proposer = self.draft_sampler(draft_settings or settings, PROPOSES[rule])
        self._fresh(n_tokens, k)
        proposer.restart(self.prompt)
        return speculate_sampled(self.target, self.prompt, n_tokens, k, proposer, rule, settings)

    def ngram(self, n_tokens: int, k: int, settings: SamplingSettings, *, n_min: int = 2,
              n_max: int = 4, rule: str = "rejection") -> SampledRun:
        """n-gram proposals (point masses) after a context of at least n_min tokens."""
        if rule not in ("rejection", "greedy-match", "wrong"):  # the rules that take q = None
            raise UsageProblem(f"n-gram proposals are point masses: verify them with rejection "
                               f"or greedy-match (got {rule!r})")
        self._fresh(n_tokens, k)
        proposer = NgramSampler(n_min, n_max)
        proposer.restart(self.prompt)
        return speculate_sampled(self.target, self.prompt, n_tokens, k, proposer, rule, settings)

    def run(self, n_tokens: int, k: int, proposer: SampledProposer, settings: SamplingSettings,
            rule: str = "rejection") -> SampledRun:
        """Any proposer (auto's: phase.policy.sampled_auto), restarted on the prompt."""
        self._fresh(n_tokens, k)
        proposer.restart(self.prompt)
        return speculate_sampled(self.target, self.prompt, n_tokens, k, proposer, rule, settings)
