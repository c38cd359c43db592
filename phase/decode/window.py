"""The timed window: the one way a run is measured, greedy or sampled (and any later caller).

Before the window every model in play is cleared, whatever an earlier run (or an aborted one)
left in its KV memory, and the prompt but its last token goes through the target; the run's
proposer then starts (its own state dropped, a draft's prompt cache built). The window itself
lies between the two callbacks: the first decode pass, timed by `timed.timed_decode`, and,
where an energy window must last longer than one decode, more passes back to back, each from
the prompt's cache with everything generated dropped (no prefill inside the window). A pass
that restarts the proposer on the same prompt repeats the first's tokens (greedy decoding, or
sampling with the run's own seed), so the result describes the first pass and lists them all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from phase.decode.loops import Decoded
from phase.decode.native import NativeModel
from phase.decode.timed import Timed, decode_result, timed_decode
from phase.policy.auto import Decision
from phase.policy.result import DecodeResult
from phase.policy.strategies import Strategy
from phase.results import Pass, token_sha256

Callback = Callable[[], object] | None
Start = Callable[[list[int]], None]


class Repeat(NamedTuple):
    """Passes after the first: the loop to run (without the first pass's evidence gathering),
    until the window is this long or this many passes."""

    loop: Callable[[], Decoded]
    min_window_s: float
    max_passes: int


@dataclass(frozen=True)
class Edges:
    """What the run's proposer does at the window's edges: `start` after the prefill (drop its
    state, build a draft's prompt cache), `again` before each later pass (the same on the
    prompt whose cache is kept). None for plain decoding."""

    start: Start | None = None
    again: Start | None = None


@dataclass
class Window:
    """One timed window: when it began, the prefill before it, the first pass, the choices
    `auto` made in it (None for the fixed strategies) and every pass (empty: one pass)."""

    started_unix: float
    prefill_s: float
    first: Timed
    decisions: list[Decision] | None
    passes: list[Pass] = field(default_factory=list)

    def result(self, strategy: Strategy, prompt: list[int], text: str,
               threads: tuple[int, int]) -> DecodeResult:
        """The DecodeResult of the first pass, listing every pass."""
        result = decode_result(strategy, prompt, self.first, self.started_unix, self.prefill_s,
                               self.decisions, text, threads)
        result.passes = self.passes
        return result


def prefill(models: Sequence[NativeModel], prompt: list[int], edges: Edges) -> float:
    """Clear every model (models[0] is the target), run the prompt but its last token through
    the target, start the proposer; returns the seconds."""
    t0 = time.perf_counter()
    for model in models:  # runs are independent: nothing cached survives
        model.clear()
    if len(prompt) > 1:
        models[0].decode(prompt[:-1], 0, 0)
    if edges.start is not None:
        edges.start(prompt)
    return time.perf_counter() - t0


def timed_window(models: Sequence[NativeModel], prompt: list[int], edges: Edges,
                 loop: Callable[[], Decoded], gaps: list[float] | None,
                 decisions: Callable[[], list[Decision] | None],
                 on_decode_start: Callback = None, on_decode_end: Callback = None,
                 repeat: Repeat | None = None) -> Window:
    """Prefill, then the window between the callbacks (which run also when decoding fails).
    `decisions` reads the first pass's choices before another pass starts the proposer afresh.
    """
    started_unix = time.time()
    prefill_s = prefill(models, prompt, edges)
    if on_decode_start is not None:
        on_decode_start()
    window0 = time.perf_counter()
    try:
        first = timed_decode(loop, gaps)
        window = Window(started_unix, prefill_s, first, decisions())
        if repeat is not None:
            window.passes = _repeat(models[0], prompt, edges, first, repeat, window0)
    finally:
        if on_decode_end is not None:
            on_decode_end()
    return window


def _repeat(target: NativeModel, prompt: list[int], edges: Edges, first: Timed,
            repeat: Repeat, window0: float) -> list[Pass]:
    """More passes until the window has lasted repeat.min_window_s: each drops the generated
    positions from the target's cache (the prompt's stay) and restarts the proposer on the
    same prompt (which trims a draft's cache the same way)."""
    passes = [Pass(decode_s=first.decode_s, tokens=len(first.generated),
                   output_sha256=token_sha256(first.generated))]
    while (len(passes) < repeat.max_passes
           and time.perf_counter() - window0 < repeat.min_window_s):
        target.truncate(len(prompt) - 1)
        if edges.again is not None:
            edges.again(prompt)
        timed = timed_decode(repeat.loop, None)
        passes.append(Pass(decode_s=timed.decode_s, tokens=len(timed.generated),
                           output_sha256=token_sha256(timed.generated)))
    return passes
