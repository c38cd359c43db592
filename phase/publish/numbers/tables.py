"""Summary rows + findings -> the rows of a note's results table (formatted, linked, marked).

Numbers are formatted here once, so the page, the tests and the changes table agree on what a
reader sees; each cell also keeps its exact value (rendered as `data-value`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from phase.analysis import PLAIN, energy_mj_per_token, runs_by_condition
from phase.publish.data.datasets import Dataset
from phase.publish.markup.anchors import raw_page, row_anchor, run_anchor
from phase.publish.numbers.spreads import baseline_caveat, unstable_baselines
from phase.results import ResultsFile, SummaryRow

DASH = "—"
RATIO_KEYS = ("speed_vs_plain", "ratio", "cpu_vs_plain")  # the "vs plain" columns


@dataclass(frozen=True)
class Cell:
    text: str
    value: float | None = None
    title: str | None = None  # shown on hover: why a value is missing, struck or partial
    struck: bool = False
    caveat: str | None = None  # a ratio to an unstable plain baseline: marked, with why


@dataclass(frozen=True)
class Link:
    label: str
    href: str
    title: str


@dataclass(frozen=True)
class TableRow:
    prompt: str
    strategy: str
    anchor: str  # the row's id on a summary file's data page
    cells: dict[str, Cell]
    links: list[Link]
    unstable: str | None  # the variance finding's message when the condition is unstable


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    title: str


@dataclass(frozen=True)
class Table:
    dataset: str
    data_page: str
    columns: list[Column]
    rows: list[TableRow]
    notes: list[str] = field(default_factory=list)  # one line each, under the table


def fmt(value: float | None, digits: int = 1) -> str:
    return DASH if value is None else f"{value:.{digits}f}"


def pct(value: float | None, digits: int = 0) -> str:
    return DASH if value is None else f"{value * 100:.{digits}f}%"


def ratio(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}"


def _cell(value: float | None, show: Callable[[float | None], str], reason: str | None) -> Cell:
    return Cell(show(value), value, reason if value is None else None)


def _measured(ds: Dataset, row: SummaryRow, sensor: str | None) -> list[tuple[str, float]]:
    raw = ds.raw
    if raw is None or sensor is None:
        return []
    runs = runs_by_condition(raw).get((row.prompt, row.strategy), [])
    out = []
    for run in runs:
        value = energy_mj_per_token(run, sensor)
        if value is not None:
            out.append((run.id, value))
    return out


def _energy_cell(
    ds: Dataset, row: SummaryRow, sensor: str | None, value: float | None, reason: str | None
) -> Cell:
    """Mean of standing values; a fully rejected condition shows its mean struck through."""
    measured = _measured(ds, row, sensor)
    rejected = [
        (run_id, v) for run_id, v in measured
        if sensor is not None and ds.report.rejection_of(run_id, sensor) is not None
    ]
    if value is None and rejected:
        mean = statistics.fmean(v for _, v in rejected)
        return Cell(fmt(mean), mean, reason, struck=True)
    if value is not None and rejected:
        return Cell(
            fmt(value) + "*",
            value,
            f"mean of {len(measured) - len(rejected)} of {len(measured)} readings; "
            f"{len(rejected)} rejected by validation (see findings)",
        )
    return _cell(value, fmt, reason)


COLUMNS = {
    "tokens_per_s": Column("tokens_per_s", "tokens/s", "generated tokens per second of decode, "
                           "mean of repeats"),
    "speed_vs_plain": Column("speed_vs_plain", "speed vs plain", "tokens/s divided by plain "
                             "decoding's for the same prompt"),
    "acceptance": Column("acceptance", "accepted", "accepted / drafted tokens, mean of repeats"),
    "chip": Column("chip", "chip mJ/token", "chip energy per generated token, mean of repeats "
                   "(rejected readings left out)"),
    "ratio": Column("ratio", "energy vs plain", "chip mJ/token divided by plain decoding's for "
                    "the same prompt"),
    "board": Column("board", "board mJ/token", "enclosing (board) sensor energy per token, only "
                    "readings that passed validation"),
    "cpu": Column("cpu", "CPU ms/token", "process CPU time per generated token, mean of repeats"),
    "cpu_vs_plain": Column("cpu_vs_plain", "CPU vs plain", "CPU ms/token divided by plain "
                           "decoding's for the same prompt"),
    "spread": Column("spread", "spread", "(max − min) / mean across repeats: of chip energy per "
                     "token where measured, else of tokens/s"),
    "n": Column("n", "n", "runs behind the row"),
}


def _cells(
    ds: Dataset, row: SummaryRow, plain_speed: dict[str, float | None]
) -> dict[str, Cell]:
    """Every column's cell for one summary row (build_table keeps the columns it shows)."""
    summary = ds.summary
    base = plain_speed.get(row.prompt)
    speedup = row.tokens_per_s / base if base and row.tokens_per_s is not None else None
    plain_cpu = plain_speed.get(f"{row.prompt}/cpu")
    cpu_ratio = (row.cpu_ms_per_token / plain_cpu
                 if plain_cpu and row.cpu_ms_per_token is not None else None)
    energy_spread = row.chip_energy_spread
    return {
        "tokens_per_s": _cell(row.tokens_per_s, fmt, "not in the source"),
        "speed_vs_plain": _cell(speedup, ratio, "no plain row for this prompt"),
        "acceptance": _cell(
            row.acceptance,
            pct,
            row.acceptance_reason
            or ("plain decoding drafts nothing" if row.strategy == PLAIN else None),
        ),
        "chip": _energy_cell(
            ds, row, summary.chip_sensor, row.chip_mj_per_token, row.chip_mj_per_token_reason
        ),
        "ratio": _cell(row.energy_ratio_vs_plain, ratio,
                       "needs chip energy for this row and plain"),
        "board": _energy_cell(
            ds, row, summary.board_sensor, row.board_mj_per_token,
            row.board_mj_per_token_reason,
        ),
        "cpu": _cell(row.cpu_ms_per_token, fmt, "not recorded"),
        "cpu_vs_plain": _cell(cpu_ratio, ratio, "needs CPU time for this row and plain"),
        "spread": (
            Cell(pct(energy_spread, 1), energy_spread, "of chip energy per token")
            if energy_spread is not None
            else _cell(row.tokens_per_s_spread, lambda v: pct(v, 1),
                       "not published" if ds.summary_only else "fewer than two runs")
        ),
        "n": Cell(DASH if row.n is None else str(row.n), row.n),
    }


def build_table(ds: Dataset, root: str) -> Table:
    """The results table of one dataset, for a page whose way back to the site root is `root`."""
    rows = ds.summary.rows
    page = raw_page(ds.stem, root)
    plain_speed = {r.prompt: r.tokens_per_s for r in rows if r.strategy == PLAIN}
    plain_speed |= {f"{r.prompt}/cpu": r.cpu_ms_per_token for r in rows if r.strategy == PLAIN}
    baselines = unstable_baselines(ds)
    unstable = {
        (f.prompt, f.strategy): f.message for f in ds.report.findings if f.rule == "variance"
    }
    show_board = any(
        r.board_mj_per_token is not None or r.board_mj_per_token_reason for r in rows
    )
    show_cpu = any(r.cpu_ms_per_token is not None for r in rows)
    keys = ["tokens_per_s", "speed_vs_plain", "acceptance", "chip", "ratio"]
    keys += ["board"] if show_board else []
    keys += ["cpu", "cpu_vs_plain"] if show_cpu else []
    keys += ["spread", "n"]
    out_rows = []
    for row in rows:
        cells = _cells(ds, row, plain_speed)
        if row.prompt in baselines and row.strategy != PLAIN:
            caveat = baseline_caveat(row.prompt, baselines[row.prompt])
            cells = {k: replace(c, caveat=caveat) if k in RATIO_KEYS and c.value is not None
                     else c for k, c in cells.items()}
        out_rows.append(
            TableRow(
                prompt=row.prompt,
                strategy=row.strategy,
                anchor=row_anchor(row.prompt, row.strategy),
                cells={k: cells[k] for k in keys},
                links=_links(ds, row, page),
                unstable=unstable.get((row.prompt, row.strategy)),
            )
        )
    return Table(
        dataset=ds.name,
        data_page=page,
        columns=[COLUMNS[k] for k in keys],
        rows=out_rows,
        notes=_notes(ds),
    )


def _links(ds: Dataset, row: SummaryRow, page: str) -> list[Link]:
    raw = ds.raw
    if raw is None:
        anchor = row_anchor(row.prompt, row.strategy)
        return [Link("source", f"{page}#{anchor}", "the published figures; raw runs are not "
                     "in this repository")]
    repeats = {r.id: r.repeat for r in raw.runs}
    return [
        Link(str(repeats.get(run_id, i) + 1), f"{page}#{run_anchor(run_id)}", f"run {run_id}")
        for i, run_id in enumerate(row.run_ids)
    ]


def _notes(ds: Dataset) -> list[str]:
    summary = ds.summary
    notes = []
    reasons = sorted({r.chip_mj_per_token_reason for r in summary.rows
                      if r.chip_mj_per_token_reason})
    if reasons and all(r.chip_mj_per_token is None for r in summary.rows):
        notes.append("Chip energy not available: " + "; ".join(reasons))
    elif summary.chip_sensor:
        notes.append(f"Chip energy from sensor {summary.chip_sensor}.")
    if summary.board_sensor:
        notes.append(
            f"Board energy from sensor {summary.board_sensor}, shown only where it passed the "
            "rules; struck-through values were rejected (reasons under Findings)."
        )
    baselines = unstable_baselines(ds)
    if baselines:
        notes.append("† Plain decoding was itself unstable on " + "; ".join(
            f"{p} ({m})" for p, m in baselines.items())
            + ": every ratio to plain on those prompts is uncertain by at least as much.")
    if isinstance(ds.header, ResultsFile) and ds.header.status != "complete":
        notes.append(f"Campaign status: {ds.header.status} ({ds.n_runs} runs).")
    return notes
