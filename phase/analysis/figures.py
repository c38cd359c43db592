"""The registry of figures: one definition of every figure a reader sees.

Each entry says what a figure is called (its name: the summary row's field, the name a note's
figure calls and the changes table use), how it is labelled and in what unit, what it means,
how it is computed (from a condition's summary rows, from each run, from the per-step trace
or from a benchmark row), its "vs plain" form, and how it is written (a formatter from
formatting.py and the Vega format that writes the same in a chart's tooltip). The results
table, the cross-host tables, the changes table, the per-run ranges, the charts, a note's
figure calls and the terminal summary look figures up here (FIGURES[name]) instead of
restating a label, a division or a format; tests/test_figures.py checks that every name they
use resolves here.

Where a page shows one figure in words of its own (a chart axis, the cross-host page, the
terminal's narrow columns), the entry holds that wording too, so that the page stays as it
was and the difference is visible in one place.

Kinds of figure:

    condition   one value per prompt x strategy, from the summary rows (`of_row`); the median
                ones also have a value per run (`of_run`), whose range pages show (`per_run`)
    step        a median over the per-step trace (publish/numbers/steps.py, a note's step())
    bench       a figure of a benchmark row (bench/, the Benchmarks page)
    memory      a memory study's figure of a condition (`of_memory`, from a MemoryView:
                phase.analysis.memory), where the file records bytes-per-token inputs and
                the machine's bandwidth; None where they are missing (`memory_reason` says)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, cast

from phase.analysis.formatting import count, fmt, pct, pct1, ratio, times
from phase.analysis.memory import MemoryView
from phase.analysis.queries import condition_key, cpu_ms_per_token
from phase.analysis.relative import vs_plain
from phase.policy.strategies import is_baseline
from phase.results import FigureInterval, Run, SummaryRow
from phase.results.schedule import Levels
from phase.results.summary import IntervalFigure

Show = Callable[[float | None], str]
RowGetter = Callable[[Sequence[SummaryRow], SummaryRow], float | None]


@dataclass(frozen=True)
class RunView:
    """What a per-run figure reads: the run, and its standing chip energy per token (None
    when not measured or rejected), which depends on the file's sensors and its validation
    and so is worked out by the caller that holds them."""

    run: Run
    chip_mj_per_token: float | None = None


@dataclass(frozen=True)
class Figure:
    name: str
    kind: Literal["condition", "step", "bench", "memory"]
    label: str  # table heading, change-table metric, chart tooltip
    unit: str
    description: str  # a column heading's hover title
    show: Show  # how a value is written
    vega_format: str  # the same in a chart's tooltip ("" where a chart shows it as is)
    # A condition's value from its file's summary rows; None for step and bench figures.
    of_row: RowGetter | None = None
    # One run's value; None where runs have none or pages show no per-run range.
    of_run: Callable[[RunView], float | None] | None = None
    per_run: bool = False  # pages show its range over runs (spreads.py, chart whiskers)
    vs_plain: str | None = None  # the name of this figure over plain decoding's
    ratio_of: str | None = None  # for a "vs plain" figure: the figure it divides
    column: str = ""  # the results table's key (data-key, cross-host CSV); "" = name
    axis_title: str = ""  # on a chart axis; "" = label
    host_description: str = ""  # on the cross-host page (same prompt *and host*); "" = ours
    short_label: str = ""  # the terminal summary's narrow heading; "" = label
    short_show: Show | None = None  # the terminal's writing where it differs from the page's
    # A memory figure's value of one condition; None for the other kinds.
    of_memory: Callable[[MemoryView], float | None] | None = None

    @property
    def key(self) -> str:
        return self.column or self.name

    @property
    def axis(self) -> str:
        return self.axis_title or self.label

    @property
    def host_title(self) -> str:
        return self.host_description or self.description

    @property
    def short(self) -> str:
        return self.short_label or self.label

    @property
    def terminal_show(self) -> Show:
        return self.short_show or self.show


def plain_row(rows: Sequence[SummaryRow], prompt: str, levels: Levels = ()) -> SummaryRow | None:
    """Plain decoding's row for the prompt at these extra levels: the baseline of every "vs
    plain" figure."""
    return next((r for r in rows if is_baseline(r.strategy)
                 and (r.prompt, condition_key(r)[2]) == (prompt, levels)), None)


def _field(name: str) -> RowGetter:
    return lambda rows, row: getattr(row, name)


def _over_plain(base: str) -> RowGetter:
    def get(rows: Sequence[SummaryRow], row: SummaryRow) -> float | None:
        plain = plain_row(rows, row.prompt, condition_key(row)[2])
        return vs_plain(getattr(row, base), getattr(plain, base) if plain else None)
    return get


def _stored_or_over_plain(name: str, base: str) -> RowGetter:
    """A ratio the summary stores (paired by repeat, version 8 on); older and transcribed
    files divide the row's figure by plain's."""
    divide = _over_plain(base)

    def get(rows: Sequence[SummaryRow], row: SummaryRow) -> float | None:
        stored = getattr(row, name)
        return stored if stored is not None else divide(rows, row)
    return get


def _spread_column(rows: Sequence[SummaryRow], row: SummaryRow) -> float | None:
    # The table has room for one spread: energy's where measured, as the variance rule judges.
    return row.chip_energy_spread if row.chip_energy_spread is not None \
        else row.tokens_per_s_spread


RUN_SPREAD_WORDS = "(max − min) / mean across repeats"

# bytes/token(n) = W + KV(n), phase.costmodel.bytes_per_token, n the mean cached positions.
BYTES_FORMULA = ("bytes/token = W + KV(n), an estimate from the GGUF header: W the bytes of "
                 "every weight tensor (one embedding row where the output matrix is its own), "
                 "KV(n) = n_layer × n_kv_heads × (d_k + d_v) × 2 bytes × n, n the cached "
                 "positions a generated token read (prompt + fill + half the generated "
                 "tokens, on average)")


def _bytes_per_token(v: MemoryView) -> float | None:
    est = v.model.bytes_per_token if v.model else None
    if est is None or v.kv_positions is None:
        return None
    return est.weights_bytes + est.kv_bytes_per_position * v.kv_positions


def _effective_gb_s(v: MemoryView) -> float | None:
    b, tps = _bytes_per_token(v), v.row.tokens_per_s
    return None if b is None or tps is None else b * tps / 1e9


def _share(v: MemoryView) -> float | None:
    eff = _effective_gb_s(v)
    if eff is None or v.bandwidth is None or v.bandwidth.best_gb_s <= 0:
        return None
    return eff / v.bandwidth.best_gb_s


def _j_per_gb(v: MemoryView) -> float | None:
    b, mj = _bytes_per_token(v), v.row.chip_mj_per_token
    return None if b is None or mj is None or b <= 0 else (mj / 1e3) / (b / 1e9)


def memory_reason(name: str, v: MemoryView) -> str | None:
    """Why a memory figure of this condition is null, or None where it has a value."""
    of_memory = FIGURES[name].of_memory
    if of_memory is None or of_memory(v) is not None:
        return None
    if v.model is None or v.model.bytes_per_token is None:
        return "the results file records no bytes-per-token estimate for this model"
    if v.kv_positions is None:
        return "no undisturbed run of this condition"
    if name == "bandwidth_share" and v.bandwidth is None:
        return f"no memory bandwidth measured at {v.threads} thread(s)"
    if name == "j_per_gb":
        return v.row.chip_mj_per_token_reason or "chip energy not measured"
    return "tokens/s not measured"

_ALL = (
    Figure("tokens_per_s", "condition", "tokens/s", "tokens/s",
           "generated tokens per second of decode, median of repeats", fmt, ".1f",
           of_row=_field("tokens_per_s"), of_run=lambda v: v.run.tokens_per_s, per_run=True,
           vs_plain="speed_vs_plain", short_label="tok/s"),
    Figure("speed_vs_plain", "condition", "speed vs plain", "× plain",
           "tokens/s over plain decoding's for the same prompt (median of the ratios of runs "
           "in the same repeat)", ratio, ".2f",
           of_row=_stored_or_over_plain("speed_vs_plain", "tokens_per_s"), per_run=True,
           ratio_of="tokens_per_s",
           axis_title="tokens/s vs plain",
           host_description="tokens/s over plain decoding's, same prompt and host",
           short_label="×plain", short_show=times),
    Figure("acceptance", "condition", "accepted", "fraction",
           "accepted / drafted tokens, median of repeats", pct, ".0%",
           of_row=_field("acceptance"), of_run=lambda v: v.run.acceptance, per_run=True,
           short_label="accept"),
    Figure("chip_mj_per_token", "condition", "chip mJ/token", "mJ/token",
           "chip energy per generated token, median of repeats (rejected readings left out)",
           fmt, ".1f", of_row=_field("chip_mj_per_token"),
           of_run=lambda v: v.chip_mj_per_token, per_run=True,
           vs_plain="energy_ratio_vs_plain", column="chip", axis_title="chip mJ per token",
           host_description="chip energy per generated token, median of the standing readings",
           short_label="mJ/tok"),
    # Stored in the summary row (summarize pairs runs by repeat): a summary-only file
    # publishes it without the runs behind it, and pages show what it published.
    Figure("energy_ratio_vs_plain", "condition", "energy vs plain", "× plain",
           "chip mJ/token over plain decoding's for the same prompt (median of the ratios of "
           "runs in the same repeat)", ratio, ".2f",
           of_row=_field("energy_ratio_vs_plain"), ratio_of="chip_mj_per_token",
           column="ratio", axis_title="chip energy vs plain",
           host_description="chip mJ/token over plain decoding's, same prompt and host",
           short_label="E×plain"),
    Figure("board_mj_per_token", "condition", "board mJ/token", "mJ/token",
           "enclosing (board) sensor energy per token, only readings that passed validation",
           fmt, ".1f", of_row=_field("board_mj_per_token"), column="board"),
    Figure("cpu_ms_per_token", "condition", "CPU ms/token", "ms/token",
           "process CPU time per generated token, median of repeats", fmt, ".1f",
           of_row=_field("cpu_ms_per_token"), of_run=lambda v: cpu_ms_per_token(v.run),
           per_run=True, vs_plain="cpu_vs_plain", column="cpu", axis_title="CPU ms per token",
           short_label="CPU ms/t"),
    Figure("cpu_vs_plain", "condition", "CPU vs plain", "× plain",
           "CPU ms/token over plain decoding's for the same prompt (median of the ratios of "
           "runs in the same repeat)", ratio, ".2f",
           of_row=_stored_or_over_plain("cpu_vs_plain", "cpu_ms_per_token"), per_run=True,
           ratio_of="cpu_ms_per_token"),
    Figure("tokens_per_s_spread", "condition", "tokens/s spread", "fraction",
           f"{RUN_SPREAD_WORDS} of tokens/s", pct1, ".1%",
           of_row=_field("tokens_per_s_spread")),
    Figure("chip_energy_spread", "condition", "chip energy spread", "fraction",
           f"{RUN_SPREAD_WORDS} of chip energy per token (standing readings)", pct1, ".1%",
           of_row=_field("chip_energy_spread")),
    Figure("spread", "condition", "spread", "fraction",
           f"{RUN_SPREAD_WORDS}: of chip energy per token where measured, else of tokens/s",
           pct1, ".1%", of_row=_spread_column),
    Figure("n", "condition", "n", "runs", "runs behind the row", count, "",
           of_row=_field("n")),
    Figure("propose_ms_per_drafted", "step", "ms per drafted token", "ms",
           "the proposer's time per token it proposed: a median over the steps that proposed "
           "any", fmt, ".1f"),
    Figure("plain_ms_per_token", "step", "plain ms per token", "ms",
           "plain decoding's time per generated token: a median over its steps", fmt, ".1f"),
    Figure("mb_per_token", "memory", "MB/token", "MB/token",
           f"megabytes (10^6 bytes) read from memory per generated token: {BYTES_FORMULA}",
           fmt, ".1f", of_memory=lambda v: None if (b := _bytes_per_token(v)) is None
           else b / 1e6, axis_title="MB read per generated token (estimate)"),
    Figure("effective_gb_s", "memory", "effective GB/s", "GB/s",
           "bytes/token (estimate) × tokens/s: the memory bandwidth decoding used",
           fmt, ".1f", of_memory=_effective_gb_s),
    Figure("bandwidth_share", "memory", "share of measured", "fraction",
           "effective GB/s over the machine's measured bandwidth at the same thread count "
           "(the best of phase's STREAM-style copy and triad)", pct, ".0%",
           of_memory=_share),
    Figure("j_per_gb", "memory", "chip J/GB", "J/GB",
           "chip energy per gigabyte read: chip mJ/token over bytes/token (estimate)",
           lambda v: fmt(v, 2), ".2f", of_memory=_j_per_gb),
    Figure("bench_spread", "bench", "spread", "fraction",
           "(max − min) / median over the repeats of a benchmark row's figures, the largest "
           "among its samples: how far apart repeats of the same thing landed", pct, ".0%"),
)

FIGURES: Mapping[str, Figure] = MappingProxyType({f.name: f for f in _ALL})

# Which statistic each condition figure is, as tables name it under their columns: the one
# place to change when a figure's computation changes (analysis/summary.py, intervals.py).
MEDIAN_OF_RUNS = "median of runs"
RATIO_STATISTIC = "geometric mean of per-round ratios"
STATISTICS: Mapping[str, str] = MappingProxyType({
    "tokens_per_s": MEDIAN_OF_RUNS,
    "speed_vs_plain": RATIO_STATISTIC,
    "acceptance": f"{MEDIAN_OF_RUNS} (in brackets: accepted/drafted tokens summed over them)",
    "chip_mj_per_token": MEDIAN_OF_RUNS,
    "energy_ratio_vs_plain": RATIO_STATISTIC,
    "board_mj_per_token": MEDIAN_OF_RUNS,
    "cpu_ms_per_token": MEDIAN_OF_RUNS,
    "cpu_vs_plain": RATIO_STATISTIC,
    "tokens_per_s_spread": RUN_SPREAD_WORDS,
    "chip_energy_spread": RUN_SPREAD_WORDS,
    "spread": RUN_SPREAD_WORDS,
    "n": "count of undisturbed runs",
})


def statistic(name: str) -> str:
    """The statistic a condition figure is ("median of runs"), for captions and headings."""
    return STATISTICS[name]


def statistics_caption(names: Sequence[str]) -> str:
    """One caption line naming the statistic of each column: "tokens/s: median of runs; …"."""
    return "Columns: " + "; ".join(f"{FIGURES[n].label}: {STATISTICS[n]}" for n in names) + "."


def row_value(name: str, rows: Sequence[SummaryRow], row: SummaryRow) -> float | None:
    """A condition figure of one summary row; `rows` are its file's (for plain's row)."""
    getter = FIGURES[name].of_row
    if getter is None:
        raise ValueError(f"{name} is a {FIGURES[name].kind} figure, not one of a summary row")
    return getter(rows, row)


def row_interval(name: str, row: SummaryRow) -> FigureInterval | None:
    """A condition figure's 95% interval (None: fewer than two runs, or a file that
    records none, such as a transcribed summary)."""
    # Any figure's name may be asked; those that keep no interval are simply absent.
    return row.intervals.get(cast(IntervalFigure, name))


def run_value(name: str, view: RunView, plain: SummaryRow | None) -> float | None:
    """One run's value of a per-run figure; a "vs plain" one divides the run's figure by
    plain decoding's median on the prompt (`plain`, the summary row)."""
    fig = FIGURES[name]
    if fig.ratio_of is not None:
        base = FIGURES[fig.ratio_of]
        assert base.of_run is not None, f"{base.name} has no per-run value"
        return vs_plain(base.of_run(view), getattr(plain, base.name) if plain else None)
    if fig.of_run is None:
        raise ValueError(f"{name} has no per-run value")
    return fig.of_run(view)


def memory_value(name: str, view: MemoryView) -> float | None:
    """A memory figure of one condition (phase.analysis.memory.memory_views)."""
    getter = FIGURES[name].of_memory
    if getter is None:
        raise ValueError(f"{name} is a {FIGURES[name].kind} figure, not a memory figure")
    return getter(view)


def per_run_names() -> tuple[str, ...]:
    """The figures whose range over runs pages show, in registry order."""
    return tuple(f.name for f in _ALL if f.per_run)


def ratio_keys() -> tuple[str, ...]:
    """The results-table keys of the "vs plain" figures (marked on an unstable baseline)."""
    return tuple(f.key for f in _ALL if f.ratio_of is not None)
