"""Ratios of a serving campaign across load: each strategy against plain decoding at every
level of the campaign's `concurrency` factor, in throughput and in energy per request, and
`auto` against the better of plain and the best fixed proposer.

    throughput   the summary's `speed_vs_plain` row and its interval (Run.tokens_per_s of a
                 serving run is its aggregate output tokens/s): paired by repeat, corrected
                 over the campaign's speed ratios (phase.analysis.summary), read as stored
    energy       Run.serving's window energy per finished request (whole run or steady
                 state), paired by repeat with plain's at the same level and repeat
                 (intervals.ratio_interval), Benjamini-Hochberg over the window's ratios
    auto         auto's aggregate tokens/s over the better of plain and the best fixed
                 proposer at each level: its lowest paired ratio to any of them, with an
                 interval that covers whichever is truly best (intervals.floor_interval)

Only the runs a summary row rests on (undisturbed ones) enter a ratio, so every figure here is
a figure of the same runs the results table shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from phase.analysis.intervals import (
    Bounds,
    Interval,
    adjust,
    floor_interval,
    ratio_interval,
    resolved,
)
from phase.analysis.queries import levels_text
from phase.policy.strategies import decides, is_baseline
from phase.results import Level, ResultsFile, Run, SummaryRow

Window = Literal["whole run", "steady state"]
WINDOWS: tuple[Window, ...] = ("whole run", "steady state")
# A level's standing: resolved better than plain, not resolved better (its interval includes
# or is beyond 1.0 the wrong way), or no interval to say (too few repeats, a missing figure).
Standing = Literal["pays", "stops", "unknown"]


def concurrency_factor(results: ResultsFile) -> str | None:
    """The name of the campaign's concurrency factor, or None (not a serving campaign)."""
    return next((f.name for f in results.config.factors if f.kind == "concurrency"), None)


@dataclass(frozen=True)
class LevelRatio:
    """One strategy's ratio at one concurrency level, with its interval and the runs behind
    it (the strategy's and its comparator's)."""

    level: Level
    value: float | None
    interval: Bounds | None
    run_ids: tuple[str, ...]
    reason: str | None = None  # why there is no value

    def standing(self, lower_is_better: bool = False) -> Standing:
        if self.value is None or self.interval is None:
            return "unknown"
        better = self.value < 1.0 if lower_is_better else self.value > 1.0
        return "pays" if better and resolved(self.interval, 1.0) else "stops"


@dataclass(frozen=True)
class Series:
    """A strategy's ratios over the levels, ascending, at one place (prompt pool and the
    levels of any other factor)."""

    where: str
    strategy: str
    ratios: tuple[LevelRatio, ...]


def _other_levels(row: SummaryRow, factor: str) -> tuple[tuple[str, Level], ...]:
    return tuple((k, v) for k, v in row.factors.items() if k != factor)


def _where(row: SummaryRow, factor: str) -> str:
    others = levels_text(_other_levels(row, factor))
    return f"{row.prompt} at {others}" if others else row.prompt


def _key(row: SummaryRow, factor: str) -> tuple[str, tuple[tuple[str, Level], ...]]:
    return (row.prompt, _other_levels(row, factor))


def _level_sort(level: Level) -> tuple[int, float, str]:
    return (0, float(level), "") if isinstance(level, int | float) else (1, 0.0, str(level))


def grouped(rows: Sequence[SummaryRow], factor: str
            ) -> dict[tuple[str, str], dict[Level, SummaryRow]]:
    """Rows by (where, strategy), then by level of `factor`, levels ascending."""
    out: dict[tuple[str, str], dict[Level, SummaryRow]] = {}
    for row in rows:
        if factor in row.factors:
            out.setdefault((_where(row, factor), row.strategy), {})[row.factors[factor]] = row
    return {k: dict(sorted(v.items(), key=lambda kv: _level_sort(kv[0])))
            for k, v in out.items()}


def _speculative(results: ResultsFile, rows: Sequence[SummaryRow]) -> list[str]:
    present = {r.strategy for r in rows}
    return [s for s in results.config.strategies if not is_baseline(s) and s in present]


def throughput_series(results: ResultsFile, rows: Sequence[SummaryRow]) -> list[Series]:
    """Every non-plain strategy's aggregate-throughput ratio to plain at each level (the
    summary's speed_vs_plain and its interval)."""
    factor = concurrency_factor(results)
    if factor is None:
        return []
    by = grouped(rows, factor)
    out = []
    for where in dict.fromkeys(w for w, _ in by):
        plain = next((v for (w, s), v in by.items() if w == where and is_baseline(s)), {})
        for strategy in _speculative(results, rows):
            levels = by.get((where, strategy), {})
            ratios = tuple(
                LevelRatio(level, row.speed_vs_plain, row.intervals.get("speed_vs_plain"),
                           tuple(row.run_ids) + tuple(plain[level].run_ids if level in plain
                                                      else ()),
                           None if row.speed_vs_plain is not None else "no plain run at "
                           "this level to compare with")
                for level, row in levels.items())
            if ratios:
                out.append(Series(where, strategy, ratios))
    return out


def _runs_of(results: ResultsFile, row: SummaryRow) -> list[Run]:
    ids = set(row.run_ids)
    return [r for r in results.runs if r.id in ids]


def energy_per_request(run: Run, window: Window) -> tuple[float | None, str | None]:
    """A serving run's chip energy per finished request over `window`, or why there is none."""
    if run.serving is None:
        return None, "not a serving run"
    found = run.serving.whole_run if window == "whole run" else run.serving.steady_state
    if found is None:
        return None, run.serving.steady_state_reason or "no steady-state window"
    if found.energy_per_request_j is None:
        return None, found.energy_reason or "energy not measured"
    return found.energy_per_request_j, None


def _by_repeat(runs: Sequence[Run], value: Callable[[Run], float | None]) -> dict[int, float]:
    out: dict[int, list[float]] = {}
    for run in runs:
        if (v := value(run)) is not None:
            out.setdefault(run.repeat, []).append(v)
    # Should a repeat hold two runs (a re-run), their mean; ratio_interval pairs by repeat.
    return {k: sum(v) / len(v) for k, v in out.items()}


def _reasons(runs: Sequence[Run], window: Window) -> str:
    found = sorted({why for r in runs if (why := energy_per_request(r, window)[1])})
    return "; ".join(found) or "energy not measured"


def _speed(run: Run) -> float | None:
    return run.tokens_per_s


def _paired(top: Sequence[Run], bottom: Sequence[Run], value: Callable[[Run], float | None],
            why: str) -> tuple[float | None, Interval | None, str | None]:
    return _paired_values(_by_repeat(top, value), _by_repeat(bottom, value), why)


def _paired_values(a: Mapping[int, float], b: Mapping[int, float],
                   why: str) -> tuple[float | None, Interval | None, str | None]:
    if not a or not b:
        return None, None, why
    interval = ratio_interval(a, b)
    if interval is None:
        mean_a, mean_b = sum(a.values()) / len(a), sum(b.values()) / len(b)
        return (mean_a / mean_b if mean_b > 0 else None), None, (
            "too few repeats for an interval")
    return interval.centre, interval, None


def _corrected(series: list[Series]) -> list[Series]:
    """The series with every interval's test corrected over the whole family (BH)."""
    flat = [r.interval if isinstance(r.interval, Interval) else None
            for s in series for r in s.ratios]
    fixed = iter(adjust(flat))
    out = []
    for s in series:
        ratios = []
        for r in s.ratios:
            new = next(fixed)
            ratios.append(LevelRatio(r.level, r.value, new if new is not None else r.interval,
                                     r.run_ids, r.reason))
        out.append(Series(s.where, s.strategy, tuple(ratios)))
    return out


def energy_series(results: ResultsFile, rows: Sequence[SummaryRow],
                  window: Window) -> list[Series]:
    """Every non-plain strategy's energy-per-request ratio to plain at each level over
    `window`; a level without energy on either side has no value and says why."""
    factor = concurrency_factor(results)
    if factor is None:
        return []
    by = grouped(rows, factor)
    series = []
    for where in dict.fromkeys(w for w, _ in by):
        plain = next((v for (w, s), v in by.items() if w == where and is_baseline(s)), {})
        for strategy in _speculative(results, rows):
            ratios = []
            for level, row in by.get((where, strategy), {}).items():
                if level not in plain:
                    continue
                top, bottom = _runs_of(results, row), _runs_of(results, plain[level])
                value, interval, reason = _paired(
                    top, bottom, lambda r: energy_per_request(r, window)[0],
                    _reasons([*top, *bottom], window))
                ratios.append(LevelRatio(level, value, interval,
                                         tuple(row.run_ids) + tuple(plain[level].run_ids),
                                         reason))
            if ratios:
                series.append(Series(where, strategy, tuple(ratios)))
    return _corrected(series)


@dataclass(frozen=True)
class AutoLevel:
    """auto at one level against the better of plain and the best fixed proposer."""

    ratio: LevelRatio
    against: str  # the rival whose ratio is lowest (the best of them, as far as is seen)


def auto_series(results: ResultsFile, rows: Sequence[SummaryRow]) -> list[tuple[str,
                                                                               list[AutoLevel]]]:
    """Per place, auto's aggregate-throughput ratio to the better of plain and the fixed
    proposers at each level: the lowest of its paired ratios to each of them, with an
    interval that holds whichever of them is truly best (intervals.floor_interval, its upper
    ends widened over the rivals and the levels). Empty where the campaign has no auto or no
    concurrency."""
    factor = concurrency_factor(results)
    if factor is None:
        return []
    by = grouped(rows, factor)
    out = []
    for where in dict.fromkeys(w for w, _ in by):
        auto = next((v for (w, s), v in by.items() if w == where and decides(s)), {})
        levels: list[AutoLevel] = []
        for level, row in auto.items():
            rivals = [v[level] for (w, s), v in by.items()
                      if w == where and not decides(s) and level in v]
            if not rivals:
                continue
            mine = _by_repeat(_runs_of(results, row), _speed)
            values = [_by_repeat(_runs_of(results, r), _speed) for r in rivals]
            found = floor_interval(mine, values, family=len(auto)) if mine else None
            run_ids = tuple(row.run_ids) + tuple(i for r in rivals for i in r.run_ids)
            if found is not None:
                interval, lowest = found
                ratio = LevelRatio(level, interval.centre, interval, run_ids, None)
                against = rivals[lowest].strategy
            else:
                points = [(v, r.strategy) for r, vs in zip(rivals, values, strict=True)
                          if (v := _paired_values(mine, vs, "")[0]) is not None]
                value, against = min(points) if points else (None, "none")
                ratio = LevelRatio(level, value, None, run_ids, "no runs to compare" if not mine
                                   else "too few repeats for an interval")
            levels.append(AutoLevel(ratio, against))
        if levels:
            out.append((where, levels))
    return out
