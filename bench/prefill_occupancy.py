"""What one request's prefill costs when other requests already hold the shared KV cache.

A serving run keeps every active request in one unified KV buffer (phase.decode.native), and
llama.cpp sizes each pass's attention by the buffer's span (its n_kv, padded to 256), not by
the cells the passing sequence may see: a prompt admitted beside seven requests mid-generation
attends over their cells too, masked. In the serving campaigns, requests of the speculative
strategies are admitted beside more active requests than plain's (plain's fixed-length
requests finish in the same step), and their target prefill reads higher at concurrency >= 2.
This section measures the mechanism alone, so that share can be told apart from the rest: the
same prompt's prefill with 0, 3 and 7 other sequences of a serving request's size in the cache,
with flash attention as campaigns run it (auto) and off.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from bench.common import Context, Section, alternate, median, ratio
from bench.decode_bench import PLAIN_PROMPT, prompt_text
from phase.analysis.bench_rows import BenchRow
from phase.decode.native import ContextOptions, NativeModel

OTHERS = (0, 3, 7)  # other active requests: alone, and at concurrency 4 and 8
SEQUENCES = 8
CAMPAIGNS_FLASH_ATTN = ContextOptions(n_ctx=64).flash_attn  # what campaigns run: llama.cpp's auto


@dataclass(frozen=True)
class Sizes:
    prompt_tokens: int = 83  # a HumanEval request under the chat template, less its last token
    other_cells: int = 116  # what each other request holds: its prompt and 32 generated tokens


QUICK = Sizes(prompt_tokens=12, other_cells=16)  # --quick: the shape of the measurement only


def run(ctx: Context) -> Section:
    section = Section("prefill-occupancy")
    sizes = QUICK if ctx.quick else Sizes()
    for flash_attn in (CAMPAIGNS_FLASH_ATTN, "off"):
        options = ContextOptions(n_ctx=max(ctx.n_ctx, SEQUENCES * sizes.other_cells * 2),
                                 n_threads=ctx.threads, n_threads_batch=ctx.threads,
                                 flash_attn=flash_attn, n_seq_max=SEQUENCES)
        model = NativeModel(ctx.target_path, options)
        try:
            timings = alternate(ctx.repeats, {f"{n} others": _arm(model, n, sizes) for n in OTHERS},
                                ctx.log)
        finally:
            model.close()
        alone = median(timings["0 others"])
        for n in OTHERS[1:]:
            seconds = median(timings[f"{n} others"])
            section.rows.append(BenchRow(
                "prefill-occupancy",
                f"{sizes.prompt_tokens}-token prefill beside {n} requests, flash attention "
                f"{flash_attn}", seconds, alone, "the same prefill alone", "s",
                ratio(seconds, alone), None, None,
                f"{n} x {sizes.other_cells} cells of other sequences in the unified KV cache",
                {f"{n} others": timings[f"{n} others"], "alone": timings["0 others"]},
            ))
    section.info = {"model": ctx.target_name, "threads": ctx.threads,
                    "prompt_tokens": sizes.prompt_tokens,
                    "cells_per_other_request": sizes.other_cells}
    return section


def _arm(model: NativeModel, others: int, sizes: Sizes) -> Callable[[], float]:
    """Seconds of one prefill (the best of three, after one unmeasured) with `others` other
    sequences in the cache."""
    text = prompt_text(PLAIN_PROMPT)
    n, cells = sizes.prompt_tokens, sizes.other_cells
    tokens = model.tokenize(text, add_special=True, parse_special=False) * max(n, cells)
    prompt = tokens[:n]
    last = SEQUENCES - 1

    def once() -> float:
        model.seq_remove(last, 0)
        started = time.perf_counter()
        model.decode_rows(prompt, list(range(n)), [last] * n, [False] * n)
        model.synchronize()
        return time.perf_counter() - started

    def measure() -> float:
        model.clear()
        for seq in range(others):
            model.decode_rows(tokens[:cells], list(range(cells)), [seq] * cells, [False] * cells)
        model.synchronize()
        once()
        return min(once() for _ in range(3))

    return measure
