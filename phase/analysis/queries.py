"""Queries on results: which conditions a campaign holds and each run's energy, shared by
validation, publishing, the summary (phase.analysis.summary) and the terminal.

    condition_key                     a run's or summary row's condition: (prompt, strategy,
                                      levels of the extra factors), the key of every grouping
    conditions, runs_by_condition     which conditions a campaign holds, and their runs
    sensors_by_name, first_windows    a file's sensors and each run's windows (measured_windows:
                                      those with energy)
    energy_window, energy_*_per_token one sensor's energy in one run, per generated token
    window_tokens                     the tokens a run's energy window holds (every pass's)
    primary_sensors, primary_energy_j which sensors "chip energy" means, and its value in a run
                                      (the sum of those sensors' windows)
    disturbed_runs, disturbed_note    runs other work disturbed (by load or slowdown), which
                                      every summary leaves out
    is_disturbed                      whether a run's recorded CPU or GPU load disturbed it

A run whose decode was repeated back-to-back inside one energy window (`Run.passes`,
phase.campaign.windows) divides the window's energy by every pass's tokens; its tokens/s, CPU
ms/token and trace are its first pass's. A missing figure is None with a reason, never 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from typing import Protocol

from phase.policy.strategies import BASELINE
from phase.results import (
    CampaignConfig,
    Level,
    ResultsFile,
    Run,
    SensorInfo,
    SensorWindow,
)
from phase.results.schedule import Levels, combinations, schedule_prompts

# A condition: a prompt, a strategy and a level of each extra factor (config.factors; none
# for an experiment over prompt x strategy only, such as the speculative study).
Condition = tuple[str, str, Levels]

# The baseline's label, to build labels and keys with (plain_key, scheduling plain runs);
# whether a label is the baseline is the registry's to say (is_baseline), never `== PLAIN`.
PLAIN = BASELINE
# Enclosing scopes in the order we prefer one for the "board" column.
BOARD_SCOPES = ("board", "wall", "module")


# --- conditions -------------------------------------------------------------------------------


class HasCondition(Protocol):
    """A run or a summary row: what names its condition."""

    @property
    def prompt(self) -> str: ...
    @property
    def strategy(self) -> str: ...
    @property
    def factors(self) -> Mapping[str, Level]: ...


def condition_key(item: HasCondition) -> Condition:
    """The condition a run or summary row belongs to; every grouping by condition uses it."""
    return (item.prompt, item.strategy, tuple(item.factors.items()))


def plain_key(condition: Condition) -> Condition:
    """The plain condition a condition's ratios are to: same prompt, same extra levels."""
    return (condition[0], PLAIN, condition[2])


def levels_text(levels: Levels) -> str:
    """`threads=2, mode=a` (empty without extra factors): for messages."""
    return ", ".join(f"{name}={level}" for name, level in levels)


def configured_conditions(config: CampaignConfig) -> list[Condition]:
    """The conditions a config asks for, in its order: prompt, then strategy, then the extra
    factors' levels (the first factor's slowest)."""
    combos = combinations(config.factors)
    return [(p, s, c.levels) for p in schedule_prompts(config) for s in config.strategies
            for c in combos]


def conditions(results: ResultsFile) -> list[Condition]:
    """Configured conditions in config order, then any the runs add."""
    found = configured_conditions(results.config)
    known = set(found)
    for run in results.runs:
        if (key := condition_key(run)) not in known:
            found.append(key)
            known.add(key)
    return found


def is_disturbed(foreign_load: float | None, gpu_busy: float | None,
                 threshold: float | None) -> bool:
    """A run is disturbed when other work took `threshold` of its cores, or kept one of its
    GPUs that busy while it was idle (threshold None: disturbance not judged)."""
    if threshold is None:
        return False
    return any(v is not None and v >= threshold for v in (foreign_load, gpu_busy))


def disturbed_runs(results: ResultsFile) -> list[Run]:
    """Runs that other work on the machine disturbed (Run.disturbed): kept in the file with
    their measured load, left out of every condition's figures (their slots were re-run)."""
    return [r for r in results.runs if r.disturbed]


def disturbed_note(results: ResultsFile) -> str | None:
    """"N disturbed run(s) left out" and why (other work's load, or a slowdown beyond the
    noise floor: phase.analysis.slowdown), or None when there are none."""
    left_out = disturbed_runs(results)
    if not left_out:
        return None
    threshold = results.config.disturbed_load
    by_load = [r for r in left_out if is_disturbed(r.foreign_load, r.gpu_busy_before,
                                                   threshold)]
    parts = []
    if by_load:
        at = f" at or over {threshold:.0%}" if threshold is not None else ""
        worst = max(r.foreign_load or 0.0 for r in by_load)
        parts.append(f"other work used{at} of the run's CPU capacity (up to {worst:.0%})")
    slow = [r for r in left_out if r not in by_load]
    if slow:
        ratios = [v for r in slow for v in (r.speed_vs_profile, r.speed_vs_condition,
                                            r.speed_vs_prefill) if v is not None]
        worst_speed = f", down to {min(ratios):.2f}x" if ratios else ""
        parts.append(f"{len(slow)} ran slower than the noise floor allows{worst_speed}")
    rerun = "; their slots were re-run" if results.config.max_reruns else ""
    return f"{len(left_out)} disturbed run(s) left out: {'; '.join(parts)}{rerun}"


def runs_by_condition(results: ResultsFile) -> dict[Condition, list[Run]]:
    """Each condition's runs, disturbed runs left out (see disturbed_runs)."""
    grouped: dict[Condition, list[Run]] = defaultdict(list)
    for run in results.runs:
        if run.disturbed:
            continue
        grouped[condition_key(run)].append(run)
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


def window_tokens(run: Run) -> int:
    """The tokens generated inside the run's energy window: every pass's (Run.passes), or
    the run's own where it decoded once (no passes recorded, as in older files)."""
    return sum(p.tokens for p in run.passes) if run.passes else run.tokens


def energy_j_per_token(run: Run, sensor: str | None) -> float | None:
    """The sensor's energy over the run's decode window per token generated in it (every
    pass's tokens), if measured."""
    w = energy_window(run, sensor) if sensor is not None else None
    if w is None or w.energy_j is None:
        return None
    return w.energy_j / window_tokens(run)


def energy_mj_per_token(run: Run, sensor: str | None) -> float | None:
    per_token = energy_j_per_token(run, sensor)
    return None if per_token is None else per_token * 1000.0


def ranked_chip_sensors(results: ResultsFile) -> list[str]:
    """Chip-scope sensors, best first: one with energy in some run, a counter before a power
    reading, smaller declared smoothing, earlier in the file. The choice for files that do not
    record `primary_energy` (written before phase recorded it)."""
    measured = {w.sensor for r in results.runs for w in r.energy if w.energy_j is not None}
    ranked = sorted(
        (s.name not in measured, s.kind != "counter", s.smoothing_s, i, s.name)
        for i, s in enumerate(results.sensors)
        if s.scope == "chip"
    )
    names: list[str] = []
    for *_, name in ranked:
        if name not in names:
            names.append(name)
    return names


def primary_sensors(results: ResultsFile, fallback: str | None = None) -> list[str]:
    """The sensors whose summed energy is this file's chip energy: its recorded
    `primary_energy`; for older files `fallback` (a validator's chip sensor) or the best
    ranked chip sensor."""
    if results.primary_energy is not None:
        return list(results.primary_energy.sensors)
    if results.primary_energy_reason is not None:
        return []
    if fallback is not None:
        return [fallback]
    return ranked_chip_sensors(results)[:1]


class Rejection(Protocol):
    """What a summary needs of a finding that rejects a value (phase.validate.Finding)."""

    @property
    def rule(self) -> str: ...
    @property
    def message(self) -> str: ...


class RejectionOf(Protocol):
    def rejection_of(self, run_id: str, sensor: str) -> Rejection | None: ...


def primary_energy_j(results: ResultsFile, run: Run, judgement: RejectionOf | None = None,
                     *, fallback: str | None = None) -> tuple[float | None, str | None]:
    """The run's chip energy: the sum of its primary sensors' windows (J), or None and why
    (a part missing, without energy, or rejected by validation when `judgement` is given)."""
    names = primary_sensors(results, fallback)
    if not names:
        return None, results.primary_energy_reason or "no chip-level energy sensor was recorded"
    total = 0.0
    for name in names:
        w = energy_window(run, name)
        if w is None:
            return None, f"run {run.id} has no window of {name}"
        if w.energy_j is None:
            return None, f"{name}: {w.energy_reason}"
        finding = judgement.rejection_of(run.id, name) if judgement is not None else None
        if finding is not None:
            return None, f"{name} rejected by {finding.rule}: {finding.message}"
        total += w.energy_j
    return total, None


def cpu_ms_per_token(run: Run) -> float:
    return run.cpu_s / run.tokens * 1000.0


# --- which sensors a summary reports -----------------------------------------------------------


def board_sensor(raw: ResultsFile, chip: list[str] | None = None) -> str | None:
    """The sensor of the "board" column: one whose declared `encloses` holds every chip
    sensor (board before wall), or for files without declarations the first of BOARD_SCOPES."""
    chip = primary_sensors(raw) if chip is None else chip
    declared = [s for s in raw.sensors if s.encloses is not None]
    if declared:
        for scope in ("board", "wall", "module"):
            for s in declared:
                if s.scope == scope and chip and set(chip) <= set(s.encloses or []):
                    return s.name
        return None
    for scope in BOARD_SCOPES:
        for s in raw.sensors:
            if s.scope == scope:
                return s.name
    return None
