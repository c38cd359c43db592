"""How many draft proposals each verification rule keeps when the target samples (issue 34).

Three arms per temperature (0.3, 0.7, 1.0), run by phase.decode.sampled on the same prompt
(decode_bench's code prompt, no chat template) and models, draft-4, llama.cpp's default
truncation (top-k 40, top-p 0.95, min-p 0.05) on both sides:

- rejection: phase's speculative sampling (Leviathan/Chen), the draft's tokens drawn from q;
- greedy-match: llama-speculative-simple's rule, the draft's most probable token kept only
  when the target's draw equals it;
- llama-speculative: examples/speculative's stochastic rule, the draft's most probable token
  kept when r <= p/q.

These are phase's implementations of the two tools' rules (phase.policy.speculative_sampling
says what each does, read from llama.cpp's source), run on phase's engine, so the arms differ
in nothing but the rule: what the row compares is the rule, not the tools' binaries.
Acceptance = proposals kept / proposals verified, over a repeat's runs (the same seeds in every
arm of a repeat: common random numbers); the figure is the median over alternating repeats.
Rejection sampling's target is to keep at least as many as each tool's rule. That is not a
theorem: rejection sampling keeps Σ min(p, q) in expectation, greedy-match p(x*) and
llama-speculative min(1, p(x*)/q(x*)) for the draft's top token x*, which is more when the
draft is flatter than the target, at the price of an output that is not the target's
distribution (tests/test_sampling_exact.py). With the draft = target (--quick) p and q are
equal up to rounding, so rejection sampling and llama-speculative both keep ~everything.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.common import Context, Section, alternate, check_at_least, median
from bench.decode_bench import PLAIN_PROMPT, prompt_text
from phase.analysis.bench_rows import BenchRow
from phase.decode import Engine
from phase.decode.sampled import SampledDecoder
from phase.policy.sampling import SamplingSettings

TEMPERATURES = (0.3, 0.7, 1.0)
RULES = ("rejection", "greedy-match", "llama-speculative")
TOOLS = {"greedy-match": "llama-speculative-simple's rule",
         "llama-speculative": "llama-speculative's rule"}
K = 4
# llama.cpp's defaults (common_params_sampling): what either tool samples with unless told.
TOP_K, TOP_P, MIN_P = 40, 0.95, 0.05


def _arm(decoder: SampledDecoder, settings: SamplingSettings, rule: str, tokens: int,
         seeds_per_repeat: int) -> Callable[[], dict[str, Any]]:
    calls = {"n": 0}

    def run() -> dict[str, Any]:
        first = calls["n"] * seeds_per_repeat  # repeat r: seeds r*S .. r*S+S-1, every arm
        calls["n"] += 1
        proposed = accepted = 0
        for seed in range(first, first + seeds_per_repeat):
            r = decoder.draft_k(tokens, K, settings.with_seed(seed), rule)
            proposed += r.proposed
            accepted += r.accepted
        return {"acceptance": accepted / proposed if proposed else 0.0,
                "proposed": proposed, "accepted": accepted, "seeds": [first, seeds_per_repeat]}
    return run


def run(ctx: Context) -> Section:
    section = Section("sampling")
    seeds_per_repeat = 2 if ctx.quick else 4
    section.info = {
        "target": ctx.target_name, "draft": ctx.draft_name, "prompt": PLAIN_PROMPT,
        "chat_template": False, "k": K, "tokens_per_run": ctx.tokens,
        "seeds_per_repeat": seeds_per_repeat,
        "seeds": "repeat r (from 0) runs seeds r*S .. r*S+S-1 in every arm, S = seeds_per_repeat",
        "truncation": {"top_k": TOP_K, "top_p": TOP_P, "min_p": MIN_P},
        "temperatures": list(TEMPERATURES),
    }
    with Engine(ctx.target_path, ctx.draft_path, n_ctx=ctx.n_ctx,
                n_threads=ctx.threads) as engine:
        prompt = engine.format_prompt(prompt_text(PLAIN_PROMPT), chat_template=False)
        decoder = SampledDecoder(engine.target, engine.draft, prompt)
        for temperature in TEMPERATURES:
            settings = SamplingSettings(temperature, TOP_K, TOP_P, MIN_P)
            arms = {rule: _arm(decoder, settings, rule, ctx.tokens, seeds_per_repeat)
                    for rule in RULES}
            runs = alternate(ctx.repeats, arms, ctx.log)
            section.rows.extend(_rows(temperature, runs))
    return section


def _rows(temperature: float, runs: dict[str, list[dict[str, Any]]]) -> list[BenchRow]:
    acc = {rule: [r["acceptance"] for r in runs[rule]] for rule in RULES}
    ours = median(acc["rejection"])
    rows = []
    for rule, tool in TOOLS.items():
        theirs = median(acc[rule])
        both = ours is not None and theirs is not None
        rows.append(BenchRow(
            "sampling", f"T={temperature:g}: rejection sampling vs {rule}", ours, theirs, tool,
            # Acceptance rows carry a difference in points (bench/report.py), not a ratio.
            "fraction", ours - theirs if both else None, ">= the tool's rule",
            check_at_least(ours, theirs) if both else None,
            f"kept {_pct(ours)} of draft-{K}'s proposals vs {_pct(theirs)}",
            {"rejection": acc["rejection"], rule: acc[rule]},
        ))
    return rows


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"
