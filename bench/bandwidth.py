"""The hardware limit: how close plain decoding gets to this machine's memory bandwidth.

Generating one token reads (nearly) every weight once, so tokens/s x model bytes is the
bandwidth decoding actually draws; it can not exceed what the memory system delivers. The
limit is measured STREAM-style with phase.bandwidth's copy kernel (numpy, arrays far larger
than any cache), counting read + write bytes as STREAM does, with 1 thread and with the
decode thread count (numpy releases the GIL for the copy, so threads copy disjoint slices in
parallel). The best median is the limit.
"""

from __future__ import annotations

from bench.common import Context, Section, median
from bench.decode_bench import PLAIN_PROMPT, prompt_text
from phase.analysis.bench_rows import BenchRow
from phase.bandwidth.stream import WORD, arrays_for, stream_bytes, time_kernel
from phase.decode import Engine
from phase.policy.strategies import parse_strategy

MIB = 1 << 20


def copy_bandwidth(size_bytes: int, threads: int, repeats: int) -> list[float]:
    """Bytes/s of `threads` threads copying one size_bytes array into another, per repeat
    (phase.bandwidth's copy kernel, the one `phase bandwidth` and the stream section run)."""
    src, dst = arrays_for("copy", size_bytes // WORD)
    moved = stream_bytes("copy", len(src))
    return [moved / t for t in time_kernel("copy", [src, dst], threads, repeats)]


def run(ctx: Context) -> Section:
    section = Section("bandwidth")
    size = (256 if ctx.quick else 1024) * MIB
    repeats = max(ctx.repeats, 5)
    thread_counts = sorted({1, ctx.threads})
    samples = {t: copy_bandwidth(size, t, repeats) for t in thread_counts}
    medians = {t: median(v) or 0.0 for t, v in samples.items()}
    best_threads = max(medians, key=lambda t: medians[t])
    limit = medians[best_threads]
    model_bytes = ctx.target_path.stat().st_size
    section.info = {
        "array_mib": size // MIB, "repeats": repeats, "kernel": "copy (read + write bytes)",
        "gb_per_s_by_threads": {str(t): v / 1e9 for t, v in medians.items()},
        "model": ctx.target_name, "model_bytes": model_bytes,
        "model_bytes_note": "GGUF file size (weights + metadata; the weights dominate)",
    }
    if ctx.shared.get("plain_tokens_per_s") is None:
        ctx.log("plain section not run: measuring phase plain tokens/s here")
        ctx.shared["plain_tokens_per_s"] = _phase_plain(ctx)
    for name, tps in (("phase plain", ctx.shared.get("plain_tokens_per_s")),
                      ("llama-bench tg", ctx.shared.get("llama_bench_tokens_per_s"))):
        if tps is None:
            continue
        drawn = tps * model_bytes
        section.rows.append(BenchRow(
            "bandwidth", f"{name} x model bytes", drawn / 1e9, limit / 1e9,
            f"copy bandwidth ({best_threads} thr)", "GB/s", drawn / limit, None, None,
            f"{tps:.1f} tok/s x {model_bytes / 1e6:.0f} MB = fraction of measured bandwidth",
            {f"copy_{t}thr_gb_s": [v / 1e9 for v in vals] for t, vals in samples.items()},
        ))
    return section


def _phase_plain(ctx: Context) -> float | None:
    strategy = parse_strategy("plain")
    with Engine(ctx.target_path, n_ctx=ctx.n_ctx, n_threads=ctx.threads) as engine:
        prompt = engine.format_prompt(prompt_text(PLAIN_PROMPT), chat_template=False)
        engine.run(prompt, strategy, min(ctx.tokens, 16))  # warm-up
        return median([engine.run(prompt, strategy, ctx.tokens).tokens_per_s
                       for _ in range(ctx.repeats)])
