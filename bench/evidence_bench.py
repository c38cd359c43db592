"""What the divergence evidence costs on the decode hot path.

Measured runs compare each token with the plain reference until the first divergence, where
they take the top-2 logit gap of that one row; plain references record every token's gap.
Arms, alternated on one loaded engine: plain decoding as before (no reference), plain with
the reference compared (what every measured run now does; no divergence, so every token is
compared), and plain recording every gap (what a reference does, outside measured runs). The
per-call cost of `top2_gap` against the argmax the hot loop already does is timed on a real
logits row.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable
from typing import Any

from bench.common import Context, Section, alternate, check_at_least, median, ratio
from bench.decode_bench import PLAIN_PROMPT, prompt_text
from phase.analysis.bench_rows import BenchRow
from phase.decode import Engine
from phase.policy.strategies import parse_strategy

MIN_RATIO = 0.995  # comparing with the reference costs at most 0.5% of plain tokens/s


def run(ctx: Context) -> Section:
    section = Section("evidence")
    plain = parse_strategy("plain")
    with Engine(ctx.target_path, n_ctx=ctx.n_ctx, n_threads=ctx.threads) as engine:
        prompt = engine.format_prompt(prompt_text(PLAIN_PROMPT), chat_template=False)
        reference = engine.run(prompt, plain, ctx.tokens).token_ids

        def arm(**options: Any) -> Callable[[], float]:
            return lambda: engine.run(prompt, plain, ctx.tokens, **options).tokens_per_s

        runs = alternate(ctx.repeats, {
            "plain": arm(),
            "plain + reference": arm(reference=reference),
            "plain + every gap": arm(record_gaps=True),
        }, ctx.log)
        gap_us, argmax_us = _per_call_us(engine)
    base = median(runs["plain"])
    compared = median(runs["plain + reference"])
    gaps = median(runs["plain + every gap"])
    r = ratio(compared, base)
    section.info = {"model": ctx.target_name, "n_vocab": engine.target.n_vocab,
                    "top2_gap_us": gap_us, "argmax_us": argmax_us}
    section.rows.append(BenchRow(
        "evidence", "plain with the reference compared", compared, base, "plain", "tok/s", r,
        f">= {MIN_RATIO:.3f}x", check_at_least(r, MIN_RATIO),
        "one comparison per token until the first divergence, one top-2 gap there",
        {"plain + reference": runs["plain + reference"], "plain": runs["plain"]},
    ))
    section.rows.append(BenchRow(
        "evidence", "plain recording every token's gap (references)", gaps, base, "plain",
        "tok/s", ratio(gaps, base), None, None,
        f"top2_gap {gap_us:.1f} us per call vs argmax {argmax_us:.1f} us "
        f"({engine.target.n_vocab} logits); references are warm-ups, never measured",
        {"plain + every gap": runs["plain + every gap"], "plain": runs["plain"]},
    ))
    return section


def _per_call_us(engine: Engine) -> tuple[float, float]:
    """Best-of-5 microseconds per call of top2_gap and of argmax on the last logits row."""
    target = engine.target
    target.clear()  # the arms left their KV behind; this pass starts at position 0
    target.decode_one(1, 0)
    gap = min(timeit.repeat(lambda: target.top2_gap(0), number=200, repeat=5)) / 200
    arg = min(timeit.repeat(lambda: target.argmax(0), number=200, repeat=5)) / 200
    return gap * 1e6, arg * 1e6
