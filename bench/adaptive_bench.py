"""How many extra runs adaptive repeats take on this host to pin every ratio to plain within
±5% (95% interval): a real, short campaign through phase.campaign, as `phase measure` runs it.

Two prompts (code, prose), plain against draft-4 and ngram, three planned repeats, then
adaptive rounds with a generous budget (three times the planned runs, a time cap) so the
figure says what the target costs here rather than where a budget cut it off. Energy counts
where this machine has a sensor phase reads (as in a campaign). No target to pass: the row
records the extra runs spent, the rounds, how many ratios reached ±5%, and each ratio's
interval half-width after the planned repeats and at the end.

    .venv/bin/python -m bench.run --only adaptive            # the default models, 128 tokens
    .venv/bin/python -m bench.run --only adaptive --quick    # the test model: a smoke run
                                                             # (budget 1x, no re-runs)
"""

from __future__ import annotations

from dataclasses import replace

from bench.common import Context, Section
from phase.analysis import primary_sensors
from phase.analysis.bench_rows import BenchRow
from phase.analysis.intervals import TARGET_HALF_WIDTH
from phase.campaign import DEFAULT_PLAN, QuietObserver, load_experiment, prepare
from phase.campaign.runner import Destination
from phase.campaign.sensing import SensorOptions, discover_sensors
from phase.results import RatioInterval, Run

PROMPTS = ("code", "prose")
STRATEGIES = ("plain", "draft-4", "ngram")
REPEATS = 3
BUDGET_FACTOR = 3  # extra runs allowed, in planned campaigns


class _Log(QuietObserver):
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def message(self, text: str) -> None:
        self.ctx.log(text)

    def run_finished(self, index: int, run: Run) -> None:
        self.ctx.log(f"{run.id}: {run.tokens_per_s:.1f} tok/s")


def _hw(interval: RatioInterval | None) -> float | None:
    return interval.half_width if interval is not None else None


def run(ctx: Context) -> Section:
    section = Section("adaptive")
    planned = len(PROMPTS) * len(STRATEGIES) * REPEATS
    plan = replace(
        DEFAULT_PLAN, target=str(ctx.target_path), draft=str(ctx.draft_path), prompts=PROMPTS,
        strategies=STRATEGIES, tokens=ctx.tokens, repeats=REPEATS, threads=ctx.threads,
        threads_batch=ctx.threads, n_ctx=ctx.n_ctx, profile=False,
        cooldown_s=0.2 if ctx.quick else 1.0, idle_window_s=0.2 if ctx.quick else 1.0,
        target_half_width=TARGET_HALF_WIDTH,
        extra_runs=(1 if ctx.quick else BUDGET_FACTOR) * planned,
        extra_time_s=300.0 if ctx.quick else 1800.0,
        # --quick is a smoke run of the machinery, as `phase measure --quick` is: record the
        # foreign load but re-run nothing, so a busy machine does not triple its runs.
        disturbed_load=None if ctx.quick else DEFAULT_PLAN.disturbed_load,
    )
    out = ctx.workdir / "adaptive-bench.json"
    found = discover_sensors(SensorOptions())
    with prepare(load_experiment("speculative"), plan, Destination(out), found,
                 _Log(ctx)) as campaign:
        results = campaign.run()
    rec = results.adaptive
    assert rec is not None  # an adaptive plan always records its rounds
    reached = sum(1 for c in rec.conditions if c.reached)
    section.info = {
        "target": ctx.target_name, "draft": ctx.draft_name, "tokens": ctx.tokens,
        "threads": ctx.threads, "prompts": list(PROMPTS), "strategies": list(STRATEGIES),
        "planned_runs": planned, "target_half_width": TARGET_HALF_WIDTH,
        "budget_runs": results.config.extra_budget_runs,
        "budget_s": results.config.extra_budget_s,
        "energy": bool(primary_sensors(results)),
        "rounds": [r.model_dump() for r in rec.rounds],
        "stopped": rec.stopped, "stop_reason": rec.stop_reason,
        "conditions": [c.model_dump() for c in rec.conditions],
    }
    widths = ", ".join(
        f"{c.prompt}/{c.strategy} {_pct(_hw(c.speed_before))}→{_pct(_hw(c.speed_after))}"
        for c in rec.conditions)
    outcome = ("every ratio reached it" if rec.stopped == "narrow"
               else "NOT reached: the budget ran out")
    section.rows.append(BenchRow(
        "adaptive", f"extra runs until every ratio to plain is within ±{TARGET_HALF_WIDTH:.0%} "
        f"(of {planned} planned)",
        rec.runs_spent, planned, "planned runs", "runs",
        rec.runs_spent / planned, None, None,
        f"{outcome}; {len(rec.rounds)} round(s), {rec.seconds_spent:.0f} s; {reached} of "
        f"{len(rec.conditions)} ratios within ±{TARGET_HALF_WIDTH:.0%}; stopped: "
        f"{rec.stopped} ({rec.stop_reason}); speed half-width before→after: {widths}",
        samples={},
    ))
    return section


def _pct(value: float | None) -> str:
    return "?" if value is None else f"±{value:.0%}"
