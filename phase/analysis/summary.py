"""The summary of a raw file: one row per condition, in memory (`summarize`), which
validation, publishing and the terminal summary share.

Numbers a summary row holds, per condition (all runs of one prompt with one strategy at one
level of each extra factor, phase.analysis.queries.condition_key):

* tokens/s, acceptance, CPU ms/token: the median over every (undisturbed) run;
* chip and board mJ/token: the median over the runs whose value stands, i.e. is measured and
  not rejected by validation (a rejected value is shown struck through on the page, never
  counted);
* spread: (max - min) / mean over the same values (relative.spread, RUN_SPREAD);
* speed, CPU and energy vs plain: this condition's figure over plain decoding's for the same
  prompt at the same extra levels, paired by repeat (runs of one round share the machine's
  state): the geometric mean of the per-repeat ratios with its Student t 95% interval on
  their logs; where fewer than two repeats pair up, the two samples compared unpaired
  (Welch's t on logs); with fewer than two runs a side, the ratio of the medians and no
  interval;
* whether a ratio differs from plain: its t-test against 1.0, corrected over every ratio of
  that figure in the campaign (Benjamini-Hochberg; FigureInterval.p_adjusted);
* a median's interval: order statistics, from 6 runs (phase.analysis.intervals); below that
  the figure stands alone, since no honest 95% interval of a median exists.

A median, not a mean, for a condition's own figures: one run that other work slowed down must
not move it (validation leaves out the runs it knows were disturbed; the median also holds
against one it missed). Passes are not repeats: a condition's `n` counts runs. A missing
figure is None with a reason, never 0.

Summaries need to know which values validation rejected; they take the validation report
through the small `Judgement` protocol, so this module never imports phase.validate (which
builds on the queries here).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from phase.analysis.intervals import (
    MEDIAN_STATISTIC,
    RATIO_STATISTIC,
    Interval,
    adjust,
    median_interval,
    ratio_interval,
)
from phase.analysis.queries import (
    Condition,
    Rejection,
    board_sensor,
    condition_key,
    conditions,
    cpu_ms_per_token,
    disturbed_note,
    energy_mj_per_token,
    plain_key,
    primary_energy_j,
    primary_sensors,
    runs_by_condition,
    window_tokens,
)
from phase.analysis.relative import RUN_SPREAD, spread, vs_plain
from phase.base.errors import PhaseError
from phase.policy.strategies import is_baseline
from phase.results import (
    SCHEMA_VERSION,
    FigureInterval,
    ResultsFile,
    Run,
    SummaryFile,
    SummaryRow,
)
from phase.results.host_labels import machine_label
from phase.results.summary import IntervalFigure


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


def standing_chip_energy(raw: ResultsFile, runs: Sequence[Run], judgement: Judgement,
                         missing_reason: str) -> tuple[list[tuple[Run, float]], str | None]:
    """Standing chip mJ/token values (the primary sensors summed) over a condition's runs,
    each with its run."""
    names = primary_sensors(raw, judgement.chip_sensor)
    if not names:
        return [], raw.primary_energy_reason or missing_reason
    values: list[tuple[Run, float]] = []
    reasons: list[str] = []
    for run in runs:
        energy, why = primary_energy_j(raw, run, judgement, fallback=judgement.chip_sensor)
        if energy is None:
            reasons.append(why or "")
        else:
            values.append((run, energy / window_tokens(run) * 1000.0))
    if values:
        return values, None
    first = reasons[0] if reasons else missing_reason
    more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return [], f"{first}{more}"


def standing_energy(
    runs: Sequence[Run], sensor: str | None, judgement: Judgement, missing_reason: str
) -> tuple[list[tuple[Run, float]], str | None]:
    """Standing mJ/token values of one sensor over a condition's runs, each with its run, or
    why there are none."""
    if sensor is None:
        return [], missing_reason
    values: list[tuple[Run, float]] = []
    rejected: list[str] = []
    for run in runs:
        value = energy_mj_per_token(run, sensor)
        if value is None:
            continue
        finding = judgement.rejection_of(run.id, sensor)
        if finding is not None:
            rejected.append(f"{finding.rule}: {finding.message}")
            continue
        values.append((run, value))
    if values:
        return values, None
    if rejected:
        first = rejected[0]
        more = f" (and {len(rejected) - 1} more)" if len(rejected) > 1 else ""
        return [], f"every reading of {sensor} was rejected by validation: {first}{more}"
    return [], _window_reason(runs, sensor) or f"sensor {sensor} has no energy for these runs"


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass
class _Samples:
    """A condition's per-run values of the figures with a ratio to plain, by repeat (the round
    they ran in): what pairs a condition's runs with plain decoding's of the same round."""

    by_figure: dict[str, dict[int, float]] = field(default_factory=dict)


def _by_repeat(pairs: Sequence[tuple[Run, float]]) -> dict[int, float]:
    """Run values by repeat; should a repeat hold two runs, their median."""
    grouped: dict[int, list[float]] = defaultdict(list)
    for run, value in pairs:
        grouped[run.repeat].append(value)
    return {repeat: statistics.median(vs) for repeat, vs in sorted(grouped.items())}


def _stored(interval: Interval | None) -> FigureInterval | None:
    if interval is None:
        return None
    return FigureInterval(low=interval.low, high=interval.high, n=interval.n,
                          paired=interval.paired, method=interval.method,  # type: ignore[arg-type]  # pydantic checks it
                          p_value=_p(interval.p_value), p_adjusted=_p(interval.p_adjusted))


def _p(value: float | None) -> float | None:
    # A t-test's p-value can round a hair outside [0, 1].
    return None if value is None else min(max(value, 0.0), 1.0)


def _acceptance_reason(runs: Sequence[Run]) -> str | None:
    reasons = sorted({r.acceptance_reason for r in runs if r.acceptance_reason})
    return "; ".join(reasons) if reasons else None


def _row(
    raw: ResultsFile, condition: Condition, runs: list[Run], judgement: Judgement
) -> tuple[SummaryRow, _Samples]:
    board = board_sensor(raw, primary_sensors(raw, judgement.chip_sensor))
    speeds = [r.tokens_per_s for r in runs]
    accepts = [r.acceptance for r in runs if r.acceptance is not None]
    cpus = [cpu_ms_per_token(r) for r in runs]
    chip_pairs, chip_reason = standing_chip_energy(
        raw, runs, judgement, _no_sensor_reason(raw, "chip-level")
    )
    board_pairs, board_reason = standing_energy(
        runs, board, judgement, _no_sensor_reason(raw, "board-level")
    )
    chip_values = [v for _, v in chip_pairs]
    board_values = [v for _, v in board_pairs]
    named: tuple[tuple[IntervalFigure, Sequence[float]], ...] = (
        ("tokens_per_s", speeds), ("acceptance", accepts), ("chip_mj_per_token", chip_values),
        ("board_mj_per_token", board_values), ("cpu_ms_per_token", cpus))
    intervals = {name: stored for name, values in named
                 if (stored := _stored(median_interval(values))) is not None}
    ks = {r.k for r in runs}
    row = SummaryRow(
        prompt=condition[0],
        strategy=condition[1],
        k=ks.pop() if len(ks) == 1 else None,
        n=len(runs),
        tokens_per_s=statistics.median(speeds),
        tokens_per_s_spread=spread(speeds, RUN_SPREAD),
        acceptance=_median(accepts),
        acceptance_reason=None if accepts else _acceptance_reason(runs),
        chip_mj_per_token=_median(chip_values),
        chip_mj_per_token_reason=chip_reason,
        chip_energy_spread=spread(chip_values, RUN_SPREAD),
        energy_ratio_vs_plain=None,
        run_ids=[r.id for r in runs],
        cpu_ms_per_token=statistics.median(cpus),
        board_mj_per_token=_median(board_values),
        board_mj_per_token_reason=board_reason if board is not None else None,
        intervals=intervals,
        factors=dict(condition[2]),
    )
    samples = _Samples({
        "tokens_per_s": _by_repeat([(r, r.tokens_per_s) for r in runs]),
        "cpu_ms_per_token": _by_repeat([(r, cpu_ms_per_token(r)) for r in runs]),
        "chip_mj_per_token": _by_repeat(chip_pairs),
    })
    return row, samples


# Each ratio to plain a summary row holds, and the figure it divides.
RATIOS: dict[IntervalFigure, str] = {
    "speed_vs_plain": "tokens_per_s", "cpu_vs_plain": "cpu_ms_per_token",
    "energy_ratio_vs_plain": "chip_mj_per_token"}


def _ratio(values: Mapping[int, float], baseline: Mapping[int, float]
           ) -> tuple[float | None, Interval | None]:
    """A condition's figure over plain decoding's: paired by repeat where the rounds allow
    (see intervals.ratio_interval), with its interval; the ratio of the medians where no
    interval can be had (one run)."""
    interval = ratio_interval(values, baseline)
    if interval is not None:
        return interval.centre, interval
    return vs_plain(_median(list(values.values())), _median(list(baseline.values()))), None


def summarize(raw: ResultsFile, judgement: Judgement, raw_name: str) -> SummaryFile:
    """The derived summary of one raw file: a pure function of the file and its report."""
    grouped = runs_by_condition(raw)
    built = [
        _row(raw, condition, grouped[condition], judgement)
        for condition in conditions(raw)
        if grouped.get(condition)  # completeness findings say so; a row needs a run
    ]
    if not built:
        # Every run left out is not "no runs yet": say what left them out.
        why = disturbed_note(raw) if raw.runs else None
        raise PhaseError(f"{raw_name}: {why or 'no runs yet'}, so there is nothing to "
                         "summarize")
    # Ratios are to plain decoding of the same prompt at the same extra levels.
    plain = {condition_key(row): samples for row, samples in built
             if is_baseline(row.strategy)}
    # Each ratio figure's intervals over the campaign: one family, corrected together.
    families: dict[IntervalFigure, list[tuple[SummaryRow, Interval]]] = defaultdict(list)
    for row, samples in built:
        base = plain.get(plain_key(condition_key(row)))
        for name, figure in RATIOS.items():
            values = samples.by_figure[figure]
            baseline = base.by_figure[figure] if base is not None else {}
            if not values or not baseline:
                continue
            if is_baseline(row.strategy):  # plain over itself: 1, with nothing to test
                centre, interval = vs_plain(getattr(row, figure), getattr(row, figure)), None
            else:
                centre, interval = _ratio(values, baseline)
            setattr(row, name, centre)
            if centre is not None and interval is not None:
                families[name].append((row, interval))
    for name, members in families.items():
        for (row, _), corrected in zip(members, adjust([iv for _, iv in members]), strict=True):
            if (stored := _stored(corrected)) is not None:
                row.intervals = {**row.intervals, name: stored}
    rows = [row for row, _ in built]
    return SummaryFile(
        schema_version=SCHEMA_VERSION,
        id=f"summary-{raw.id}",
        experiment=raw.experiment,
        note=raw.note,
        summary_only=False,
        source=f"derived by `phase build` from {raw_name}: {MEDIAN_STATISTIC}; "
        f"{RATIO_STATISTIC}, each ratio's test against 1.0 corrected over the campaign's "
        "ratios of that figure (Benjamini-Hochberg); rejected energy values left out"
        + (f"; {note}" if (note := disturbed_note(raw)) else ""),
        raw_files=[raw_name],
        machine=machine_label(raw),
        chip_sensor=" + ".join(primary_sensors(raw, judgement.chip_sensor)) or None,
        board_sensor=board_sensor(raw, primary_sensors(raw, judgement.chip_sensor)),
        rows=rows,
    )
