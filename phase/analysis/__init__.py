"""Queries on results: the one definition of each figure that validation, publishing and the
terminal summary share.

    queries      conditions, runs by condition, each run's energy, disturbance
    summary      summary rows (summarize): medians of undisturbed runs, ratios, intervals
    relative     a figure vs plain decoding's, and spread ((max - min) / mean for a campaign's
                 runs, / median for a benchmark's repeats)
    figures      the registry: every figure's name, label, unit, description, how it is
                 computed, its "vs plain" form and its formatter
    formatting   the formatters (fmt, pct, ratio, ...): how a figure is written
    intervals    95% intervals: order statistics of a median, Student t on log ratios to plain
                 (paired by round), the family's Benjamini-Hochberg correction
    adaptive     adaptive repeats: which conditions need another round, what the rounds bought
    slowdown     disturbance judged by slowdown: a run's speed against its cost profile's
                 prediction and its condition's earlier runs
    bench_rows   a row of a benchmark results file (bench/results/), written by bench/ and read
                 by the Benchmarks page alike, its noise the benchmark spread

Everything the queries module defines is importable from `phase.analysis` itself, as it was
when this package was one module.
"""

from phase.analysis.figures import FIGURES, Figure, RunView, plain_row, row_value, run_value
from phase.analysis.queries import (
    BOARD_SCOPES,
    PLAIN,
    Condition,
    Rejection,
    RejectionOf,
    board_sensor,
    condition_key,
    conditions,
    cpu_ms_per_token,
    disturbed_note,
    disturbed_runs,
    energy_j_per_token,
    energy_mj_per_token,
    energy_window,
    first_windows,
    measured_windows,
    primary_energy_j,
    primary_sensors,
    ranked_chip_sensors,
    runs_by_condition,
    sensors_by_name,
    window_s,
    window_tokens,
)
from phase.analysis.relative import BENCH_SPREAD, RUN_SPREAD, spread, vs_plain
from phase.analysis.summary import (
    Judgement,
    standing_chip_energy,
    standing_energy,
    summarize,
)

__all__ = [
    "BENCH_SPREAD",
    "BOARD_SCOPES",
    "FIGURES",
    "PLAIN",
    "RUN_SPREAD",
    "Condition",
    "Figure",
    "Judgement",
    "Rejection",
    "RejectionOf",
    "RunView",
    "board_sensor",
    "condition_key",
    "conditions",
    "cpu_ms_per_token",
    "disturbed_note",
    "disturbed_runs",
    "energy_j_per_token",
    "energy_mj_per_token",
    "energy_window",
    "first_windows",
    "measured_windows",
    "plain_row",
    "primary_energy_j",
    "primary_sensors",
    "ranked_chip_sensors",
    "row_value",
    "run_value",
    "runs_by_condition",
    "sensors_by_name",
    "spread",
    "standing_chip_energy",
    "standing_energy",
    "summarize",
    "vs_plain",
    "window_s",
    "window_tokens",
]
