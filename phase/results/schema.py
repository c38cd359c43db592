"""The results schema: what `phase measure` writes and everything downstream reads.

One file per campaign. Raw files (`results/<id>.json`) are written run by run while a
campaign is in progress and never touched again once `status` is `complete`. Summary files
hold per-condition figures: `phase build` derives them in memory from raw files, and a
summary transcribed from a published source is committed under `results/` and marked
`summary_only`.

Conventions: units live in field names (`_s`, `_j`, `_w`, `_bytes`); floats reject NaN and
infinity; a measurement that could not be taken is `null` next to a `*_reason` string saying
why, never 0.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, model_validator

from phase.results.adaptive import AdaptiveCondition, AdaptiveRecord
from phase.results.base import (
    FiniteFloat,
    Fraction,
    NonNegFloat,
    NonNegInt,
    PosInt,
    Scope,
    SensorKind,
    Sha256,
    Strict,
)
from phase.results.base import paired as _paired
from phase.results.config import CampaignConfig, Level
from phase.results.confirmation import Confirms
from phase.results.costs import CostProfile
from phase.results.covers import PrimaryEnergy
from phase.results.duration import StatedDuration
from phase.results.hosts import HostInfo, MergedShard, ShardInfo
from phase.results.memory import BandwidthMeasurement, BytesEstimate, VariantInfo
from phase.results.provenance import Provenance
from phase.results.serving import ServingRun
from phase.results.verification import Verification

# --- identity and provenance -------------------------------------------------------------


class ModelInfo(Strict):
    role: Literal["target", "draft"]
    name: str
    source: str
    path: str
    size_bytes: PosInt
    sha256: Sha256
    architecture: str | None
    quant: str | None
    n_vocab: PosInt
    # Whether this is one of phase's embedded test models (by sha256): a campaign on one is
    # a check of the machinery, not a study; None in files before version 6.
    test_model: bool | None = None
    # Version 10: the model factor's level label of this target (unwritten for the plan's).
    level: str | None = Field(default=None, exclude_if=lambda v: v is None)
    # Version 11: how a derived variant was made (phase.decode.variants), and what a generated
    # token reads of this model (phase.costmodel.bytes_per_token), where recorded.
    variant: VariantInfo | None = Field(default=None, exclude_if=lambda v: v is None)
    bytes_per_token: BytesEstimate | None = Field(default=None, exclude_if=lambda v: v is None)


class SensorInfo(Strict):
    name: str
    backend: str
    scope: Scope
    kind: SensorKind
    unit: Literal["J", "W"]
    smoothing_s: NonNegFloat
    max_power_w: NonNegFloat | None
    update_period_s: NonNegFloat | None
    update_period_reason: str | None = None
    # Names of the other sensors in this file whose energy this sensor's reading physically
    # includes (psys encloses the packages; a module input encloses its rails; a wall meter
    # encloses everything). None: not declared (older files); [] declares "encloses nothing".
    encloses: list[str] | None = None
    # Names of this record's fields whose value was assumed rather than read from the device
    # (e.g. "smoothing_s" from the GPU architecture, "max_power_w" from a power limit).
    assumed: list[str] = Field(default_factory=list)
    # The physical device this sensor reads, where it has a stable identity (a GPU's UUID),
    # so that a resumed campaign cannot silently read another device under the same name.
    device: str | None = None
    # A counter's wrap range, in J, as the device declares it (RAPL's max_energy_range_uj):
    # the validator corrects a wrap by exactly this. None: not declared, or never wraps.
    wrap_j: Annotated[float, Field(gt=0)] | None = None

    @model_validator(mode="after")
    def _check(self) -> SensorInfo:
        _paired(self.update_period_s, self.update_period_reason, "update_period")
        expected = "J" if self.kind == "counter" else "W"
        if self.unit != expected:
            raise ValueError(f"a {self.kind} sensor reports in {expected}, not {self.unit}")
        return self


class UnavailableBackend(Strict):
    backend: str
    reason: str


# --- per run -------------------------------------------------------------------------------


class Step(Strict):
    """One target forward pass in decode: tokens proposed to it, how many it kept, and the
    wall time spent proposing (draft model or n-gram lookup) and verifying (target pass).

    `auto` also records its decision (None for the fixed strategies): the proposer it chose
    (none, ngram or draft; `proposed` is the k it chose), the tokens it expected the step to
    yield, and `expected_gain`, the expected tokens per unit cost of that choice over a plain
    step's; `match_tokens` is the n-gram lookup's matched context length (0: no match)."""

    proposed: NonNegInt
    accepted: NonNegInt
    propose_ms: NonNegFloat
    verify_ms: NonNegFloat
    proposer: Literal["none", "ngram", "draft"] | None = None
    expected_tokens: NonNegFloat | None = None
    expected_gain: NonNegFloat | None = None
    match_tokens: NonNegInt | None = None

    @model_validator(mode="after")
    def _check(self) -> Step:
        if self.accepted > self.proposed:
            raise ValueError(f"accepted ({self.accepted}) exceeds proposed ({self.proposed})")
        return self


class SensorWindow(Strict):
    """One sensor over one run's decode window (and the idle window just before it)."""

    sensor: str
    start_unix_s: FiniteFloat
    end_unix_s: FiniteFloat
    energy_j: FiniteFloat | None
    energy_reason: str | None = None
    mean_power_w: FiniteFloat | None
    idle_power_w: FiniteFloat | None
    idle_power_reason: str | None = None
    samples: NonNegInt
    gaps: NonNegInt
    # A counter that updates every p seconds is only known at its updates: the most energy_j
    # can be off by because of where the window's edges fell between updates (None: not
    # computed, as in older files). The counter-edges rule rejects windows where it is large.
    edge_error_j: NonNegFloat | None = None

    @model_validator(mode="after")
    def _check(self) -> SensorWindow:
        _paired(self.energy_j, self.energy_reason, "energy")
        _paired(self.idle_power_w, self.idle_power_reason, "idle_power")
        if self.end_unix_s < self.start_unix_s:
            raise ValueError("window ends before it starts")
        return self


class SensorTrace(Strict):
    """Raw timestamped samples; `t_s` is seconds since the run's idle window began, `values`
    are in the sensor's declared unit (J for a counter, W for a power reading)."""

    sensor: str
    t_s: list[FiniteFloat]
    values: list[FiniteFloat]

    @model_validator(mode="after")
    def _check(self) -> SensorTrace:
        if len(self.t_s) != len(self.values):
            raise ValueError(
                f"t_s has {len(self.t_s)} entries but values has {len(self.values)}"
            )
        return self


class Pass(Strict):
    """One pass of a run's decode inside its energy window (phase.campaign.windows): the same
    prompt, the generated part of the KV cache cleared, greedy, so the same tokens again."""

    decode_s: NonNegFloat
    tokens: PosInt
    output_sha256: Sha256


class Run(Strict):
    id: str
    repeat: NonNegInt
    order: NonNegInt
    prompt: str
    strategy: str
    k: PosInt | None
    started_unix_s: FiniteFloat
    ended_unix_s: FiniteFloat
    prompt_tokens: PosInt
    prefill_s: NonNegFloat
    decode_s: NonNegFloat
    tokens: PosInt
    tokens_per_s: NonNegFloat
    steps: NonNegInt
    drafted: NonNegInt
    accepted: NonNegInt
    acceptance: Fraction | None
    acceptance_reason: str | None = None
    trace: list[Step]
    cpu_s: NonNegFloat
    energy: list[SensorWindow]
    temperatures_c: dict[str, FiniteFloat]
    output_sha256: Sha256
    output_text: str
    token_ids: list[NonNegInt]
    matches_plain: bool | None
    matches_plain_reason: str | None = None
    first_divergence: NonNegInt | None = None
    # Evidence at the first divergence (None where the output matches, or in older files): the
    # gap between the two best logits of the pass that produced this run's token there, and
    # of the plain reference's pass at the same position (its `top2_gaps` entry).
    divergence_gap_verify: NonNegFloat | None = None
    divergence_gap_reference: NonNegFloat | None = None
    samples: list[SensorTrace]
    # The hostname that ran this run (one of ResultsFile.hosts); None in older files.
    host: str | None = None
    # Other work on the cores this run could use, over the run (prefill and decode), as a
    # fraction of their capacity (phase.campaign.disturbance); None with a reason where it is
    # not measured (not Linux, or files before version 7).
    foreign_load: NonNegFloat | None = None
    foreign_load_reason: str | None = None
    # Other work on the NVIDIA GPUs the sensors read, just before decoding (after the idle
    # window, phase.sensors.nvidia.gpu_activity): the largest utilisation among them, 0..1, and the
    # compute processes on them other than this one. None: no NVIDIA GPU, or older files.
    gpu_busy_before: Fraction | None = None
    gpu_other_processes: NonNegInt | None = None
    gpu_activity_reason: str | None = None
    # Foreign load or GPU utilisation at or over config.disturbed_load, or a decode slower than
    # config.slow_vs_profile / slow_vs_condition allow (phase.analysis.slowdown): kept here,
    # left out of every summary, and its slot re-run at the end of its repeat. False in older
    # files.
    disturbed: bool = False
    # The run's speed as judged (schema 12; absent where not judged): predicted over measured
    # decode time by the cost profile, and its tokens/s over the median of its condition's
    # earlier runs (None: no such run yet); why it is disturbed, with the numbers.
    speed_vs_profile: NonNegFloat | None = Field(default=None, exclude_if=lambda v: v is None)
    speed_vs_condition: NonNegFloat | None = Field(default=None,
                                                   exclude_if=lambda v: v is None)
    # A serving run's target prefill speed (prompt tokens per second of its requests'
    # prefill passes) over the median of the campaign's earlier serving runs' on its host,
    # any strategy (absent where not judged: no prefill recorded, no earlier run, older
    # files; optional, no schema version of its own).
    speed_vs_prefill: NonNegFloat | None = Field(default=None, exclude_if=lambda v: v is None)
    disturbed_reason: str | None = Field(default=None, exclude_if=lambda v: v is None)
    # A re-run: the id of the scheduled run whose slot it fills again (its id is that id
    # plus "-rerunN", its order that slot's plus N x the schedule's length).
    rerun_of: str | None = None
    # Every pass of the decode inside the run's energy window, the first being the one the
    # fields above describe (decode_s, tokens, tokens_per_s, trace, cpu_s and the output are
    # the first pass's). A decode shorter than the primary sensor needs repeats back-to-back
    # until the window is long enough (config.window_min_s); the window's energy is then over
    # every pass's tokens (phase.analysis.window_tokens). Empty: one pass (older files).
    passes: list[Pass] = Field(default_factory=list)
    # The run's level of each extra factor (config.factors), in declared order; empty (and
    # not written) where the experiment has none: its condition is prompt x strategy.
    factors: dict[str, Level] = Field(default_factory=dict, exclude_if=lambda v: not v)
    seed: NonNegInt | None = Field(default=None, exclude_if=lambda v: v is None)  # sampled
    # The rule that verified a sampled run's proposals, by name and version (phase.results.
    # verification); absent on greedy and plain runs and where unrecorded (older files).
    verification: Verification | None = Field(default=None, exclude_if=lambda v: v is None)
    # Schema 14: a serving run's load and what it recorded (phase.results.serving); absent on
    # one-request runs.
    serving: ServingRun | None = Field(default=None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _check(self) -> Run:
        _paired(self.acceptance, self.acceptance_reason, "acceptance")
        _paired(self.matches_plain, self.matches_plain_reason, "matches_plain")
        if self.accepted > self.drafted:
            raise ValueError(f"accepted ({self.accepted}) exceeds drafted ({self.drafted})")
        if len(self.token_ids) != self.tokens:
            raise ValueError(f"tokens is {self.tokens} but token_ids has {len(self.token_ids)}")
        if self.disturbed and all(v is None for v in (
                self.foreign_load, self.gpu_busy_before, self.speed_vs_profile,
                self.speed_vs_condition, self.speed_vs_prefill)):
            raise ValueError("disturbed is true, so foreign_load, gpu_busy_before, "
                             "speed_vs_profile, speed_vs_condition or speed_vs_prefill must "
                             "be given")
        if self.matches_plain is False and self.first_divergence is None:
            raise ValueError("matches_plain is false, so first_divergence must be given")
        if self.passes and (self.passes[0].tokens, self.passes[0].decode_s) != (
                self.tokens, self.decode_s):
            raise ValueError("passes[0] must be the run's own decode (its tokens and decode_s)")
        return self


class PlainReference(Strict):
    """Plain decoding of one prompt before the measured runs (also a warm-up): every run's
    `matches_plain` compares with it, wherever the plain runs fell in the shuffled order."""

    prompt: str
    output_sha256: Sha256
    token_ids: list[NonNegInt]
    # Per generated token, the best logit minus the second best of the pass that produced it:
    # how close each greedy choice was to a tie. None in older files.
    top2_gaps: list[NonNegFloat] | None = None
    # The prompt's token ids as the model's tokenizer gave them: the context the n-gram
    # matcher searched before the generated tokens. None in older files.
    prompt_token_ids: list[NonNegInt] | None = None
    # Its levels of the factors that change plain output (phase.results.levels); unwritten empty.
    factors: dict[str, Level] = Field(default_factory=dict, exclude_if=lambda v: not v)


class ResultsFile(Strict):
    schema_version: Literal[17]
    kind: Literal["raw"] = "raw"
    id: str
    experiment: str
    note: str | None
    created: datetime
    status: Literal["running", "complete", "interrupted"]
    provenance: Provenance
    models: list[ModelInfo]
    sensors: list[SensorInfo]
    sensors_unavailable: list[UnavailableBackend]
    config: CampaignConfig
    references: list[PlainReference]
    runs: list[Run]
    # The cost profile measured before the runs (phase.results.costs); None in older files.
    profile: CostProfile | None = None
    # Beyond one machine (phase.campaign.shards, phase.campaign.merge). `campaign_id` is shared
    # by every shard of one campaign (derived from the experiment, the plan, the shard count
    # and the job id); `shard` is set in a shard's file; `hosts` lists every machine that ran
    # runs (one for an unsharded campaign); `merged_from` lists the shard files a merged file
    # was made from. All absent (None / empty) in older files.
    campaign_id: str | None = None
    shard: ShardInfo | None = None
    hosts: list[HostInfo] = Field(default_factory=list)
    merged_from: list[MergedShard] = Field(default_factory=list)
    # None with a reason when no sensor measures the device that ran the model; both None in
    # files written before phase recorded the choice (readers then fall back to ranking the
    # chip-scope sensors, phase.analysis.ranked_chip_sensors).
    primary_energy: PrimaryEnergy | None = None
    primary_energy_reason: str | None = None
    # Adaptive repeats (config.target_half_width set): what the extra rounds did and bought.
    # None for the fixed design and in older files.
    adaptive: AdaptiveRecord | None = None
    # Version 11: the machine's memory bandwidth at each thread level, where the plan asks for
    # it (the plan's measure_bandwidth); never written otherwise.
    bandwidth: list[BandwidthMeasurement] | None = Field(default=None,
                                                         exclude_if=lambda v: v is None)
    # Version 12: a confirmation campaign names the selection it confirms (phase.results.
    # confirmation); never written otherwise.
    confirms: Confirms | None = Field(default=None, exclude_if=lambda v: v is None)
    # Version 15: the time the campaign stated before its runs (phase.results.duration);
    # never written by campaigns before it.
    stated_duration: StatedDuration | None = Field(default=None,
                                                   exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _check(self) -> ResultsFile:
        _levels_in_declared_order(self)
        if self.primary_energy is not None:
            if self.primary_energy_reason:
                raise ValueError("primary_energy is set, so primary_energy_reason must be null")
            declared = {s.name for s in self.sensors}
            unknown = [n for n in self.primary_energy.sensors if n not in declared]
            if unknown:
                raise ValueError(f"primary_energy names undeclared sensor(s): {unknown}")
        return self


def _levels_in_declared_order(results: ResultsFile) -> None:
    """Put every record's levels (runs, references, what a confirmation confirms, adaptive
    conditions) in the order config.factors declares, names it does not declare last: JSON
    objects have no order, so a file re-serialised with sorted keys is the same file, and
    every condition built from the levels (phase.analysis.queries.condition_key) then
    matches the schedule's by name."""
    rank = {f.name: i for i, f in enumerate(results.config.factors)}
    holders: list[PlainReference | Run | Confirms | AdaptiveCondition] = [
        *results.runs, *results.references]
    if results.confirms is not None:
        holders.append(results.confirms)
    if results.adaptive is not None:
        holders += results.adaptive.conditions
    for holder in holders:
        levels = holder.factors
        ordered = dict(sorted(levels.items(), key=lambda kv: rank.get(kv[0], len(rank))))
        if list(ordered) != list(levels):
            # Same keys and values, only their order: no need to validate the record again.
            object.__setattr__(holder, "factors", ordered)


def token_sha256(token_ids: Sequence[int]) -> str:
    """What `output_sha256` holds: sha256 of the token ids written as decimal, comma-joined."""
    return hashlib.sha256(",".join(map(str, token_ids)).encode()).hexdigest()
