"""Raw runs -> one summary row per prompt x strategy: what tables and charts read.

Numbers a row holds, per condition (all runs of one prompt with one strategy):

* tokens/s, acceptance, CPU ms/token: mean over every run;
* chip and board mJ/token: mean over the runs whose value stands, i.e. is measured and not
  rejected by validation (a rejected value is shown struck through on the page, never averaged);
* spread: (max - min) / mean over the same values, the measure the variance rule uses;
* ratio vs plain: this condition's chip mJ/token over plain's for the same prompt.

Every run generates the same number of tokens, so the mean of per-run mJ/token equals total
energy over total tokens. A missing figure is None with a reason, never 0.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from phase.errors import PhaseError
from phase.results import (
    ResultsFile,
    Run,
    SummaryFile,
    SummaryRow,
    atomic_write_text,
    dump_json,
    load,
)
from phase.validate import Report, conditions, runs_by_condition

PLAIN = "plain"
# Enclosing scopes in the order we prefer one for the "board" column.
BOARD_SCOPES = ("board", "wall", "module")


def spread(values: Sequence[float]) -> float | None:
    """(max - min) / mean, the variance rule's measure; None with fewer than two values."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return (max(values) - min(values)) / mean if mean > 0 else None


def board_sensor(raw: ResultsFile) -> str | None:
    for scope in BOARD_SCOPES:
        for s in raw.sensors:
            if s.scope == scope:
                return s.name
    return None


def energy_mj_per_token(run: Run, sensor: str | None) -> float | None:
    if sensor is None:
        return None
    for w in run.energy:
        if w.sensor == sensor and w.energy_j is not None:
            return w.energy_j / run.tokens * 1000.0
    return None


def _window_reason(runs: Sequence[Run], sensor: str) -> str | None:
    reasons = sorted({w.energy_reason for r in runs for w in r.energy
                      if w.sensor == sensor and w.energy_reason})
    return "; ".join(reasons) if reasons else None


def _no_sensor_reason(raw: ResultsFile, scope_words: str) -> str:
    if raw.sensors_unavailable:
        why = "; ".join(f"{u.backend}: {u.reason}" for u in raw.sensors_unavailable)
        return f"no {scope_words} energy sensor on this machine ({why})"
    return f"no {scope_words} energy sensor was recorded in this campaign"


def _energy(
    runs: Sequence[Run], sensor: str | None, report: Report, missing_reason: str
) -> tuple[list[float], str | None]:
    """Standing values for one sensor over a condition's runs, or a reason for having none."""
    if sensor is None:
        return [], missing_reason
    values: list[float] = []
    rejected: list[str] = []
    for run in runs:
        value = energy_mj_per_token(run, sensor)
        if value is None:
            continue
        finding = report.is_rejected(run.id, sensor)
        if finding is not None:
            rejected.append(f"{finding.rule}: {finding.message}")
            continue
        values.append(value)
    if values:
        return values, None
    if rejected:
        first = rejected[0]
        more = f" (and {len(rejected) - 1} more)" if len(rejected) > 1 else ""
        return [], f"every reading of {sensor} was rejected by validation: {first}{more}"
    return [], _window_reason(runs, sensor) or f"sensor {sensor} has no energy for these runs"


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _acceptance_reason(runs: Sequence[Run]) -> str | None:
    reasons = sorted({r.acceptance_reason for r in runs if r.acceptance_reason})
    return "; ".join(reasons) if reasons else None


def summarize(raw: ResultsFile, report: Report, raw_name: str) -> SummaryFile:
    """The derived summary of one raw file; a pure function of the file and its report."""
    chip = report.chip_sensor
    board = board_sensor(raw)
    chip_missing = _no_sensor_reason(raw, "chip-level")
    board_missing = _no_sensor_reason(raw, "board-level")
    grouped = runs_by_condition(raw)
    rows: list[SummaryRow] = []
    for prompt, strategy in conditions(raw):
        runs = grouped.get((prompt, strategy), [])
        if not runs:
            continue  # completeness findings say so; a row needs at least one run
        speeds = [r.tokens_per_s for r in runs]
        accepts = [r.acceptance for r in runs if r.acceptance is not None]
        chip_values, chip_reason = _energy(runs, chip, report, chip_missing)
        board_values, board_reason = _energy(runs, board, report, board_missing)
        ks = {r.k for r in runs}
        rows.append(
            SummaryRow(
                prompt=prompt,
                strategy=strategy,
                k=ks.pop() if len(ks) == 1 else None,
                n=len(runs),
                tokens_per_s=statistics.fmean(speeds),
                tokens_per_s_spread=spread(speeds),
                acceptance=_mean(accepts),
                acceptance_reason=None if accepts else _acceptance_reason(runs),
                chip_mj_per_token=_mean(chip_values),
                chip_mj_per_token_reason=chip_reason,
                chip_energy_spread=spread(chip_values),
                ratio_vs_plain=None,
                run_ids=[r.id for r in runs],
                cpu_ms_per_token=statistics.fmean(r.cpu_s / r.tokens * 1000.0 for r in runs),
                board_mj_per_token=_mean(board_values),
                board_mj_per_token_reason=board_reason if board is not None else None,
            )
        )
    _fill_ratios(rows)
    if not rows:
        raise PhaseError(f"{raw_name}: no runs yet, so there is nothing to summarize")
    return SummaryFile(
        schema_version=1,
        id=f"summary-{raw.id}",
        experiment=raw.experiment,
        note=raw.note,
        summary_only=False,
        source=f"derived by `phase build` from {raw_name}: mean of repeats, rejected "
        "energy values left out",
        raw_files=[raw_name],
        machine=machine_label(raw),
        chip_sensor=chip,
        board_sensor=board,
        rows=rows,
    )


def _fill_ratios(rows: list[SummaryRow]) -> None:
    plain = {r.prompt: r.chip_mj_per_token for r in rows if r.strategy == PLAIN}
    for row in rows:
        base = plain.get(row.prompt)
        if base and row.chip_mj_per_token is not None:
            row.ratio_vs_plain = row.chip_mj_per_token / base


def machine_label(raw: ResultsFile) -> str:
    p = raw.provenance
    parts = [p.cpu_model or "unknown CPU", f"{p.cpu_cores} cores"]
    if p.ram_bytes:
        parts.append(f"{p.ram_bytes / 2**30:.0f} GiB RAM")
    parts.append(", ".join(p.gpus) if p.gpus else "no GPU")
    return f"{p.host_class}: " + ", ".join(parts)


def summary_path(results_dir: Path, raw_path: Path) -> Path:
    return results_dir / f"summary-{raw_path.stem}.json"


def write_summary(summary: SummaryFile, path: Path) -> bool:
    """Write a derived summary unless identical; never overwrite a transcribed one.

    Returns True when the file changed. Skipping identical content keeps results/ quiet in
    `git status` when nothing moved.
    """
    text = dump_json(summary)
    if path.exists():
        existing = load(path)
        if not isinstance(existing, SummaryFile) or existing.summary_only:
            raise PhaseError(
                f"{path}: would be overwritten by the summary derived from "
                f"{', '.join(summary.raw_files)}, but it is not a derived summary; rename one"
            )
        if path.read_text(encoding="utf-8") == text:
            return False
    atomic_write_text(path, text)
    return True
