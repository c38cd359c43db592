"""Queries on results: the one definition of each figure that validation, publishing and the
terminal summary share.

    conditions, runs_by_condition     which prompt x strategy pairs a campaign holds, and runs
    sensors_by_name, first_windows    a file's sensors and each run's windows (measured_windows:
                                      those with energy)
    energy_window, energy_*_per_token one sensor's energy in one run, per generated token
    spread                            (max - min) / mean, the variance rule's measure
    host_class_of, host_identity_of   which kind of machine a campaign ran on (label, identity)
    summarize                         raw runs -> one summary row per condition (in memory)

Numbers a summary row holds, per condition (all runs of one prompt with one strategy):

* tokens/s, acceptance, CPU ms/token: mean over every run;
* chip and board mJ/token: mean over the runs whose value stands, i.e. is measured and not
  rejected by validation (a rejected value is shown struck through on the page, never averaged);
* spread: (max - min) / mean over the same values;
* energy ratio vs plain: this condition's chip mJ/token over plain's for the same prompt.

Every run generates the same number of tokens, so the mean of per-run mJ/token equals total
energy over total tokens. A missing figure is None with a reason, never 0.

Summaries need to know which values validation rejected; they take the validation report
through the small `Judgement` protocol, so this module never imports phase.validate (which
builds on the queries here).
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Protocol

from phase.errors import PhaseError
from phase.results import (
    SCHEMA_VERSION,
    HostIdentity,
    ResultsFile,
    Run,
    SensorInfo,
    SensorWindow,
    SummaryFile,
    SummaryRow,
)

PLAIN = "plain"
# Enclosing scopes in the order we prefer one for the "board" column.
BOARD_SCOPES = ("board", "wall", "module")


# --- conditions -------------------------------------------------------------------------------


def conditions(results: ResultsFile) -> list[tuple[str, str]]:
    """Configured prompt x strategy pairs in config order, then any the runs add."""
    pairs = [(p.name, s) for p in results.config.prompts for s in results.config.strategies]
    for run in results.runs:
        if (run.prompt, run.strategy) not in pairs:
            pairs.append((run.prompt, run.strategy))
    return pairs


def runs_by_condition(results: ResultsFile) -> dict[tuple[str, str], list[Run]]:
    grouped: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in results.runs:
        grouped[(run.prompt, run.strategy)].append(run)
    return grouped


# --- per-run figures --------------------------------------------------------------------------


def sensors_by_name(results: ResultsFile) -> dict[str, SensorInfo]:
    """Declared sensors by name (the first declaration where a name repeats)."""
    out: dict[str, SensorInfo] = {}
    for s in results.sensors:
        out.setdefault(s.name, s)
    return out


def first_windows(run: Run) -> list[SensorWindow]:
    """The run's energy windows, the first one per sensor."""
    seen: set[str] = set()
    out = []
    for w in run.energy:
        if w.sensor not in seen:
            seen.add(w.sensor)
            out.append(w)
    return out


def measured_windows(results: ResultsFile) -> Iterator[tuple[Run, SensorWindow, SensorInfo]]:
    """Every run's first window per declared sensor that holds an energy value."""
    sensors = sensors_by_name(results)
    for run in results.runs:
        for w in first_windows(run):
            info = sensors.get(w.sensor)
            if info is not None and w.energy_j is not None:
                yield run, w, info


def window_s(w: SensorWindow) -> float:
    return w.end_unix_s - w.start_unix_s


def energy_window(run: Run, sensor: str) -> SensorWindow | None:
    """The run's energy window for this sensor (a valid file has at most one)."""
    for w in run.energy:
        if w.sensor == sensor:
            return w
    return None


def energy_j_per_token(run: Run, sensor: str | None) -> float | None:
    """The sensor's energy over the run's decode window per generated token, if measured."""
    w = energy_window(run, sensor) if sensor is not None else None
    if w is None or w.energy_j is None:
        return None
    return w.energy_j / run.tokens


def energy_mj_per_token(run: Run, sensor: str | None) -> float | None:
    per_token = energy_j_per_token(run, sensor)
    return None if per_token is None else per_token * 1000.0


def cpu_ms_per_token(run: Run) -> float:
    return run.cpu_s / run.tokens * 1000.0


def spread(values: Sequence[float]) -> float | None:
    """(max - min) / mean; None with fewer than two values or a mean that is not positive."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return (max(values) - min(values)) / mean if mean > 0 else None


# --- hosts ------------------------------------------------------------------------------------

# llama.cpp's system info names the backends it was built with; the first one found names the
# build (a CUDA build also lists its CPU backend, so the order matters).
_ACCELERATORS = (("CUDA", "cuda"), ("ROCm", "rocm"), ("HIP", "rocm"), ("Metal", "metal"),
                 ("Vulkan", "vulkan"), ("SYCL", "sycl"), ("CANN", "cann"), ("OpenCL", "opencl"))


def accelerator_build(llama_system_info: str | None) -> str | None:
    """Which llama.cpp build ran ("cuda", "metal", ... or "cpu"), read from its system info;
    None when the system info was not recorded."""
    if not llama_system_info:
        return None
    for needle, name in _ACCELERATORS:
        if re.search(rf"\b{needle}\b", llama_system_info):
            return name
    return "cpu"


def ram_gib(ram_bytes: int | None) -> int | None:
    """Memory in whole GiB: identical machines differ by what their kernels reserve."""
    return None if ram_bytes is None else round(ram_bytes / 2**30)


def host_class_of(results: ResultsFile) -> str:
    """The short host-class label (file names, grouping): the same in every file of a class."""
    return results.hosts[0].host_class if results.hosts else results.provenance.host_class


def host_identity_of(results: ResultsFile) -> HostIdentity:
    """The full identity of the host class a campaign ran on: recorded in `hosts`, or, in files
    older than that field, derived from the provenance (GPU driver unknown there)."""
    if results.hosts:
        return results.hosts[0].identity
    p = results.provenance
    return HostIdentity(cpu_model=p.cpu_model, cpu_cores=p.cpu_cores, ram_gib=ram_gib(p.ram_bytes),
                        gpus=list(p.gpus), gpu_driver=None,
                        accelerator=accelerator_build(p.llama_cpp_system_info))


# --- which sensors a summary reports -----------------------------------------------------------


def board_sensor(raw: ResultsFile) -> str | None:
    for scope in BOARD_SCOPES:
        for s in raw.sensors:
            if s.scope == scope:
                return s.name
    return None


def machine_label(raw: ResultsFile) -> str:
    p = raw.provenance
    parts = [p.cpu_model or "unknown CPU", f"{p.cpu_cores} cores"]
    if p.ram_bytes:
        parts.append(f"{p.ram_bytes / 2**30:.0f} GiB RAM")
    parts.append(", ".join(p.gpus) if p.gpus else "no GPU")
    return f"{p.host_class}: " + ", ".join(parts)


# --- summaries ---------------------------------------------------------------------------------


class Rejection(Protocol):
    """What a summary needs of a finding that rejects a value (phase.validate.Finding)."""

    @property
    def rule(self) -> str: ...
    @property
    def message(self) -> str: ...


class Judgement(Protocol):
    """What a summary needs of a validation report (phase.validate.Report)."""

    @property
    def chip_sensor(self) -> str | None: ...
    def rejection_of(self, run_id: str, sensor: str) -> Rejection | None: ...


def _window_reason(runs: Sequence[Run], sensor: str) -> str | None:
    reasons = sorted({w.energy_reason for r in runs for w in r.energy
                      if w.sensor == sensor and w.energy_reason})
    return "; ".join(reasons) if reasons else None


def _no_sensor_reason(raw: ResultsFile, scope_words: str) -> str:
    if raw.sensors_unavailable:
        why = "; ".join(f"{u.backend}: {u.reason}" for u in raw.sensors_unavailable)
        return f"no {scope_words} energy sensor on this machine ({why})"
    return f"no {scope_words} energy sensor was recorded in this campaign"


def standing_energy(
    runs: Sequence[Run], sensor: str | None, judgement: Judgement, missing_reason: str
) -> tuple[list[float], str | None]:
    """Standing mJ/token values of one sensor over a condition's runs, or why there are none."""
    if sensor is None:
        return [], missing_reason
    values: list[float] = []
    rejected: list[str] = []
    for run in runs:
        value = energy_mj_per_token(run, sensor)
        if value is None:
            continue
        finding = judgement.rejection_of(run.id, sensor)
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


def _row(
    raw: ResultsFile, condition: tuple[str, str], runs: list[Run], judgement: Judgement
) -> SummaryRow:
    board = board_sensor(raw)
    speeds = [r.tokens_per_s for r in runs]
    accepts = [r.acceptance for r in runs if r.acceptance is not None]
    chip_values, chip_reason = standing_energy(
        runs, judgement.chip_sensor, judgement, _no_sensor_reason(raw, "chip-level")
    )
    board_values, board_reason = standing_energy(
        runs, board, judgement, _no_sensor_reason(raw, "board-level")
    )
    ks = {r.k for r in runs}
    return SummaryRow(
        prompt=condition[0],
        strategy=condition[1],
        k=ks.pop() if len(ks) == 1 else None,
        n=len(runs),
        tokens_per_s=statistics.fmean(speeds),
        tokens_per_s_spread=spread(speeds),
        acceptance=_mean(accepts),
        acceptance_reason=None if accepts else _acceptance_reason(runs),
        chip_mj_per_token=_mean(chip_values),
        chip_mj_per_token_reason=chip_reason,
        chip_energy_spread=spread(chip_values),
        energy_ratio_vs_plain=None,
        run_ids=[r.id for r in runs],
        cpu_ms_per_token=statistics.fmean(cpu_ms_per_token(r) for r in runs),
        board_mj_per_token=_mean(board_values),
        board_mj_per_token_reason=board_reason if board is not None else None,
    )


def summarize(raw: ResultsFile, judgement: Judgement, raw_name: str) -> SummaryFile:
    """The derived summary of one raw file: a pure function of the file and its report."""
    grouped = runs_by_condition(raw)
    rows = [
        _row(raw, condition, grouped[condition], judgement)
        for condition in conditions(raw)
        if grouped.get(condition)  # completeness findings say so; a row needs a run
    ]
    if not rows:
        raise PhaseError(f"{raw_name}: no runs yet, so there is nothing to summarize")
    plain = {r.prompt: r.chip_mj_per_token for r in rows if r.strategy == PLAIN}
    for row in rows:
        base = plain.get(row.prompt)
        if base and row.chip_mj_per_token is not None:
            row.energy_ratio_vs_plain = row.chip_mj_per_token / base
    return SummaryFile(
        schema_version=SCHEMA_VERSION,
        id=f"summary-{raw.id}",
        experiment=raw.experiment,
        note=raw.note,
        summary_only=False,
        source=f"derived by `phase build` from {raw_name}: mean of repeats, rejected "
        "energy values left out",
        raw_files=[raw_name],
        machine=machine_label(raw),
        chip_sensor=judgement.chip_sensor,
        board_sensor=board_sensor(raw),
        rows=rows,
    )
