"""What a memory study's figures read per condition (phase.analysis.figures computes them):
the condition's summary row, the model it decoded with, the KV positions a generated token
read on average, and the machine's measured bandwidth at the condition's thread count.

The model of a condition is the `model` factor's level (models[] with that `level` label),
else the plan's target; its thread count the `threads` level, else the file's; its fill the
`context_fill` level, else 0. A generated token i (from 0) of a run whose context held P
tokens when decoding began reads P + i cached positions, so a run's mean is P + (T - 1) / 2
for T generated tokens; a condition's is the mean over its runs. The measured bandwidth is
the best (highest) figure of any kernel at that thread count: what the machine can stream
at best, which an effective bandwidth is a share of.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from phase.analysis.queries import condition_key, runs_by_condition
from phase.results import BandwidthMeasurement, ModelInfo, ResultsFile, SummaryRow


@dataclass(frozen=True)
class MemoryView:
    """One condition, with what its memory figures need."""

    row: SummaryRow
    model: ModelInfo | None
    label: str  # the model level's label (or the model's quant where there is no level)
    threads: int
    fill: int
    kv_positions: float | None  # mean cached positions a generated token read
    bandwidth: BandwidthMeasurement | None  # the best kernel at `threads`


def _kind_name(results: ResultsFile, kind: str) -> str | None:
    return next((f.name for f in results.config.factors if f.kind == kind), None)


def best_bandwidth(results: ResultsFile, threads: int) -> BandwidthMeasurement | None:
    found = [b for b in results.bandwidth or [] if b.threads == threads]
    return max(found, key=lambda b: b.best_gb_s) if found else None


def _model_of(results: ResultsFile, row: SummaryRow, factor: str | None) -> ModelInfo | None:
    """The row records its model level, models[] the level's label: map one onto the other."""
    targets = [m for m in results.models if m.role == "target"]
    if factor is None:
        return next((m for m in targets if m.level is None), None)
    spec = next(f for f in results.config.factors if f.name == factor)
    level = row.factors.get(factor)
    label = None if level is None else dict(zip(spec.levels, spec.labels, strict=True)).get(level)
    return next((m for m in targets if m.level == label), None)


def memory_views(results: ResultsFile, rows: Sequence[SummaryRow]) -> list[MemoryView]:
    """A view per summary row, in the rows' order."""
    model_f, threads_f, fill_f = (_kind_name(results, k)
                                  for k in ("model", "threads", "context_fill"))
    runs = runs_by_condition(results)
    out = []
    for row in rows:
        model = _model_of(results, row, model_f)
        threads = int(row.factors[threads_f]) if threads_f else results.provenance.threads
        fill = int(row.factors[fill_f]) if fill_f else 0
        ran = runs.get(condition_key(row), [])
        positions = statistics.fmean(r.prompt_tokens + (r.tokens - 1) / 2 for r in ran) \
            if ran else None
        label = (model.level or model.quant or model.name) if model else "?"
        out.append(MemoryView(row, model, label, threads, fill, positions,
                              best_bandwidth(results, threads)))
    return out
