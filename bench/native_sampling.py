"""Speculative sampling's acceptance against llama.cpp's own tools, the binaries (issue 34).

The `sampling` section (bench/sampling_bench.py) runs phase's implementations of the tools'
verification rules on phase's engine; this section runs the tools themselves, built from the
llama.cpp phase links (bench/native_tools.py), beside phase's rejection sampling
(phase.decode.sampled, rule "rejection") at T = 0.3, 0.7, 1.0: the same prompt (decode_bench's
code prompt, raw), models, threads, context, draft length (draft-4, never cut short:
--spec-draft-n-min 0, --spec-draft-p-min 0) and truncation (llama.cpp's defaults, given
explicitly: top-k 40, top-p 0.95, min-p 0.05).

How each side counts, read from the vendored sources:

- llama-speculative (examples/speculative/speculative.cpp, one draft sequence): each round
  the draft proposes its n_max most probable tokens (cur_p->data[0] of the draft's sampler
  chain, not a draw), n_drafted += 1 per drafted token; the target keeps a proposal x when
  r <= p(x)/q(x), n_accept += 1 per kept one; on a rejection it draws from
  max(0, p - q) over the two id-sorted candidate lists paired by index, which pairs different
  tokens whenever the two truncated candidate sets differ: the rule keeps min(1, p/q) of the
  draft's top token (more than rejection sampling keeps when the draft is flatter than the
  target), and its output is not exactly the target's distribution.
- llama-speculative-simple (examples/speculative-simple, common/speculative.cpp): the draft
  proposes greedily (its own top-k 10 chain, so its top token), n_drafted += the draft's
  length; the target samples each position with its chain and keeps proposals while its draw
  equals them, n_accept += the kept count (common_sampler_sample_and_accept_n).
- phase: the draft's tokens drawn from q, each kept with probability min(1, p/q), on a
  rejection one draw from the normalised residual (Leviathan et al.; Chen et al.); proposed
  and accepted counted per proposal, as the tools do.

Acceptance = accepted / drafted over a repeat's seeds (S runs, seeds r*S .. r*S+S-1 on every
side; the tools take --seed, phase its settings' seed; the random streams differ, so the
seeds make runs repeatable, not paired). The native tools ban end-of-generation tokens
(--ignore-eos) to generate the same number of tokens; phase generates past them. The figure
is the median over >= 3 alternating repeats. Rejection sampling's target is to keep at least
as many proposals as each tool; as above, that is not a theorem against llama-speculative.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import native
from bench.common import Context, Section, alternate, check_at_least, median
from bench.decode_bench import PLAIN_PROMPT, prompt_text
from bench.sampling_bench import MIN_P, TEMPERATURES, TOP_K, TOP_P, K
from phase.analysis.bench_rows import BenchRow
from phase.decode import Engine, cpu_buffers
from phase.decode.sampled import SampledDecoder
from phase.policy.sampling import SamplingSettings

TOOLS = ("llama-speculative", "llama-speculative-simple")
ARMS = ("phase rejection", *TOOLS)


def sampling_flags(ctx: Context, temperature: float, seed: int, extra_buffers: bool
                   ) -> list[str]:
    """What both tools get: the run's shape as phase's, and its sampling settings."""
    return ["-t", str(ctx.threads), "-c", str(ctx.n_ctx), "-n", str(ctx.tokens),
            "--temp", f"{temperature:g}", "--top-k", str(TOP_K), "--top-p", f"{TOP_P:g}",
            "--min-p", f"{MIN_P:g}", "--seed", str(seed), "--ignore-eos", "--no-escape",
            "-ngl", "0", *([] if extra_buffers else ["--no-repack"])]


def tool_command(bin_path: Path, tool: str, ctx: Context, prompt: str, temperature: float,
                 seed: int, extra_buffers: bool) -> list[str]:
    spec = (["--spec-type", "draft-simple"] if tool == "llama-speculative-simple" else [])
    return [str(bin_path / tool), "-m", str(ctx.target_path), "-md", str(ctx.draft_path),
            *spec, "--spec-draft-n-max", str(K), "--spec-draft-n-min", "0",
            "--spec-draft-p-min", "0", "--spec-draft-ngl", "0", "-p", prompt,
            *sampling_flags(ctx, temperature, seed, extra_buffers)]


def run_tool(cmd: list[str]) -> dict[str, int]:
    """One run's n_drafted and n_accept, as the tool prints them last."""
    tool = Path(cmd[0]).name
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=native.TIMEOUT_S,
                              errors="replace", stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise native.NativeError(f"{tool} ran past {native.TIMEOUT_S:.0f} s") from None
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-10:])
        raise native.NativeError(f"{tool} exited with {proc.returncode}:\n{tail}")
    drafted = native._number(r"n_drafted\s+=\s+(\d+)", proc.stderr, "n_drafted", tool)
    accepted = native._number(r"n_accept\s+=\s+(\d+)", proc.stderr, "n_accept", tool)
    return {"drafted": int(drafted), "accepted": int(accepted)}


def _summed(counts: list[dict[str, int]], first: int, seeds: int) -> dict[str, Any]:
    drafted = sum(c["drafted"] for c in counts)
    accepted = sum(c["accepted"] for c in counts)
    return {"acceptance": accepted / drafted if drafted else None, "proposed": drafted,
            "accepted": accepted, "seeds": [first, seeds]}


def _arms(ctx: Context, bin_path: Path, decoder: SampledDecoder, text: str,
          temperature: float, seeds: int, extra_buffers: bool
          ) -> dict[str, Callable[[], dict[str, Any]]]:
    settings = SamplingSettings(temperature, TOP_K, TOP_P, MIN_P)
    calls = dict.fromkeys(ARMS, 0)

    def first_seed(arm: str) -> int:
        calls[arm] += 1
        return (calls[arm] - 1) * seeds  # repeat r: seeds r*S .. r*S+S-1 on every side

    def phase_arm() -> dict[str, Any]:
        first = first_seed("phase rejection")
        runs = [decoder.draft_k(ctx.tokens, K, settings.with_seed(s), "rejection")
                for s in range(first, first + seeds)]
        return _summed([{"drafted": r.proposed, "accepted": r.accepted} for r in runs],
                       first, seeds)

    def tool_arm(tool: str) -> Callable[[], dict[str, Any]]:
        def arm() -> dict[str, Any]:
            first = first_seed(tool)
            return _summed([run_tool(tool_command(bin_path, tool, ctx, text, temperature, s,
                                                  extra_buffers))
                            for s in range(first, first + seeds)], first, seeds)
        return arm

    return {"phase rejection": phase_arm, **{t: tool_arm(t) for t in TOOLS}}


def run(ctx: Context) -> Section:
    section = Section("sampling-native")
    if ctx.tools_bin is None:
        section.skipped = f"no native tools: {ctx.tools_problem}"
        return section
    seeds = 2 if ctx.quick else 4
    extra_buffers = cpu_buffers.for_this_build(ctx.target_path).enabled
    text = prompt_text(PLAIN_PROMPT)
    section.info = {
        "target": ctx.target_name, "draft": ctx.draft_name, "prompt": PLAIN_PROMPT,
        "chat_template": False, "k": K, "tokens_per_run": ctx.tokens,
        "seeds_per_repeat": seeds, "tools": list(TOOLS), "tools_bin": str(ctx.tools_bin),
        "truncation": {"top_k": TOP_K, "top_p": TOP_P, "min_p": MIN_P},
        "temperatures": list(TEMPERATURES), "native_ignore_eos": True,
        "counts": "accepted / drafted per repeat (the tools' n_accept / n_drafted)",
    }
    with Engine(ctx.target_path, ctx.draft_path, n_ctx=ctx.n_ctx,
                n_threads=ctx.threads) as engine:
        prompt = engine.format_prompt(text, chat_template=False)
        decoder = SampledDecoder(engine.target, engine.draft, prompt)
        for temperature in TEMPERATURES:
            arms = _arms(ctx, ctx.tools_bin, decoder, text, temperature, seeds, extra_buffers)
            section.rows.extend(_rows(temperature, alternate(ctx.repeats, arms, ctx.log)))
    return section


def _rows(temperature: float, runs: dict[str, list[dict[str, Any]]]) -> list[BenchRow]:
    acc = {arm: [r["acceptance"] for r in runs[arm] if r["acceptance"] is not None]
           for arm in ARMS}
    ours = median(acc["phase rejection"])
    rows = []
    for tool in TOOLS:
        theirs = median(acc[tool])
        both = ours is not None and theirs is not None
        rows.append(BenchRow(
            "sampling-native", f"T={temperature:g}: rejection sampling vs {tool}", ours,
            theirs, f"{tool} (binary)",
            # Acceptance rows carry a difference in points (bench/report.py), not a ratio.
            "fraction", ours - theirs if both else None, ">= the tool's",
            check_at_least(ours, theirs) if both else None,
            f"kept {_pct(ours)} of draft-{K}'s proposals vs {_pct(theirs)}",
            {"phase": acc["phase rejection"], tool: acc[tool]},
            breakdown={f"{arm} {key}": [r[key] for r in runs[arm]]
                       for arm in ("phase rejection", tool) for key in ("proposed", "accepted")},
        ))
    return rows


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"
