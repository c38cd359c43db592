"""The target as its own draft: every proposal should be kept. phase vs llama-speculative-simple.

With draft = target, a rejected proposal can only come from numerics: the draft computes each
proposal in a one-token pass, the target checks it as one row of a batched pass, and llama.cpp
does not compute those two the same way everywhere (on the CPU, flash attention splits a
one-token pass over the KV cache across threads once 512 KV cells are in use). phase's draft
re-evaluates every verified batch the way the target did (phase.decode.proposers.DraftProposer,
as llama.cpp's draft-simple does), so their KV histories agree; the check is that phase keeps at
least as many proposals as llama.cpp's own speculative decoding on the same prompt.

Arms, alternated: phase draft-4 with the mirror (the default), phase draft-4 without it (what
the mirror buys, and what it costs), and llama-speculative-simple (-md = the target). Then the
same pair of phase arms with the real draft model, for the cost on the pairing campaigns use.
The prompt is the `code` prompt (an LRU cache) rendered with the target's chat template, sent
as raw text to both sides, so both tokenize the same chat-formatted text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench import native
from bench.common import Context, Section, alternate, check_at_least, median, ratio
from bench.decode_bench import PLAIN_PROMPT, _common, _pct, _skip_without_native, prompt_text
from phase.analysis.bench_rows import BenchRow
from phase.decode import Engine
from phase.decode.proposers import DraftProposer
from phase.policy.strategies import parse_strategy

K = 4


def _arm(engine: Engine, prompt: list[int], reference: list[int], tokens: int,
         mirror: bool) -> Callable[[], dict[str, Any]]:
    strategy = parse_strategy(f"draft-{K}")
    assert engine.draft is not None

    def arm() -> dict[str, Any]:
        proposer = DraftProposer(engine.draft, mirror=mirror)
        r = engine.run(prompt, strategy, tokens, proposer=proposer, reference=reference)
        return {"tokens_per_s": r.tokens_per_s, "drafted": r.drafted, "accepted": r.accepted,
                "acceptance": r.acceptance, "divergence": r.divergence_index,
                "divergence_gap": r.divergence_gap}

    arm()  # warm-up
    return arm


def _values(runs: list[dict[str, Any]], key: str) -> list[Any]:
    return [r[key] for r in runs if r.get(key) is not None]


def _pair(ctx: Context, draft_path: Any, text: str) -> tuple[dict[str, list[Any]], int,
                                                              dict[str, Any]]:
    """Phase with and without the mirror (plus native where the draft is the target)."""
    with Engine(ctx.target_path, draft_path, n_ctx=ctx.n_ctx, n_threads=ctx.threads) as engine:
        prompt = engine.format_prompt(text, chat_template=True)
        plain = engine.run(prompt, parse_strategy("plain"), ctx.tokens, record_gaps=True)
        raw = engine.detokenize(prompt)
        arms: dict[str, Callable[[], Any]] = {
            "phase": _arm(engine, prompt, plain.token_ids, ctx.tokens, mirror=True),
            "phase, no mirror": _arm(engine, prompt, plain.token_ids, ctx.tokens, mirror=False),
        }
        if draft_path == ctx.target_path:
            common = _common(ctx)
            bin_path = ctx.native_bin
            arms["llama-speculative-simple"] = lambda: native.speculative_simple(
                bin_path, ctx.target_path, ctx.target_path, raw, K, common)
        runs = alternate(ctx.repeats, arms, ctx.log)
    info = {"prompt_tokens": len(prompt),
            "plain_top2_gap_min": min(plain.top2_gaps or [0.0])}
    return runs, len(prompt), info


def run(ctx: Context) -> Section:
    section = Section("self-draft")
    if _skip_without_native(ctx, section):
        return section
    text = prompt_text(PLAIN_PROMPT)
    section.info = {"target": ctx.target_name, "k": K, "prompt": PLAIN_PROMPT,
                    "chat_template": "rendered, sent raw to both sides"}
    runs, n_prompt, info = _pair(ctx, ctx.target_path, text)
    section.info.update(info)
    native_runs = runs["llama-speculative-simple"]
    section.info["native_prompt_tokens"] = native_runs[0]["prompt_tokens"]
    section.info["same_prompt_tokens"] = native_runs[0]["prompt_tokens"] == n_prompt
    acc = {name: median(_values(r, "acceptance")) for name, r in runs.items()}
    native_acc = acc["llama-speculative-simple"]
    phase_acc = acc["phase"]
    section.rows.append(BenchRow(
        "self-draft", f"draft = target, draft-{K} acceptance", phase_acc, native_acc,
        "llama-speculative-simple", "fraction",
        # Acceptance rows carry a difference in points (bench/report.py), not a ratio.
        phase_acc - native_acc if phase_acc is not None and native_acc is not None else None,
        ">= native", check_at_least(phase_acc, native_acc) if native_acc is not None else None,
        f"without the mirror phase keeps {_pct(acc['phase, no mirror'])}; first divergence "
        f"from plain: {_values(runs['phase'], 'divergence')[:1] or 'none'}",
        {name: _values(r, "acceptance") for name, r in runs.items()},
    ))
    _cost_row(section, "draft = target", runs)
    if ctx.draft_path != ctx.target_path:
        draft_runs, _, _ = _pair(ctx, ctx.draft_path, text)
        _cost_row(section, f"draft {ctx.draft_name}", draft_runs)
    return section


def _cost_row(section: Section, label: str, runs: dict[str, list[dict[str, Any]]]) -> None:
    """tok/s with the mirror over tok/s without: what keeping the KV histories equal costs."""
    with_mirror = median(_values(runs["phase"], "tokens_per_s"))
    without = median(_values(runs["phase, no mirror"], "tokens_per_s"))
    acc_with = median(_values(runs["phase"], "acceptance"))
    acc_without = median(_values(runs["phase, no mirror"], "acceptance"))
    section.rows.append(BenchRow(
        "self-draft", f"{label}: draft-{K} tok/s, mirror / no mirror", with_mirror, without,
        "phase, no mirror", "tok/s", ratio(with_mirror, without), None, None,
        f"acceptance {_pct(acc_with)} with the mirror, {_pct(acc_without)} without",
        {"phase": _values(runs["phase"], "tokens_per_s"),
         "phase, no mirror": _values(runs["phase, no mirror"], "tokens_per_s")},
    ))
