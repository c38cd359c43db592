"""Summary files: per-condition figures, derived by `phase build` from a raw file or
transcribed from a published source (`summary_only`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from phase.results.base import (
    FileName,
    FiniteFloat,
    Fraction,
    NonNegFloat,
    PosInt,
    Strict,
)
from phase.results.base import paired as _paired
from phase.results.config import Level

# The figures of a summary row that may carry an interval (phase.analysis.figures names).
IntervalFigure = Literal["tokens_per_s", "speed_vs_plain", "acceptance", "chip_mj_per_token",
                         "energy_ratio_vs_plain", "board_mj_per_token", "cpu_ms_per_token",
                         "cpu_vs_plain"]


class FigureInterval(Strict):
    """A figure's 95% interval (phase.analysis.intervals): of the median of a condition's
    repeats (order statistics), or of its ratio to plain decoding's (Student t on the log of
    the per-round ratios where `paired`, else Welch's t on the two samples' logs)."""

    low: FiniteFloat
    high: FiniteFloat
    n: PosInt  # values (or pairs of one repeat) it rests on
    paired: bool = False
    # Schema 12. How it was computed ("order-statistic", "t-log", "welch-log"; absent in
    # summaries before 12: a percentile bootstrap); for a ratio, the p-value of the test that
    # it is 1.0 and that p-value adjusted over the campaign's family of ratios of this figure
    # (Benjamini-Hochberg): a ratio differs from plain only where p_adjusted < 0.05.
    method: Literal["order-statistic", "t-log", "welch-log"] | None = Field(
        default=None, exclude_if=lambda v: v is None)
    p_value: Fraction | None = Field(default=None, exclude_if=lambda v: v is None)
    p_adjusted: Fraction | None = Field(default=None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _check(self) -> FigureInterval:
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) is above high ({self.high})")
        return self


class SummaryRow(Strict):
    prompt: str
    strategy: str
    k: PosInt | None
    n: PosInt | None
    tokens_per_s: NonNegFloat | None
    tokens_per_s_spread: NonNegFloat | None = None
    acceptance: Fraction | None
    chip_mj_per_token: NonNegFloat | None
    chip_mj_per_token_reason: str | None = None
    chip_energy_spread: NonNegFloat | None = None
    # This condition's chip mJ/token over plain decoding's for the same prompt.
    energy_ratio_vs_plain: NonNegFloat | None
    run_ids: list[str] = Field(default_factory=list)
    # Optional extras (files without them stay valid): why acceptance is missing
    # where a strategy speculates, process CPU time, and the enclosing (board) sensor's energy,
    # given only where it passed validation.
    acceptance_reason: str | None = None
    cpu_ms_per_token: NonNegFloat | None = None
    board_mj_per_token: NonNegFloat | None = None
    board_mj_per_token_reason: str | None = None
    # From version 8 (absent in older and transcribed files: tokens/s and CPU ms/token over
    # plain decoding's are then divided from the row's figures): the ratios to plain decoding
    # as the median of per-repeat ratios, and each figure's bootstrap 95% interval, only
    # where there are at least two runs (or pairs) to resample.
    speed_vs_plain: NonNegFloat | None = None
    cpu_vs_plain: NonNegFloat | None = None
    intervals: dict[IntervalFigure, FigureInterval] = Field(default_factory=dict)
    # From version 10: the row's level of each extra factor (config.factors); empty (and not
    # written) where the experiment has none. Its ratios to plain are to plain at these levels.
    factors: dict[str, Level] = Field(default_factory=dict, exclude_if=lambda v: not v)

    @field_validator("intervals")
    @classmethod
    def _sorted(cls, value: dict[str, FigureInterval]) -> dict[str, FigureInterval]:
        # One order however the row was made (computed, or read back from the build cache,
        # which sorts keys): the pages and downloads are byte-identical either way.
        return dict(sorted(value.items()))

    @model_validator(mode="after")
    def _check(self) -> SummaryRow:
        _paired(self.chip_mj_per_token, self.chip_mj_per_token_reason, "chip_mj_per_token")
        if self.board_mj_per_token is not None and self.board_mj_per_token_reason:
            raise ValueError("board_mj_per_token has a value, so its reason must be null")
        for name in self.intervals:
            if getattr(self, name) is None:
                raise ValueError(f"intervals.{name}: an interval of a figure the row lacks")
        return self


class SummaryFile(Strict):
    schema_version: Literal[17]
    kind: Literal["summary"] = "summary"
    id: str
    experiment: str
    note: str | None
    summary_only: bool
    source: str
    raw_files: list[FileName]
    raw_runs_note: str | None = None
    machine: str | None = None
    # Which declared sensors the chip and board figures come from (derived summaries only).
    chip_sensor: str | None = None
    board_sensor: str | None = None
    rows: list[SummaryRow] = Field(min_length=1)
