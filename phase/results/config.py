"""What a campaign was asked to do (`ResultsFile.config`): its prompts, strategies, lengths,
repeats, order and the proposers' settings, as the plan gave them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from phase.results.base import NonNegFloat, NonNegInt, PosInt, Strict
from phase.results.serving import ServingConfig


class PromptSpec(Strict):
    name: str
    text: str
    source: str | None = None


# A factor's level: a thread count, a token count, a model spec, or an experiment's own value.
Level = str | int | float
FactorKind = Literal["threads", "tokens", "model", "context_fill", "temperature", "concurrency",
                     "custom"]

# How a sampled run's seed follows from the campaign's (phase.results.levels.run_seed).
SEED_RULE = "sha256('<config.seed>/<run id>') first 4 bytes, big-endian, & 0x7fffffff"


class FactorSpec(Strict):
    """An extra factor of the experiment (besides prompt and strategy, which every experiment
    has): its levels in declared order, the label each level has in run ids and pages, and
    how a level applies to a run (phase.campaign.factors)."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    kind: FactorKind
    levels: list[Level] = Field(min_length=1)
    labels: list[str] = Field(min_length=1)


class SamplingConfig(Strict):
    """What a sampled run (a `temperature` factor's level above 0) draws with besides its
    temperature and seed: llama.cpp's truncation (top-k 0, top-p 1, min-p 0: off) and how
    its seed is derived (`seed_rule`; a re-run takes its slot's id), so any run can be
    regenerated from the file (phase.decode.sampling.SamplingSettings)."""

    top_k: NonNegInt
    top_p: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]
    min_p: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)]
    seed_rule: Literal["sha256('<config.seed>/<run id>') first 4 bytes, big-endian, & 0x7fffffff"]


class WorkloadRecord(Strict):
    """Schema 13: the workload (phase.workloads) whose prompts the campaign ran in place of its
    experiment's own: its name, where it came from (a PyPI wheel and member, a file in the
    checkout, a user's path), the sha256 of the file its prompts were read from and how many
    prompts it holds (the campaign may run a selection of them: config.prompts)."""

    name: str = Field(min_length=1)
    source: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    count: PosInt
    path: str | None = Field(default=None, exclude_if=lambda v: v is None)


class CampaignConfig(Strict):
    tokens: PosInt
    repeats: PosInt
    seed: int
    shuffle: bool
    strategies: list[str] = Field(min_length=1)
    prompts: list[PromptSpec] = Field(min_length=1)
    n_ctx: PosInt
    cooldown_s: NonNegFloat
    idle_window_s: NonNegFloat
    sample_hz: NonNegFloat
    chat_template: bool
    ngram_n_min: PosInt
    ngram_n_max: PosInt
    ngram_k: PosInt
    # Whether a bare "ngram" adapts its proposal length (up to ngram_k) to its outcomes
    # (phase.decode.ngram_length); false in files from before version 4, where it proposed
    # up to ngram_k every step.
    ngram_adaptive: bool = False
    # What `auto` maximises per step: expected tokens per ms ("time") or per joule
    # ("energy"); None in files from before `auto` existed.
    auto_objective: Literal["time", "energy"] | None = None
    # What the campaign is for: "study" (its figures answer a note's question) or "smoke" (a
    # quick check that the machinery works, never published); None in files before version 6.
    purpose: Literal["study", "smoke"] | None = None
    # A run whose foreign load (Run.foreign_load) reaches `disturbed_load` is disturbed and
    # its slot re-run, at most `max_reruns` times; None: not judged (files before version 7,
    # or a plan that only records the load).
    disturbed_load: NonNegFloat | None = None
    max_reruns: NonNegInt | None = None
    # A run is also disturbed when it decoded slower than these fractions of the speed its
    # cost profile predicts, or of its condition's earlier runs' median (schema 12,
    # phase.analysis.slowdown); None: not judged that way (older files, or not asked).
    slow_vs_profile: NonNegFloat | None = Field(default=None, exclude_if=lambda v: v is None)
    slow_vs_condition: NonNegFloat | None = Field(default=None, exclude_if=lambda v: v is None)
    # A serving run is also disturbed when its target prefill ran slower than this fraction
    # of the campaign's earlier serving runs' median (phase.analysis.slowdown); None: not
    # judged that way (older files, one-request campaigns).
    slow_vs_prefill: NonNegFloat | None = Field(default=None, exclude_if=lambda v: v is None)
    # Energy windows sized to the primary sensor (phase.campaign.windows): the shortest window
    # that passes the counter-edges and sensor-lag rules for its measured update period and
    # smoothing; a shorter decode repeats back-to-back (Run.passes) until the window is this
    # long, at most `max_passes` passes. The reason says how it was sized (each rule's
    # shortest window for each primary sensor), or why not (None: no primary energy sensor,
    # sizing turned off; both None in files before version 8).
    window_min_s: NonNegFloat | None = None
    window_min_reason: str | None = None
    max_passes: PosInt | None = None
    # Adaptive repeats (phase.analysis.adaptive): after the planned `repeats`, a condition
    # whose ratio to plain (speed; chip energy where measured) has a 95% interval wider than
    # ±target_half_width gets more rounds, until narrow enough or the budget is spent: at
    # most `extra_budget_runs` runs and `extra_budget_s` seconds of runs past the planned
    # ones. target_half_width None: the fixed design (files before version 8).
    target_half_width: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] | None = None
    extra_budget_runs: NonNegInt | None = None
    extra_budget_s: NonNegFloat | None = None
    # Schema 12: the interval method the adaptive rounds decided by ("t-log": a Student t
    # interval on the log of paired per-round ratios, phase.analysis.intervals). Absent, in
    # files before 12 and in fixed designs: the percentile bootstrap of phase before it
    # (phase.analysis.intervals_legacy), so those files' decisions replay as they were made.
    interval_method: Literal["t-log"] | None = Field(default=None,
                                                     exclude_if=lambda v: v is None)
    # Extra factors (schema 10): every condition is a prompt x strategy x one level of each;
    # absent (never written when empty): prompt x strategy only, as in every earlier file.
    factors: list[FactorSpec] = Field(default_factory=list, exclude_if=lambda v: not v)
    # Sampling (schema 11): with a `temperature` factor, the settings its sampled runs share;
    # absent (never written) where every run is greedy.
    sampling: SamplingConfig | None = Field(default=None, exclude_if=lambda v: v is None)
    # Schema 13: the workload the prompts came from; absent (never written): the experiment's
    # own prompt files.
    workload: WorkloadRecord | None = Field(default=None, exclude_if=lambda v: v is None)
    # Schema 14: with a `concurrency` factor, how each serving run loads the decoder
    # (phase.results.serving); absent (never written): every run is one request.
    serving: ServingConfig | None = Field(default=None, exclude_if=lambda v: v is None)
    # Schema 16: the extra factor whose levels the order keeps together (phase.results.
    # schedule): each repeat runs one level's conditions back to back, the levels in a
    # shuffled order; absent (never written): each repeat shuffled whole.
    blocked_by: str | None = Field(default=None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _blocks_name_a_factor(self) -> CampaignConfig:
        if self.blocked_by is not None and self.blocked_by not in {f.name for f in self.factors}:
            names = ", ".join(repr(f.name) for f in self.factors) or "none declared"
            raise ValueError(f"blocked_by {self.blocked_by!r} is not one of the campaign's "
                             f"factors ({names})")
        return self
