"""phase's effective bandwidth for plain decoding against llama-bench's tg figure (issue 33).

Both sides decode the same GGUF file with the same threads and tokens, alternating repeat by
repeat: llama-bench `-p 0 -n N -t T -r 1` (one tg test after its own warm-up run, a fresh
process per repeat; the binary built from the llama.cpp phase links, bench/native_tools.py)
and phase's plain decoding (phase.decode.Engine, warmed up once, the code prompt raw). Each
tokens/s becomes an effective bandwidth the same way:

    GB/s = tokens/s x bytes/token(0) / 10^9

with bytes/token from the GGUF header at context fill 0 (phase.costmodel.bytes_per_token:
weights streamed per token, the KV cache's reads left out on both sides; llama-bench's tg
starts from an empty cache, phase's after a prompt of a few dozen tokens, whose KV reads are
kilobytes against the weights' megabytes). The row gives both medians, phase / llama-bench
as the median of per-repeat ratios with its bootstrap interval (phase.analysis.intervals),
and whether phase's median lies within llama-bench's spread (its lowest to highest repeat),
the check issue 33 asks for. The model: the test model with --quick, else the embedded
qwen2.5-coder-0.5b (whatever --model says: this section is about one small model).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import native
from bench.common import Context, Section, alternate, median
from bench.decode_bench import PLAIN_PROMPT, prompt_text
from phase.analysis.bench_rows import BenchRow
from phase.analysis.intervals import ratio_interval
from phase.costmodel.bytes_per_token import of_file
from phase.decode import Engine, cpu_buffers
from phase.models.sources import TEST_MODEL, resolve
from phase.policy.strategies import parse_strategy

MODEL = "qwen2.5-coder-0.5b"
MIN_REPEATS = 3


def model_for(ctx: Context) -> tuple[str, Path]:
    name = TEST_MODEL if ctx.quick else MODEL
    if name == ctx.target_name:
        return name, ctx.target_path
    return name, resolve(name).path


def _phase_arm(engine: Engine, prompt: list[int], tokens: int) -> Callable[[], float]:
    plain = parse_strategy("plain")
    engine.run(prompt, plain, min(tokens, 16))  # warm-up: page cache, allocator, graphs
    return lambda: engine.run(prompt, plain, tokens).tokens_per_s


def within(value: float | None, samples: list[float]) -> bool | None:
    return None if value is None or not samples else min(samples) <= value <= max(samples)


def run(ctx: Context) -> Section:
    section = Section("tg-bandwidth")
    if ctx.tools_bin is None:
        section.skipped = f"no native tools: {ctx.tools_problem}"
        return section
    name, path = model_for(ctx)
    bpt = of_file(path, 0)
    extra = cpu_buffers.for_this_build(path).enabled
    bin_path, repeats = ctx.tools_bin, max(ctx.repeats, MIN_REPEATS)
    with Engine(path, n_ctx=ctx.n_ctx, n_threads=ctx.threads) as engine:
        prompt = engine.format_prompt(prompt_text(PLAIN_PROMPT), chat_template=False)
        arms: dict[str, Callable[[], Any]] = {
            "phase": _phase_arm(engine, prompt, ctx.tokens),
            "llama-bench": lambda: native.llama_bench_tg(
                bin_path, path, ctx.tokens, ctx.threads, extra)["tokens_per_s"],
        }
        runs = alternate(repeats, arms, ctx.log)
    gb = {arm: [tps * bpt.total / 1e9 for tps in values] for arm, values in runs.items()}
    ours, theirs = median(gb["phase"]), median(gb["llama-bench"])
    interval = ratio_interval(dict(enumerate(gb["phase"])), dict(enumerate(gb["llama-bench"])))
    inside = within(ours, gb["llama-bench"])
    section.info = {
        "model": name, "threads": ctx.threads, "tokens": ctx.tokens, "repeats": repeats,
        "bytes_per_token": bpt.total, "bytes_per_token_terms": bpt.terms(),
        "bytes_per_token_formula": bpt.formula, "fill": 0,
        "llama_bench_test": f"tg{ctx.tokens}: -p 0 -n {ctx.tokens} -t {ctx.threads} -r 1",
        "phase_prompt_tokens": len(prompt), "extra_buffers": extra,
        "ratio_interval": None if interval is None else
        {"ratio": interval.centre, "low": interval.low, "high": interval.high,
         "n": interval.n, "paired": interval.paired},
        "llama_bench_spread_gb_s": [min(gb["llama-bench"]), max(gb["llama-bench"])],
        "phase_within_llama_bench_spread": inside,
    }
    span = ("n/a" if interval is None
            else f"{interval.centre:.3f}x [{interval.low:.3f}, {interval.high:.3f}]")
    section.rows.append(BenchRow(
        "tg-bandwidth", f"plain tg{ctx.tokens} effective bandwidth ({name})", ours, theirs,
        "llama-bench tg", "GB/s", interval.centre if interval else None,
        "within llama-bench's spread", inside,
        f"tok/s x {bpt.total / 1e6:.1f} MB/token (fill 0); phase/llama-bench {span}; "
        f"llama-bench {min(gb['llama-bench']):.2f}..{max(gb['llama-bench']):.2f} GB/s",
        {"phase": gb["phase"], "llama-bench": gb["llama-bench"]},
        breakdown={"phase tok/s": runs["phase"], "llama-bench tok/s": runs["llama-bench"]},
    ))
    return section
