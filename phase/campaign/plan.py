"""A campaign plan: what is measured and how, with every default in one place.

`DEFAULT_PLAN` holds the defaults. An experiment declares its plan by `replace()`-ing them
(`experiments/speculative.py`), its quick smoke campaign by `replace()`-ing its plan, and the
command line's options are applied the same way; `dataclasses.replace` refuses a field that
does not exist, so a misspelt setting is an error, never silently ignored. The engine, the
sampler and `phase generate` take no defaults of their own for what is set here.

Where a campaign writes and which sensors it reads are not part of the plan: see
`runner.Destination` and `sensing.SensorOptions`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from phase.analysis.intervals import METHOD as INTERVAL_METHOD
from phase.campaign.factors import Factor
from phase.campaign.serving_plan import serving_config
from phase.costmodel import Objective
from phase.models.sources import DEFAULT_DRAFT, DEFAULT_TARGET
from phase.policy.strategies import NGRAM_ADAPTIVE, NGRAM_K, NGRAM_N_MAX, NGRAM_N_MIN
from phase.results import CampaignConfig, Confirms, PromptSpec, SamplingConfig, WorkloadRecord
from phase.results.base import NonNegFloat, NonNegInt, PosInt
from phase.results.config import SEED_RULE

Purpose = Literal["study", "smoke"]
# The ranges `phase.campaign.plan_check` holds every plan to (pydantic reads them from these
# annotations), so a bad setting is refused naming its field before anything is written.
Names = Annotated[tuple[str, ...], Field(min_length=1)]
Spec = Annotated[str, Field(min_length=1)]
# Prompt names may be none: every prompt of the experiment's directory (or of its workload).
PromptNames = tuple[Spec, ...]
PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]


@dataclass(frozen=True)
class CampaignPlan:
    """Every setting a campaign records in its results file's `config` (plus the models and
    thread counts, which it records under `models` and `provenance`)."""

    # Models: an embedded name, a .gguf path or hf:OWNER/REPO/FILE; the draft only matters for
    # draft-k strategies.
    target: Spec = DEFAULT_TARGET
    draft: Spec | None = DEFAULT_DRAFT
    # Prompt names: files <name>.txt in the experiment's prompts directory, or, with a
    # workload (phase.workloads: an embedded name or a .jsonl path), ids of its prompts, which
    # then replace the experiment's (`phase measure --workload` names all of them).
    prompts: PromptNames = ()
    workload: Spec | None = None
    strategies: Names = ("plain", "draft-2", "draft-4", "draft-8", "draft-16", "ngram",
                                   "auto")
    # Tokens generated per run (exactly; end-of-sequence is ignored) and repeats per condition.
    tokens: PosInt = 384
    repeats: PosInt = 3
    # The order is reshuffled for every repeat from this seed (greedy decoding draws nothing).
    seed: int = 0
    shuffle: bool = True
    # An extra factor's name: each repeat runs one of its levels' conditions back to back,
    # the levels in a shuffled order (phase.results.schedule); None: each repeat shuffled
    # whole. The serving study blocks by concurrency, so the runs a ratio to plain pairs are
    # minutes apart, not a repeat's length.
    blocked_by: Spec | None = None
    n_ctx: PosInt = 4096
    # None: the physical cores this process may use (llama-bench's default).
    threads: PosInt | None = None
    threads_batch: PosInt | None = None
    # Seconds of rest before each run, then seconds of idle sampling just before it.
    cooldown_s: NonNegFloat = 2.0
    idle_window_s: NonNegFloat = 1.0
    sample_hz: PosFloat = 20.0
    chat_template: bool = True
    ngram_n_min: PosInt = NGRAM_N_MIN
    ngram_n_max: PosInt = NGRAM_N_MAX
    ngram_k: PosInt = NGRAM_K
    ngram_adaptive: bool = NGRAM_ADAPTIVE
    # The cost profile measured before the runs (phase.campaign.profiling): `auto` decides
    # with it and the notes predict every strategy from it. Blocks per pass size, and the
    # shortest block in seconds (longer where an energy sensor updates slowly).
    profile: bool = True
    profile_blocks: PosInt = 3
    profile_min_block_s: NonNegFloat = 0.05
    # What `auto` minimises per generated token: "time" or "energy" (needs a sensor).
    auto_objective: Objective = "time"
    # Disturbance (phase.campaign.disturbance, phase.analysis.slowdown): a run is disturbed
    # when other work used at least `disturbed_load` of our cores' capacity, or when it
    # decoded slower than `slow_vs_profile` of the speed its cost profile predicts or
    # `slow_vs_condition` of its condition's earlier runs' median (a spinning thread pool can
    # lose a third of its speed to a few percent of foreign load, so load alone misses it).
    # Disturbed: kept, left out of summaries, and its slot re-run at the end of its repeat,
    # at most `max_reruns` times (0: marked and left out, never re-run). The same load
    # threshold and condition floor judge each block of the cost profile (a disturbed block
    # is repeated and left out of the profile's medians). None for disturbed_load: record the
    # load, judge nothing (the slowdown floors included); None for a floor: no such test.
    # Calibration: `.venv/bin/python -m bench.run --only disturbance` (bench/disturbance_bench
    # .py) measures a fixed decode's slowdown against a CPU hog at 5-100% duty cycle of one
    # core. Its record for x86_64-2c, bench/results/2026-12-05-vm-2.json (Xeon, 2 threads, the
    # 1.5B target, 5 alternating repeats), read as foreign load -> median speed of quiet:
    # 2.9% -> 0.95x, 5.0% -> 0.91x, 9.8% -> 0.76x, 16% -> 0.64x, 45% -> 0.12x (quiet: 0.3%).
    # So `disturbed_load` 0.05: load from there on costs about a tenth of the speed or more,
    # where the old 0.25 let a run at 16% load and 0.64x through. The speed floor is not the
    # bench's quiet spread (5 quiet repeats within 1.3%, too few to be a floor): the 117
    # runs of the committed x86_64-2c memory-bound and sampling campaigns at under 3% foreign
    # load ran at 0.80x-1.2x of their condition's median (the lowest 0.799x, a sampled
    # draft-4 run whose acceptance varies by seed), so `slow_vs_condition` stays 0.80x, and
    # the target passes of the 207 runs with a profile ran at 0.75x-1.32x of its price, so
    # `slow_vs_profile` 0.6x leaves room for a host's drift after profiling and still
    # catches a half-speed run in a first repeat.
    # `slow_vs_prefill`, serving runs only: a prefill is the same target passes over the same
    # prompts in every run, so its quiet spread is narrow, and the floor is the speed the
    # load threshold stands for (about 0.91x at 5% load in the calibration above). In
    # results/serving-x86_64-2c-2026-12-06-2.json the runs' prefill speed against the
    # median of the earlier ones was 0.96x-1.11x outside one slow stretch, where three runs
    # read 0.84x, 0.87x and 0.96x (bench/results/notes-from-docstrings.md).
    # `quiet_check_s`: seconds of sampling before the runs, warning with the busiest
    # processes when the machine is already busy (0: no check).
    disturbed_load: NonNegFloat | None = 0.05
    slow_vs_profile: NonNegFloat | None = 0.6
    slow_vs_condition: NonNegFloat | None = 0.8
    slow_vs_prefill: NonNegFloat | None = 0.9
    max_reruns: NonNegInt = 2
    # Extra blocks a profile pass may run in place of disturbed ones, per pass size.
    profile_max_retries: NonNegInt = 4
    quiet_check_s: NonNegFloat = 2.0
    # Adaptive repeats (phase.analysis.adaptive): None keeps the fixed design (`repeats`, no
    # more). Otherwise, after the planned repeats, every condition whose ratio to plain (speed,
    # and chip energy where measured) has a 95% interval wider than ±target_half_width gets
    # another round (with plain for its prompt, shuffled), until all are narrow enough or the
    # next round does not fit in the budget: `extra_runs` runs past the planned ones (None:
    # as many as the plan has, so at most twice its runs) and `extra_time_s` seconds of them
    # (None: no time limit). Every round and what it bought is recorded in the file.
    target_half_width: Fraction | None = None
    extra_runs: NonNegInt | None = None
    extra_time_s: NonNegFloat | None = None
    # "smoke" for a quick check of the machinery (`--quick`): recorded, and never published.
    purpose: Purpose = "study"
    # Energy windows sized to the primary energy sensor (phase.campaign.windows): a decode
    # shorter than the shortest window its counter-edges and sensor-lag rules pass repeats
    # back-to-back inside one window until it is long enough, at most `max_passes` passes
    # (a fast counter such as RAPL's needs no repeat; NVML's 100 ms one about 3 s).
    size_windows: bool = True
    max_passes: PosInt = 64
    # Extra factors (phase.campaign.factors): the experiment's declaration (Experiment.factors)
    # copied here, so every plan (quick, resumed, command-line) runs the same conditions.
    factors: tuple[Factor, ...] = ()
    # A memory study (phase.campaign.bandwidth_record): after the runs, measure this machine's
    # memory bandwidth (phase.bandwidth, copy and triad) at each threads level (else the
    # plan's threads), `bandwidth_repeats` timed passes each, and record with each model the
    # inputs of its bytes-per-token estimate. Off: the file holds neither. Array bytes: None
    # is STREAM's rule (4x the last-level cache); a smoke test may give less.
    measure_bandwidth: bool = False
    bandwidth_repeats: PosInt = 5
    bandwidth_array_bytes: PosInt | None = None
    # Sampling (a `temperature` factor's levels above 0): llama.cpp's truncation, 0 / 1 / 0
    # for off (its own defaults are top-k 40, top-p 0.95, min-p 0.05); recorded in
    # config.sampling with the seed rule only where the plan has a temperature factor.
    sample_top_k: NonNegInt = 0
    sample_top_p: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 1.0
    sample_min_p: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.0
    # A confirmation campaign (phase.campaign.confirm): the selection it measures again,
    # recorded as ResultsFile.confirms.
    confirms: Confirms | None = None
    # A serving study (a `concurrency` factor, phase.campaign.serving_plan): each run serves
    # `serving_requests` requests drawn in a seeded order from the prompts, `concurrency` at
    # a time; runs name the set by `serving_pool` (None: the workload's name and how many
    # prompts, `humaneval-16`). `serving_steady_b` caps B of the steady-state window
    # (B = min(it, the run's concurrency)); None: the largest concurrency, so every run's B
    # is its own concurrency, as ML.ENERGY sets it.
    serving_requests: PosInt = 20
    # None: a closed loop. Requests per second: an open loop, requests arriving as a seeded
    # Poisson process at this rate and at most the run's concurrency level served at once.
    serving_request_rate: PosFloat | None = None
    serving_pool: Spec | None = None
    serving_steady_b: PosInt | None = None
    # The latency target goodput counts against (seconds; a request meets it when every
    # bound given holds); all None: no target, and no goodput.
    serving_ttft_s: PosFloat | None = None
    serving_tpot_s: PosFloat | None = None
    serving_e2e_s: PosFloat | None = None


DEFAULT_PLAN = CampaignPlan()


def planned_runs(plan: CampaignPlan, prompts: int | None = None) -> int:
    """Runs of the fixed design: every condition (prompt x strategy x extra levels),
    `repeats` times."""
    count = len(plan.prompts) if prompts is None else prompts
    if any(f.kind == "concurrency" for f in plan.factors):
        count = 1  # a serving run serves the whole pool: one per strategy and levels
    levels = 1
    for factor in plan.factors:
        levels *= len(factor.levels)
    return count * len(plan.strategies) * levels * plan.repeats


def extra_budget_runs(plan: CampaignPlan, prompts: int | None = None) -> int | None:
    """The adaptive rounds' run budget: `extra_runs`, else as many as the plan's runs."""
    if plan.target_half_width is None:
        return None
    return plan.extra_runs if plan.extra_runs is not None else planned_runs(plan, prompts)


def campaign_config(plan: CampaignPlan, prompts: list[PromptSpec],
                    workload: WorkloadRecord | None = None) -> CampaignConfig:
    """The plan as the results file records it (with the workload its prompts came from)."""
    adaptive = plan.target_half_width is not None
    judged = plan.disturbed_load is not None
    serving = serving_config(plan, prompts, workload)
    return CampaignConfig(
        tokens=plan.tokens,
        repeats=plan.repeats,
        seed=plan.seed,
        shuffle=plan.shuffle,
        strategies=list(plan.strategies),
        prompts=prompts,
        n_ctx=plan.n_ctx,
        cooldown_s=plan.cooldown_s,
        idle_window_s=plan.idle_window_s,
        sample_hz=plan.sample_hz,
        chat_template=plan.chat_template,
        ngram_n_min=plan.ngram_n_min,
        ngram_n_max=plan.ngram_n_max,
        ngram_k=plan.ngram_k,
        ngram_adaptive=plan.ngram_adaptive,
        auto_objective=plan.auto_objective,
        purpose=plan.purpose,
        disturbed_load=plan.disturbed_load,
        max_reruns=plan.max_reruns if judged else None,
        slow_vs_profile=plan.slow_vs_profile if judged else None,
        slow_vs_condition=plan.slow_vs_condition if judged else None,
        slow_vs_prefill=plan.slow_vs_prefill if judged and serving is not None else None,
        # window_min_s is set when the runs start, from the sensors' measured update periods.
        window_min_s=None,
        window_min_reason="not sized yet: set from the sensors when the runs start",
        max_passes=plan.max_passes if plan.size_windows else None,
        target_half_width=plan.target_half_width,
        extra_budget_runs=extra_budget_runs(plan, len(prompts)),
        extra_budget_s=plan.extra_time_s if adaptive else None,
        interval_method=INTERVAL_METHOD if adaptive else None,
        factors=[f.spec() for f in plan.factors],
        blocked_by=plan.blocked_by,
        sampling=sampling_config(plan),
        workload=workload,
        serving=serving,
    )


def sampling_config(plan: CampaignPlan) -> SamplingConfig | None:
    """What the file records of the sampling settings: only with a temperature factor."""
    if not any(f.kind == "temperature" for f in plan.factors):
        return None
    return SamplingConfig(top_k=plan.sample_top_k, top_p=plan.sample_top_p,
                          min_p=plan.sample_min_p, seed_rule=SEED_RULE)  # type: ignore[arg-type]  # pydantic checks the numbers' ranges
