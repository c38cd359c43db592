"""Decoding speed, phase vs native llama.cpp: plain, draft-k and n-gram speculation.

Both sides get the same GGUF files, thread count, context size, token count and prompt. The
prompt is sent raw (no chat template) on both sides: phase tokenizes it with
`format_prompt(chat_template=False)`, which adds BOS and parses special tokens exactly as the
native tools' `common_tokenize(ctx, prompt, true, true)` does; the prompt token counts of the
two sides are compared and recorded. phase's engine is loaded once and warmed up with one
untimed run per strategy; every native run is a fresh process that does llama.cpp's own
warm-up before timing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import native
from bench.common import (
    REPO,
    Context,
    Section,
    alternate,
    check_at_least,
    check_at_most,
    median,
    ratio,
)
from phase.analysis.bench_rows import BenchRow
from phase.campaign import load_prompt
from phase.decode import Engine, cpu_buffers
from phase.policy.strategies import parse_strategy

PROMPTS = REPO / "experiments" / "prompts"
PLAIN_PROMPT = "code"  # plain and draft-k: the code-writing prompt
NGRAM_PROMPT = "edit"  # ngram: the edit prompt, whose answer copies its input
NGRAM_K = 8

PLAIN_MIN_RATIO = 0.97  # phase plain >= 0.97 x llama-bench tg
DRAFT_MIN_RATIO = 0.95  # phase draft-k >= 0.95 x llama-speculative-simple
ACCEPT_MAX_DIFF = 0.03  # acceptance within 3 percentage points


def prompt_text(name: str) -> str:
    return load_prompt(PROMPTS / f"{name}.txt").text


def _engine(ctx: Context, draft: Path | None = None) -> Engine:
    return Engine(ctx.target_path, draft, n_ctx=ctx.n_ctx, n_threads=ctx.threads)


def _phase_arm(engine: Engine, prompt: list[int], label: str,
               tokens: int) -> Callable[[], dict[str, Any]]:
    strategy = parse_strategy(label)

    def arm() -> dict[str, Any]:
        r = engine.run(prompt, strategy, tokens)
        return {"tokens_per_s": r.tokens_per_s, "tokens": len(r.token_ids),
                "token_ids": r.token_ids,
                "drafted": r.drafted, "accepted": r.accepted, "acceptance": r.acceptance,
                "text": r.text}

    engine.run(prompt, strategy, min(tokens, 16))  # warm-up: page cache, allocator, graphs
    return arm


def _values(runs: list[dict[str, Any]], key: str) -> list[Any]:
    return [r[key] for r in runs if r.get(key) is not None]


def _same_prefix(a: str | None, b: str | None) -> str:
    """How far two generated texts agree, in characters (greedy on the same tokens should
    agree throughout; the native tools also ban end-of-generation tokens, phase does not)."""
    if a is None or b is None:
        return "n/a"
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    shorter = min(len(a), len(b))
    return f"{n}/{shorter} chars" if n < shorter else f"all {shorter} chars"


def _extra_buffers(ctx: Context) -> bool:
    """phase's extra-CPU-buffer decision for the target, which the native tools must share."""
    return cpu_buffers.for_this_build(ctx.target_path).enabled


def _common(ctx: Context) -> native.Common:
    return native.Common(threads=ctx.threads, n_ctx=ctx.n_ctx, tokens=ctx.tokens,
                         extra_buffers=_extra_buffers(ctx))


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


# --- plain -----------------------------------------------------------------------------------


def _skip_without_native(ctx: Context, section: Section) -> bool:
    """Every native comparison needs the built llama.cpp tools; mark the section skipped."""
    if ctx.native_bin is None:
        section.skipped = f"no native binaries: {ctx.native_problem}"
        return True
    return False


def run_plain(ctx: Context) -> Section:
    """The plain section. Long because phase's and the native tool's runs alternate in one
    loop and their rows read the same locals; a benchmark script, run only by hand
    (bench/run.py), so it is kept as measured rather than split untested."""
    section = Section("plain")
    if _skip_without_native(ctx, section):
        return section
    text = prompt_text(PLAIN_PROMPT)
    common = _common(ctx)
    bin_path = ctx.native_bin
    with _engine(ctx) as engine:
        prompt = engine.format_prompt(text, chat_template=False)
        arms: dict[str, Callable[[], Any]] = {
            "phase": _phase_arm(engine, prompt, "plain", ctx.tokens),
            "llama-bench": lambda: native.llama_bench_tg(bin_path, ctx.target_path, ctx.tokens,
                                                         ctx.threads, common.extra_buffers),
            "llama-completion": lambda: native.llama_completion(bin_path, ctx.target_path, text,
                                                                common),
        }
        highlevel = _highlevel_arm(ctx, prompt)
        if highlevel is not None:
            arms["Llama.generate"] = highlevel
        runs = alternate(ctx.repeats, arms, ctx.log)
    phase_tps = median(_values(runs["phase"], "tokens_per_s"))
    ctx.shared["plain_tokens_per_s"] = phase_tps
    bench_tps = median(_values(runs["llama-bench"], "tokens_per_s"))
    ctx.shared["llama_bench_tokens_per_s"] = bench_tps
    completion_tps = median(_values(runs["llama-completion"], "tokens_per_s"))
    native_prompt = runs["llama-completion"][0]["prompt_tokens"]
    section.info = {
        "model": ctx.target_name, "prompt": PLAIN_PROMPT, "chat_template": False,
        "phase_prompt_tokens": len(prompt), "native_prompt_tokens": native_prompt,
        "same_prompt_tokens": native_prompt == len(prompt),
        "output_agreement": _same_prefix(runs["phase"][0]["text"],
                                         runs["llama-completion"][0]["text"]),
        "llama_bench_test": f"tg{ctx.tokens} (no prompt, -r 1 per process)",
    }
    r = ratio(phase_tps, bench_tps)
    section.rows.append(BenchRow(
        "plain", f"plain tg{ctx.tokens}", phase_tps, bench_tps, "llama-bench", "tok/s", r,
        f">= {PLAIN_MIN_RATIO:.2f}x", check_at_least(r, PLAIN_MIN_RATIO),
        "llama-bench decodes from an empty context; phase after the prompt",
        {"phase": _values(runs["phase"], "tokens_per_s"),
         "llama-bench": _values(runs["llama-bench"], "tokens_per_s")},
    ))
    section.rows.append(BenchRow(
        "plain", f"plain {ctx.tokens} tokens", phase_tps, completion_tps, "llama-completion",
        "tok/s", ratio(phase_tps, completion_tps), None, None,
        f"prompt tokens phase {len(prompt)} / native {native_prompt}; output agrees "
        f"{section.info['output_agreement']}",
        {"phase": _values(runs["phase"], "tokens_per_s"),
         "llama-completion": _values(runs["llama-completion"], "tokens_per_s")},
    ))
    if "Llama.generate" not in runs:
        return section
    hl = runs["Llama.generate"]
    hl_tps = median(_values(hl, "tokens_per_s"))
    same = hl[0]["token_ids"] == runs["phase"][0]["token_ids"]
    section.rows.append(BenchRow(
        "plain", f"plain {ctx.tokens} tokens", phase_tps, hl_tps, "Llama.generate", "tok/s",
        ratio(phase_tps, hl_tps), None, None,
        "llama-cpp-python's high-level loop (copies each logits row, samples through the "
        f"sampler chain); same tokens as phase: {'yes' if same else 'no'}",
        {"phase": _values(runs["phase"], "tokens_per_s"),
         "Llama.generate": _values(hl, "tokens_per_s")},
    ))
    return section


def _highlevel_arm(ctx: Context, prompt: list[int]) -> Callable[[], dict[str, Any]] | None:
    """llama-cpp-python's own `Llama.generate` loop on the same tokens: loaded per repeat,
    like a native process. It cannot say "auto"
    for flash attention; on the CPU, auto resolves to on. None where phase has no baseline."""
    try:
        from phase.decode.baseline import highlevel_generate
    except ImportError:
        return None

    def arm() -> dict[str, Any]:
        [(ids, seconds)] = highlevel_generate(ctx.target_path, prompt, ctx.tokens,
                                              n_ctx=ctx.n_ctx, n_threads=ctx.threads,
                                              flash_attn=True, repeats=1)
        return {"tokens_per_s": len(ids) / seconds, "token_ids": ids}

    return arm


# --- speculation -----------------------------------------------------------------------------


def _speculation_rows(section: Section, item: str, runs: dict[str, list[dict[str, Any]]],
                      reference: str, min_ratio: float | None) -> None:
    phase_tps = median(_values(runs["phase"], "tokens_per_s"))
    native_tps = median(_values(runs[reference], "tokens_per_s"))
    phase_acc = median(_values(runs["phase"], "acceptance"))
    native_acc = median(_values(runs[reference], "acceptance"))
    r = ratio(phase_tps, native_tps)
    diff = None if phase_acc is None or native_acc is None else phase_acc - native_acc
    agreement = _same_prefix(runs["phase"][0]["text"], runs[reference][0]["text"])
    section.rows.append(BenchRow(
        section.name, f"{item} tok/s", phase_tps, native_tps, reference, "tok/s", r,
        f">= {min_ratio:.2f}x" if min_ratio is not None else None,
        check_at_least(r, min_ratio) if min_ratio is not None else None,
        f"acceptance phase {_pct(phase_acc)} / native {_pct(native_acc)}; "
        f"output agrees {agreement}",
        {"phase": _values(runs["phase"], "tokens_per_s"),
         reference: _values(runs[reference], "tokens_per_s")},
    ))
    section.rows.append(BenchRow(
        section.name, f"{item} acceptance", phase_acc, native_acc, reference, "fraction",
        diff, f"within {100 * ACCEPT_MAX_DIFF:.0f} pts" if min_ratio is not None else None,
        check_at_most(abs(diff), ACCEPT_MAX_DIFF) if diff is not None and min_ratio is not None
        else None,
        "ratio column = phase - native (acceptance points)",
        {"phase": _values(runs["phase"], "acceptance"),
         reference: _values(runs[reference], "acceptance"),
         "phase_drafted": _values(runs["phase"], "drafted"),
         f"{reference}_drafted": _values(runs[reference], "drafted")},
    ))


def run_draft(ctx: Context) -> Section:
    section = Section("draft")
    if _skip_without_native(ctx, section):
        return section
    text = prompt_text(PLAIN_PROMPT)
    common = _common(ctx)
    bin_path = ctx.native_bin
    section.info = {"target": ctx.target_name, "draft": ctx.draft_name, "prompt": PLAIN_PROMPT,
                    "chat_template": False, "ks": list(ctx.ks)}
    with _engine(ctx, ctx.draft_path) as engine:
        prompt = engine.format_prompt(text, chat_template=False)
        section.info["phase_prompt_tokens"] = len(prompt)
        for k in ctx.ks:
            ctx.log(f"draft-{k}")

            def spec(k: int = k) -> dict[str, Any]:
                return native.speculative_simple(bin_path, ctx.target_path, ctx.draft_path,
                                                 text, k, common)

            arms: dict[str, Callable[[], Any]] = {
                "phase": _phase_arm(engine, prompt, f"draft-{k}", ctx.tokens),
                "llama-speculative-simple": spec,
            }
            runs = alternate(ctx.repeats, arms, ctx.log)
            section.info["native_prompt_tokens"] = runs["llama-speculative-simple"][0][
                "prompt_tokens"]
            _speculation_rows(section, f"draft-{k}", runs, "llama-speculative-simple",
                              DRAFT_MIN_RATIO)
    return section


def run_ngram(ctx: Context) -> Section:
    section = Section("ngram")
    if _skip_without_native(ctx, section):
        return section
    text = prompt_text(NGRAM_PROMPT)
    common = _common(ctx)
    bin_path = ctx.native_bin
    label = f"ngram-{NGRAM_K}"
    strategy = parse_strategy(label)
    section.info = {
        "model": ctx.target_name, "prompt": NGRAM_PROMPT, "chat_template": False, "k": NGRAM_K,
        "phase": f"most recent earlier occurrence of the last n tokens, n = "
                 f"{strategy.ngram_n_max}..{strategy.ngram_n_min}",
        "native": "llama-lookup: n-gram cache over prompt + output (n = 1..4), most "
                  "frequent continuation; the algorithms differ, so no target is set",
    }
    counter = iter(range(1_000_000))
    with _engine(ctx) as engine:
        prompt = engine.format_prompt(text, chat_template=False)
        section.info["phase_prompt_tokens"] = len(prompt)
        arms: dict[str, Callable[[], Any]] = {
            "phase": _phase_arm(engine, prompt, label, ctx.tokens),
            "llama-lookup": lambda: native.lookup(
                bin_path, ctx.target_path, text, NGRAM_K, common,
                ctx.workdir / f"lookup-{next(counter)}.bin"),
        }
        runs = alternate(ctx.repeats, arms, ctx.log)
    section.info["native_prompt_tokens"] = runs["llama-lookup"][0]["prompt_tokens"]
    _speculation_rows(section, label, runs, "llama-lookup", None)
    return section
