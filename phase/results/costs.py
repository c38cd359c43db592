"""The measured cost profile a campaign records before its runs (`ResultsFile.profile`).

What one forward pass costs on this host: the target's pass of b tokens (b = 1..17: one plain
step, or a verification of b - 1 proposals), the draft model's pass of b tokens (one drafted
token, or a catch-up batch), and one n-gram lookup. Each pass is timed computing the logits
rows the decoding loop asks of it (`PassCost.logits`). A row's logits are a product with the
whole output layer (vocabulary x width: a quarter of qwen2.5-coder-0.5b's weights), so a small
model's pass with every row's logits costs markedly more than one with none, as its mirror
pass runs; a profile that timed rows the loop does not compute would price the draft's
proposing dear (one host's figures: bench/results/notes-from-docstrings.md). A pass's cost
depends on how full the KV cache is (attention reads every cached position), so each figure
belongs to a profile point: a KV fill, chosen as the middle of a run of one of the campaign's
prompts (its prompt tokens plus half the generated tokens), where a run's mean step cost falls
when cost grows linearly with position.

Each cost is the median over `blocks` timed blocks of back-to-back passes (a block runs at
least `min_block_s` seconds), with the blocks kept and their spread. Energy per pass comes
from the same blocks where a sensor reads: energy over a block divided by its passes, per
sensor; with no sensor, `energy_reason` says why.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from phase.results.base import NonNegFloat, PosInt, Strict, paired

NonNegFloatList = list[NonNegFloat]


class PassCost(Strict):
    """One forward pass of `tokens` tokens (b) at its profile point's KV fill."""

    tokens: PosInt
    # Logits rows each timed pass computed, as the decoding loop asks for them: a target
    # pass all b (a verification reads every row), a draft pass of one token 1, a draft
    # batch 0 (the draft's mirror of a verified batch only writes its cache). None: all b
    # (files before schema 5, whose draft batches were timed with every row's logits).
    logits: Annotated[int, Field(ge=0)] | None = None
    # Median per-pass milliseconds over the blocks, and (max - min) / median (None: one block).
    ms: NonNegFloat
    ms_spread: NonNegFloat | None = None
    # Per-pass milliseconds of each block, and the passes each block ran.
    block_ms: NonNegFloatList = Field(min_length=1)
    block_passes: list[PosInt] = Field(min_length=1)
    # Median per-pass joules by sensor name (sensors whose block windows held energy), their
    # spread, and each block's per-pass joules; empty where no sensor read.
    energy_j: dict[str, NonNegFloat] = Field(default_factory=dict)
    energy_spread: dict[str, NonNegFloat] = Field(default_factory=dict)
    block_energy_j: dict[str, NonNegFloatList] = Field(default_factory=dict)
    # Schema 12: each block's foreign load (that of the round of blocks it ran in; None where
    # not measured) and whether it was disturbed (phase.costmodel.blocks: by load, or slower
    # than its size's other blocks allow). A disturbed block was repeated and is left out of
    # `ms`, `ms_spread` and the energy medians. Empty (unwritten): every block counts.
    block_load: list[NonNegFloat | None] = Field(default_factory=list,
                                                 exclude_if=lambda v: not v)
    block_disturbed: list[bool] = Field(default_factory=list, exclude_if=lambda v: not v)

    @model_validator(mode="after")
    def _check(self) -> PassCost:
        for name in ("block_load", "block_disturbed"):
            values = getattr(self, name)
            if values and len(values) != len(self.block_ms):
                raise ValueError(f"{name} has {len(values)} entries but block_ms has "
                                 f"{len(self.block_ms)}")
        if self.logits is not None and self.logits > self.tokens:
            raise ValueError(f"logits is {self.logits}, more rows than the pass's "
                             f"{self.tokens} tokens")
        if len(self.block_ms) != len(self.block_passes):
            raise ValueError(f"block_ms has {len(self.block_ms)} entries but block_passes "
                             f"has {len(self.block_passes)}")
        return self


class ProfilePoint(Strict):
    """Costs at one KV fill: the target's for b = 1..17, the draft's for a few b."""

    # The campaign prompt whose mid-run position this is (None: a fill given directly).
    prompt: str | None = None
    kv_tokens: Annotated[int, Field(ge=0)]
    target: list[PassCost] = Field(min_length=1)
    draft: list[PassCost] = Field(default_factory=list)


class CostProfile(Strict):
    points: list[ProfilePoint] = Field(min_length=1)
    # In words, how each point's KV fill was chosen.
    position_rule: str
    blocks: PosInt
    min_block_s: NonNegFloat
    # Median and spread of one n-gram lookup (index update + probe) over a real token history.
    ngram_lookup_ms: NonNegFloat | None
    ngram_lookup_ms_reason: str | None = None
    ngram_lookup_ms_spread: NonNegFloat | None = None
    # Why `draft` is empty at every point (no draft model loaded), and why no pass has energy.
    draft_reason: str | None = None
    energy_reason: str | None = None
    # Wall seconds the profile took, all of it (KV fill included).
    wall_s: NonNegFloat
    # Schema 12: what judged its blocks disturbed (phase.costmodel.blocks): the foreign load
    # threshold and the floor on a block's speed against its size's other blocks; None: no
    # such test (older files, or a plan that judges nothing).
    disturbed_load: NonNegFloat | None = Field(default=None, exclude_if=lambda v: v is None)
    slow_floor: NonNegFloat | None = Field(default=None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _check(self) -> CostProfile:
        paired(self.ngram_lookup_ms, self.ngram_lookup_ms_reason, "ngram_lookup_ms")
        has_draft = any(p.draft for p in self.points)
        if not has_draft and not self.draft_reason:
            raise ValueError("no point has draft costs, so draft_reason must say why")
        if has_draft and self.draft_reason:
            raise ValueError("points have draft costs, so draft_reason must be null")
        has_energy = any(c.energy_j for p in self.points for c in [*p.target, *p.draft])
        if not has_energy and not self.energy_reason:
            raise ValueError("no pass has energy, so energy_reason must say why")
        if has_energy and self.energy_reason:
            raise ValueError("passes have energy, so energy_reason must be null")
        return self
