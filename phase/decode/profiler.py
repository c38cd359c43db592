"""Timing forward passes: what one pass of b tokens costs a model at a given KV fill.

At each profile point the model's cache is filled with `kv_tokens` real tokens (a prompt and
its plain continuation), then for each batch size b it runs `blocks` blocks of back-to-back
passes of b tokens at the next positions, removing them from the cache after each pass so
every pass sees the same fill. A block runs until it has lasted `min_block_s` (at least one
pass); its cost per pass is its duration over its passes. A `BlockMeter` (the campaign's
energy sampler) may bracket each block; its joules per sensor, divided by the passes, are
energy per pass. Each pass computes the logits rows the decoding loop asks of a pass of
that model and size (`target_logits`, `draft_logits`: every row for the target, as a
verification reads them; none for a draft batch, which only mirrors a verified batch into
the draft's cache) and reads one argmax where it has a row.

Costs are medians over blocks, with (max - min) / median as their spread. Where a
`BlockLoad` measures other work (the campaign's foreign-load probe), each round of blocks
(one per size, about a second) is a load window, since a 10 ms CPU tick is too coarse for
one block; a block that load or a slowdown against its size's other blocks disturbed
(phase.costmodel.blocks) is repeated after the sweep, in retry rounds, and left out of the
medians, so `auto` never prices a pass from it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from phase.costmodel.blocks import clean, disturbed_blocks
from phase.decode.native import NativeModel
from phase.policy.ngram import NgramMatcher
from phase.results import CostProfile, PassCost, ProfilePoint

TARGET_BATCHES: tuple[int, ...] = tuple(range(1, 18))
# The draft model runs one-token passes while drafting and a short catch-up batch per step
# (1-2 tokens after a fixed strategy's step, more after `auto` steps that did not draft).
DRAFT_BATCHES: tuple[int, ...] = (1, 2, 4, 8, 16)


class BlockMeter(Protocol):
    """Energy over one block of passes: `start` just before it, `stop` right after it."""

    def start(self) -> None: ...

    def stop(self) -> dict[str, float]:
        """Joules over the block by sensor name (sensors that could not say, left out)."""
        ...


class BlockLoad(Protocol):
    """Other work on the machine over a window: `start` before it, `stop` after it."""

    def start(self) -> None: ...

    def stop(self) -> float | None:
        """Foreign load over the window, a fraction of our cores (None: not measured)."""
        ...


@dataclass(frozen=True)
class ProfileSettings:
    blocks: int = 3
    min_block_s: float = 0.05
    target_batches: tuple[int, ...] = TARGET_BATCHES
    draft_batches: tuple[int, ...] = DRAFT_BATCHES
    # Disturbance (phase.costmodel.blocks): None judges nothing. Retry rounds after the
    # sweep, each after a pause twice the last (from RETRY_PAUSE_S), to let a burst pass.
    disturbed_load: float | None = None
    slow_floor: float | None = None
    max_retries: int = 0


RETRY_PAUSE_S = 0.25
MAX_RETRY_PAUSE_S = 2.0


@dataclass
class _Block:
    passes: int
    seconds: float
    energy_j: dict[str, float] = field(default_factory=dict)
    load: float | None = None

    @property
    def ms(self) -> float:
        return 1e3 * self.seconds / self.passes


def spread(values: Sequence[float]) -> float | None:
    """(max - min) / median; None with fewer than two values or a median of 0."""
    if len(values) < 2:
        return None
    mid = statistics.median(values)
    return (max(values) - min(values)) / mid if mid > 0 else None


def fill(model: NativeModel, history: Sequence[int], kv_tokens: int) -> None:
    """Put history[:kv_tokens] into the model's cache (and nothing else)."""
    model.clear()
    if kv_tokens > 0:
        model.decode(list(history[:kv_tokens]), 0, 1)


def _batch(history: Sequence[int], kv_tokens: int, b: int) -> list[int]:
    """The b tokens after the fill: real text, wrapped around when the history runs out."""
    n = len(history)
    return [history[(kv_tokens + i) % n] for i in range(b)]


def target_logits(b: int) -> int:
    """A target pass computes every row's logits: a verification reads each position."""
    return b


def draft_logits(b: int) -> int:
    """A draft pass of one token computes its logits (a guess, or a feed's last row); a draft
    batch computes none: it is the mirror of a verified batch, which only writes the cache
    (proposers.DraftProposer). A catch-up feed of several tokens computes one row, which this
    leaves out (it follows steps that did not draft: `auto` only)."""
    return 1 if b == 1 else 0


def _block(model: NativeModel, tokens: list[int], kv_tokens: int, min_s: float,
           meter: BlockMeter | None, logits: int) -> _Block:
    clock = time.perf_counter
    passes = 0
    if meter is not None:
        meter.start()
    t0 = clock()
    while True:
        model.decode(tokens, kv_tokens, logits)
        if logits:
            model.argmax(0)
        model.truncate(kv_tokens)
        passes += 1
        if clock() - t0 >= min_s:
            break
    seconds = clock() - t0
    energy = meter.stop() if meter is not None else {}
    return _Block(passes, seconds, energy)


def _disturbed(blocks: list[_Block], settings: ProfileSettings) -> list[bool]:
    return disturbed_blocks([b.ms for b in blocks], [b.load for b in blocks],
                            settings.disturbed_load, settings.slow_floor)


def pass_cost(b: int, blocks: list[_Block], logits: int | None = None,
              settings: ProfileSettings | None = None) -> PassCost:
    block_ms = [blk.ms for blk in blocks]
    judged = settings is not None and (settings.disturbed_load is not None
                                       or settings.slow_floor is not None)
    bad = _disturbed(blocks, settings) if settings is not None and judged \
        else [False] * len(blocks)
    per_sensor: dict[str, list[float]] = {}
    for blk in blocks:
        for name, joules in blk.energy_j.items():
            per_sensor.setdefault(name, []).append(joules / blk.passes)
    # A sensor counts only where it read every block: a median of fewer would not compare.
    complete = {n: v for n, v in per_sensor.items() if len(v) == len(blocks)}
    kept_ms = clean(block_ms, bad)
    kept_j = {n: clean(v, bad) for n, v in complete.items()}
    return PassCost(
        tokens=b,
        logits=logits,
        ms=statistics.median(kept_ms),
        ms_spread=spread(kept_ms),
        block_ms=block_ms,
        block_passes=[blk.passes for blk in blocks],
        energy_j={n: statistics.median(v) for n, v in kept_j.items()},
        energy_spread={n: s for n, v in kept_j.items() if (s := spread(v)) is not None},
        block_energy_j=complete,
        block_load=[blk.load for blk in blocks] if judged else [],
        block_disturbed=bad if judged else [],
    )


def _round(model: NativeModel, history: Sequence[int], kv_tokens: int, sizes: Sequence[int],
           settings: ProfileSettings, meter: BlockMeter | None, loads: BlockLoad | None,
           logits: Callable[[int], int]) -> dict[int, _Block]:
    """One block of each size, back to back, inside one foreign-load window."""
    if loads is not None:
        loads.start()
    out = {b: _block(model, _batch(history, kv_tokens, b), kv_tokens, settings.min_block_s,
                     meter, logits(b)) for b in sizes}
    load = loads.stop() if loads is not None else None
    for blk in out.values():
        blk.load = load
    return out


def profile_model(model: NativeModel, history: Sequence[int], kv_tokens: int,
                  batches: Sequence[int], settings: ProfileSettings,
                  meter: BlockMeter | None = None,
                  logits: Callable[[int], int] = target_logits,
                  loads: BlockLoad | None = None) -> list[PassCost]:
    """Pass costs of `model` at fill kv_tokens, for each batch size, each pass computing
    `logits(b)` logits rows (the cache is refilled first; blocks of all sizes are
    interleaved, so slow drift hits every size alike). Sizes short of `blocks` undisturbed
    blocks get retry rounds, at most `max_retries`."""
    if kv_tokens + max(batches) > model.n_ctx:
        raise ValueError(f"a fill of {kv_tokens} plus a batch of {max(batches)} does not fit "
                         f"the context of {model.n_ctx}")
    fill(model, history, kv_tokens)
    runs: dict[int, list[_Block]] = {b: [] for b in batches}
    # One untimed pass of the largest size first (caches warm, buffers sized); a pass per
    # size would cost as much as a block, for nothing the interleaved blocks do not cover.
    _block(model, _batch(history, kv_tokens, max(batches)), kv_tokens, 0.0, None,
           logits(max(batches)))
    for _ in range(settings.blocks):
        for b, blk in _round(model, history, kv_tokens, batches, settings, meter, loads,
                             logits).items():
            runs[b].append(blk)
    pause = RETRY_PAUSE_S
    for _ in range(settings.max_retries):
        short = [b for b in batches
                 if _disturbed(runs[b], settings).count(False) < settings.blocks]
        if not short:
            break
        time.sleep(pause)
        pause = min(2 * pause, MAX_RETRY_PAUSE_S)
        for b, blk in _round(model, history, kv_tokens, short, settings, meter, loads,
                             logits).items():
            runs[b].append(blk)
    return [pass_cost(b, runs[b], logits(b), settings) for b in batches]


def lookup_ms(history: Sequence[int], start: int, blocks: int,
              matcher: NgramMatcher | None = None) -> list[float]:
    """Milliseconds per n-gram lookup (with its index update) over history[start:], one
    figure per block of lookups, as a run makes them: one per new token."""
    matcher = matcher or NgramMatcher()
    matcher.begin(history[:start])
    seq = list(history[:start])
    steps = len(history) - start
    if steps < blocks or blocks < 1:
        return []
    per_block = steps // blocks
    out: list[float] = []
    clock = time.perf_counter
    for i in range(blocks):
        t0 = clock()
        for token in history[start + i * per_block:start + (i + 1) * per_block]:
            matcher.lookup(seq, 16)
            seq.append(token)
        out.append(1e3 * (clock() - t0) / per_block)
    return out


@dataclass(frozen=True)
class ProfileContext:
    """A KV fill to profile at: `history[:kv_tokens]` fills the cache (the history should
    run on past it: its next tokens are what the timed passes feed)."""

    prompt: str | None
    history: list[int]
    kv_tokens: int


POSITION_RULE = (
    "each prompt's mid-run position: its prompt tokens plus half the generated tokens (a "
    "pass's cost grows about linearly with the cached positions, so a run's mean step cost "
    "is the cost at its middle); with more than two prompts, only the lowest and highest of "
    "those positions are profiled and others are interpolated between them"
)


def choose_contexts(contexts: Sequence[ProfileContext],
                    max_points: int = 2) -> list[ProfileContext]:
    """The contexts to profile: all of them, or the lowest and highest fills when there are
    more than `max_points` (attention's cost is linear in the fill, so two points bracket
    the others and each point costs a full sweep of batch sizes)."""
    ordered = sorted(contexts, key=lambda c: c.kv_tokens)
    unique: list[ProfileContext] = []
    for c in ordered:
        if not unique or unique[-1].kv_tokens != c.kv_tokens:
            unique.append(c)
    if len(unique) <= max_points:
        return unique
    return [unique[0], unique[-1]] if max_points >= 2 else [unique[-1]]


NO_DRAFT = "no draft model was loaded, so there is no draft cost to profile"


def profile_models(target: NativeModel, draft: NativeModel | None,
                   contexts: Sequence[ProfileContext], settings: ProfileSettings,
                   meter: BlockMeter | None = None,
                   energy_reason: str | None = None,
                   loads: BlockLoad | None = None) -> CostProfile:
    """The cost profile at each context: the target's pass costs, the draft's where one is
    loaded, and one n-gram lookup's. `energy_reason` says why no pass has energy where the
    meter measured none (no meter, or no sensor that read)."""
    t0 = time.perf_counter()
    points: list[ProfilePoint] = []
    for ctx in contexts:
        costs = profile_model(target, ctx.history, ctx.kv_tokens, settings.target_batches,
                              settings, meter, loads=loads)
        draft_costs = [] if draft is None else profile_model(
            draft, ctx.history, ctx.kv_tokens, settings.draft_batches, settings, meter,
            draft_logits, loads)
        points.append(ProfilePoint(prompt=ctx.prompt, kv_tokens=ctx.kv_tokens,
                                   target=costs, draft=draft_costs))
    for model in (target, draft):
        if model is not None:
            model.clear()  # runs start from an empty cache; leave nothing behind
    longest = max(contexts, key=lambda c: len(c.history) - c.kv_tokens)
    lookups = lookup_ms(longest.history, longest.kv_tokens, settings.blocks)
    has_energy = any(c.energy_j for p in points for c in [*p.target, *p.draft])
    return CostProfile(
        points=points,
        position_rule=POSITION_RULE,
        blocks=settings.blocks,
        min_block_s=settings.min_block_s,
        ngram_lookup_ms=statistics.median(lookups) if lookups else None,
        ngram_lookup_ms_reason=None if lookups else
        "the profiled history has too few tokens after its fill to time lookups",
        ngram_lookup_ms_spread=spread(lookups),
        draft_reason=NO_DRAFT if draft is None else None,
        energy_reason=None if has_energy else
        (energy_reason or "no energy sensor was read around the profiled passes"),
        wall_s=time.perf_counter() - t0,
        disturbed_load=settings.disturbed_load,
        slow_floor=settings.slow_floor,
    )
