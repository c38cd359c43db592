"""How far llama.cpp's numerics move a greedy choice between batch shapes: the yardstick for
the validator's `near_tie_gap`.

A speculative run's target checks each token as one row of a batched pass; plain decoding
computes it in a one-token pass. Same model, same tokens, different kernels (and, on the CPU
with several threads and a long KV, a split attention), so the logits differ slightly, and
where the two best tokens are close the choice can flip. The equivalence rule calls a
divergence a near-tie when both passes' top-2 gaps are under `near_tie_gap`; a numerics flip
needs the margin between the two tokens to move by at least the sum of those gaps, so the
threshold must exceed how far the margin moves.

This decodes the chat-formatted `code` prompt plainly (one token per pass, every logits row
kept), then evaluates the same tokens in one batched pass, and reports per position the change
of the one-token pass's top-two margin (best minus runner-up), the flips, and the gaps at
each flip. The check: the largest change stays below `near_tie_gap`.
"""

from __future__ import annotations

import numpy as np

from bench.common import Context, Section
from bench.decode_bench import PLAIN_PROMPT, prompt_text
from phase.analysis.bench_rows import BenchRow
from phase.decode import Engine
from phase.validate.settings import RuleSettings


def _rows(engine: Engine, prompt: list[int], n: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Logits rows for n greedy tokens: from one-token passes, then from one batched pass."""
    target = engine.target
    target.clear()
    target.decode(prompt, 0, 1)
    single = [target.logits(0)]
    tokens = [int(single[0].argmax())]
    for i in range(n - 1):
        tokens.append(target.decode_one(tokens[-1], len(prompt) + i))
        single.append(target.logits(0))
    target.clear()
    target.decode(prompt + tokens[:-1], 0, n)
    batched = [target.logits(i) for i in range(n)]
    target.clear()
    return single, batched


def _gap(row: np.ndarray) -> float:
    top = np.partition(row, -2)[-2:]
    return float(top.max() - top.min())


def run(ctx: Context) -> Section:
    section = Section("batch-noise")
    threshold = RuleSettings().near_tie_gap
    with Engine(ctx.target_path, n_ctx=ctx.n_ctx, n_threads=ctx.threads) as engine:
        prompt = engine.format_prompt(prompt_text(PLAIN_PROMPT), chat_template=True)
        single, batched = _rows(engine, prompt, ctx.tokens)
    moves: list[float] = []
    flips: list[dict[str, float]] = []
    for i, (a, b) in enumerate(zip(single, batched, strict=True)):
        best, runner_up = (int(t) for t in np.argsort(a)[-2:][::-1])
        moves.append(abs(float((a[best] - a[runner_up]) - (b[best] - b[runner_up]))))
        if int(b.argmax()) != best:
            flips.append({"position": i, "gap_single": _gap(a), "gap_batched": _gap(b)})
    largest = max(moves)
    section.info = {"model": ctx.target_name, "threads": ctx.threads, "tokens": ctx.tokens,
                    "prompt_tokens": len(prompt), "near_tie_gap": threshold, "flips": flips,
                    "moves": moves}
    section.rows.append(BenchRow(
        "batch-noise", "largest move of the top-2 margin, one-token vs batched pass", largest,
        threshold, "near_tie_gap", "logit", None, f"< {threshold:g}",
        largest < threshold,
        f"median {float(np.median(moves)):.3g}; {len(flips)} flip(s) in {ctx.tokens} tokens, "
        "gaps (one-token, batched): "
        + (", ".join(f"{f['gap_single']:.3g}/{f['gap_batched']:.3g}" for f in flips) or "none"),
    ))
    return section
