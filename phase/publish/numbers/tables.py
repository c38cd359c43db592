"""Summary rows + findings -> the rows of a note's results table (formatted, linked, marked).

Each column is a figure of the registry (phase.analysis.figures): its heading, hover title,
value and formatter come from there, so the page, its downloads, the changes table and a
note's figure calls agree on what a reader sees; each cell also keeps its value
(rendered as `data-value`, to 6 significant digits; exact in the downloads) and, where
the summary row has one, the figure's 95% interval (`data-low`, `data-high`, and a second
line under the value).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from phase.analysis import (
    FIGURES,
    PLAIN,
    condition_key,
    energy_mj_per_token,
    row_value,
    runs_by_condition,
)
from phase.analysis.counts import Counts, rate_with_counts, row_acceptance_counts
from phase.analysis.figures import ratio_keys, row_interval, statistics_caption
from phase.analysis.formatting import span
from phase.analysis.intervals import LEGEND as INTERVAL_LEGEND
from phase.analysis.intervals import words as interval_method_words
from phase.publish.data.datasets import Dataset
from phase.publish.markup.anchors import raw_page, row_anchor, run_anchor
from phase.publish.numbers.pagenotes import (
    LONG_REASON,
    PageNotes,
    TableNote,
    all_notes,
    note_anchor,
)
from phase.publish.numbers.rungroups import GroupLinks
from phase.publish.numbers.spreads import baseline_caveat, unstable_baselines
from phase.results import ResultsFile, SummaryRow

RATIO_KEYS = ratio_keys()  # the "vs plain" columns


@dataclass(frozen=True)
class Cell:
    text: str
    value: float | None = None
    title: str | None = None  # shown on hover: why a value is missing, struck or partial
    struck: bool = False
    caveat: str | None = None  # a ratio to an unstable plain baseline: marked, with why
    caveat_note: int | None = None  # the page's numbered note saying why (then no title)
    low: float | None = None  # the figure's 95% interval, where it has one
    high: float | None = None
    interval: str | None = None  # the interval as written under the value ("39.0–42.0")
    interval_title: str | None = None  # what the interval is, on hover
    note: int | None = None  # the page's numbered note that says why (a long reason)
    counts: Counts | None = None  # a rate's counts (accepted/drafted summed over its runs)

    @property
    def note_id(self) -> str | None:
        return None if self.note is None else note_anchor(self.note)

    @property
    def caveat_id(self) -> str | None:
        return None if self.caveat_note is None else note_anchor(self.caveat_note)


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
    # The row's level of each of the table's extra factors (Table.factors), as shown.
    levels: list[str] = field(default_factory=list)
    # What the row links to on the data page: one link to the group listing its runs (links,
    # each run, are the same runs; written once there rather than in every row).
    source: list[Link] = field(default_factory=list)


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
    # The notes as this page writes them: its lines not said earlier on the page, and the
    # numbered notes its cells cite (pagenotes.PageNotes).
    said: list[TableNote] = field(default_factory=list)
    # The experiment's extra factors (config.factors), a column each after the strategy; none
    # for an experiment over prompt x strategy only.
    factors: list[str] = field(default_factory=list)


def _cell(value: float | None, show: Callable[[float | None], str], reason: str | None) -> Cell:
    return Cell(show(value), value, reason if value is None else None)


def interval_words(name: str, row: SummaryRow) -> str | None:
    """What a figure's interval is, in words for a hover title; None without one."""
    found = row_interval(name, row)
    if found is None:
        return None
    return interval_method_words(found.method, found.paired, found.n)


def with_interval(cell: Cell, name: str, row: SummaryRow) -> Cell:
    """The cell with the figure's interval, where the row has one and the cell shows a value
    that stands (a struck-through value has none)."""
    found = row_interval(name, row)
    if found is None or cell.value is None or cell.struck:
        return cell
    return replace(cell, low=found.low, high=found.high,
                   interval=span(found.low, found.high, FIGURES[name].show),
                   interval_title=interval_words(name, row))


def _measured(ds: Dataset, row: SummaryRow, sensor: str | None) -> list[tuple[str, float]]:
    raw = ds.raw
    if raw is None or sensor is None:
        return []
    runs = runs_by_condition(raw).get(condition_key(row), [])
    out = []
    for run in runs:
        value = energy_mj_per_token(run, sensor)
        if value is not None:
            out.append((run.id, value))
    return out


def _energy_cell(ds: Dataset, row: SummaryRow, sensor: str | None, name: str,
                 reason: str | None) -> Cell:
    """Median of standing values; a fully rejected condition shows its median struck through."""
    value, show = row_value(name, ds.summary.rows, row), FIGURES[name].show
    measured = _measured(ds, row, sensor)
    rejected = [
        (run_id, v) for run_id, v in measured
        if sensor is not None and ds.report.rejection_of(run_id, sensor) is not None
    ]
    if value is None and rejected:
        median = statistics.median(v for _, v in rejected)
        return Cell(show(median), median, reason, struck=True)
    if value is not None and rejected:
        return Cell(
            show(value) + "*",
            value,
            f"median of {len(measured) - len(rejected)} of {len(measured)} readings; "
            f"{len(rejected)} rejected by validation (see findings)",
        )
    return _cell(value, show, reason)


# The results table's figures in column order (a column shows only where its file has it).
TABLE_FIGURES = ("tokens_per_s", "speed_vs_plain", "acceptance", "chip_mj_per_token",
                 "energy_ratio_vs_plain", "board_mj_per_token", "cpu_ms_per_token",
                 "cpu_vs_plain", "spread", "n")
COLUMNS = {FIGURES[name].key: Column(FIGURES[name].key, FIGURES[name].label,
                                     FIGURES[name].description) for name in TABLE_FIGURES}


def _cells(ds: Dataset, row: SummaryRow) -> dict[str, Cell]:
    """Every column's cell for one summary row, by column key (build_table keeps the columns
    it shows)."""
    summary = ds.summary
    rows = summary.rows

    def cell(name: str, reason: str | None) -> Cell:
        return _cell(row_value(name, rows, row), FIGURES[name].show, reason)

    energy_spread = row.chip_energy_spread
    counts = row_acceptance_counts(ds.raw, row)
    cells = {
        "tokens_per_s": cell("tokens_per_s", "not in the source"),
        "speed_vs_plain": cell("speed_vs_plain", "no plain row for this prompt"),
        "acceptance": _acceptance_cell(
            row, counts,
            row.acceptance_reason
            or ("plain decoding drafts nothing" if row.strategy == PLAIN else None),
        ),
        "chip_mj_per_token": _energy_cell(ds, row, summary.chip_sensor, "chip_mj_per_token",
                                          row.chip_mj_per_token_reason),
        "energy_ratio_vs_plain": cell("energy_ratio_vs_plain",
                                      "needs chip energy for this row and plain"),
        "board_mj_per_token": _energy_cell(ds, row, summary.board_sensor, "board_mj_per_token",
                                           row.board_mj_per_token_reason),
        "cpu_ms_per_token": cell("cpu_ms_per_token", "not recorded"),
        "cpu_vs_plain": cell("cpu_vs_plain", "needs CPU time for this row and plain"),
        "spread": (
            Cell(FIGURES["spread"].show(energy_spread), energy_spread, "of chip energy per token")
            if energy_spread is not None
            else cell("spread", "not published" if ds.summary_only else "fewer than two runs")
        ),
        "n": Cell(FIGURES["n"].show(row.n), row.n),
    }
    return {FIGURES[name].key: with_interval(c, name, row) for name, c in cells.items()}


def _acceptance_cell(row: SummaryRow, counts: Counts | None, reason: str | None) -> Cell:
    """The median of the runs' acceptances with the accepted/drafted tokens summed over the
    same runs beside it: "51% (412/812)"."""
    text = rate_with_counts(row.acceptance, counts, FIGURES["acceptance"].show)
    return Cell(text, row.acceptance, reason if row.acceptance is None else None,
                counts=counts if row.acceptance is not None else None)


def _cite_long(cell: Cell, notes: PageNotes | None) -> Cell:
    """A cell whose reason is long cites it as the page's numbered note instead of carrying
    it as a title (said once per page, not once per empty cell)."""
    if notes is None or cell.title is None or len(cell.title) < LONG_REASON:
        return cell
    return replace(cell, title=None, note=notes.cite(cell.title))


def _shown_keys(ds: Dataset, only_plain: bool) -> list[str]:
    """The keys of the columns the table draws, in order: a figure no row has is left out,
    and a note under the table says why, once."""
    rows = ds.summary.rows
    show_board = any(r.board_mj_per_token is not None or r.board_mj_per_token_reason
                     for r in rows)
    show_cpu = any(r.cpu_ms_per_token is not None for r in rows)
    # Where every row is plain decoding, acceptance is empty and every ratio to plain is 1 by
    # definition. Chip energy that no row has (no sensor on the machine): its column and its
    # ratio to plain would be a dash in every row.
    show_chip = not _no_chip_energy(ds)
    shown = {"board_mj_per_token": show_board, "cpu_ms_per_token": show_cpu,
             "cpu_vs_plain": show_cpu and not only_plain,
             "speed_vs_plain": not only_plain, "acceptance": not only_plain,
             "chip_mj_per_token": show_chip,
             "energy_ratio_vs_plain": show_chip and not only_plain}
    return [FIGURES[name].key for name in TABLE_FIGURES if shown.get(name, True)]


def build_table(ds: Dataset, root: str, notes: PageNotes | None = None) -> Table:
    """The results table of one dataset, for a page whose way back to the site root is `root`;
    with a page's `notes`, what the page said before is not said again."""
    rows = ds.summary.rows
    page = raw_page(ds.stem, root)
    baselines = unstable_baselines(ds)
    unstable = {f.condition: f.message for f in ds.report.findings if f.rule == "variance"}
    factors = list(dict.fromkeys(name for r in rows for name in r.factors))
    only_plain = bool(rows) and all(r.strategy == PLAIN for r in rows)
    keys = _shown_keys(ds, only_plain)
    groups = GroupLinks(ds.raw, page) if ds.raw is not None else None
    out_rows = []
    for row in rows:
        cells = {k: _cite_long(c, notes) for k, c in _cells(ds, row).items()}
        if row.prompt in baselines and row.strategy != PLAIN:
            caveat = baseline_caveat(row.prompt, baselines[row.prompt])
            # With a page record, the mark links to the one note that says why.
            cited = notes.cite(_baseline_note(baselines)) if notes is not None else None
            cells = {k: replace(c, caveat=caveat, caveat_note=cited)
                     if k in RATIO_KEYS and c.value is not None else c
                     for k, c in cells.items()}
        out_rows.append(
            TableRow(
                prompt=row.prompt,
                strategy=row.strategy,
                anchor=row_anchor(row.prompt, row.strategy, condition_key(row)[2]),
                cells={k: cells[k] for k in keys},
                links=_links(ds, row, page),
                unstable=unstable.get(condition_key(row)),
                levels=[str(row.factors.get(name, "")) for name in factors],
                source=_source(ds, row, page, groups),
            )
        )
    lines = [statistics_caption([n for n in TABLE_FIGURES if FIGURES[n].key in keys]),
             *_notes(ds, notes)]
    if ds.raw is None and "acceptance" in keys:
        lines.append("The runs behind these rows are not in this repository, so an acceptance "
                     "is shown without the accepted/drafted counts it rests on.")
    if only_plain:
        lines.append("Every row is plain decoding: it proposes no tokens, and each ratio to "
                     "plain decoding would be 1, so acceptance and the ratios are left out.")
    return Table(
        dataset=ds.name,
        data_page=page,
        columns=[COLUMNS[k] for k in keys],
        rows=out_rows,
        notes=lines,
        factors=factors,
        said=notes.once(lines) if notes is not None else all_notes(lines),
    )


def _links(ds: Dataset, row: SummaryRow, page: str) -> list[Link]:
    raw = ds.raw
    if raw is None:
        anchor = row_anchor(row.prompt, row.strategy, condition_key(row)[2])
        return [Link("source", f"{page}#{anchor}", "the published figures; raw runs are not "
                     "in this repository")]
    repeats = {r.id: r.repeat for r in raw.runs}
    return [
        Link(str(repeats.get(run_id, i) + 1), f"{page}#{run_anchor(run_id)}", f"run {run_id}")
        for i, run_id in enumerate(row.run_ids)
    ]


def _source(ds: Dataset, row: SummaryRow, page: str, groups: GroupLinks | None) -> list[Link]:
    """The row's one link to its runs, listed on the data page (or the summary-only row)."""
    if ds.raw is None or groups is None:
        return _links(ds, row, page)
    by_id = {r.id: r for r in ds.raw.runs}
    return [Link(label, href, "") for label, href in
            groups.hrefs(by_id[i] for i in row.run_ids if i in by_id)]


def _baseline_note(baselines: dict[str, str]) -> str:
    return ("† Plain decoding was itself unstable on " + "; ".join(
        f"{p} ({m})" for p, m in baselines.items())
        + ": every ratio to plain on those prompts is uncertain by at least as much.")


def _no_chip_energy(ds: Dataset) -> bool:
    """No row has a chip energy, standing or struck through (a struck value is a reading
    validation rejected, which the table shows), and every row records why."""
    rows = ds.summary.rows
    return bool(rows) and all(r.chip_mj_per_token is None and r.chip_mj_per_token_reason
                              for r in rows) and not any(
        _measured(ds, r, ds.summary.chip_sensor) for r in rows)


def _notes(ds: Dataset, page: PageNotes | None = None) -> list[str]:
    summary = ds.summary
    notes = []
    reasons = sorted({r.chip_mj_per_token_reason for r in summary.rows
                      if r.chip_mj_per_token_reason})
    if reasons and all(r.chip_mj_per_token is None for r in summary.rows):
        said = "Chip energy not available" + (
            ", so its columns (chip mJ/token, energy vs plain) are left out"
            if _no_chip_energy(ds) else "")
        if page is not None and all(len(r) >= LONG_REASON for r in reasons):
            # A long reason is the page's numbered note, said once on the page.
            notes.append(f"{said}: " + "; ".join(f"note {page.cite(r)}" for r in reasons) + ".")
        else:
            notes.append(f"{said}: " + "; ".join(reasons))
    elif summary.chip_sensor:
        notes.append(f"Chip energy from sensor {summary.chip_sensor}.")
    if summary.board_sensor:
        notes.append(
            f"Board energy from sensor {summary.board_sensor}, shown only where it passed the "
            "rules; struck-through values were rejected (reasons under Findings)."
        )
    if any(r.intervals for r in summary.rows):
        notes.append(INTERVAL_LEGEND)
    baselines = unstable_baselines(ds)
    if baselines:
        notes.append(_baseline_note(baselines))
    if isinstance(ds.header, ResultsFile) and ds.header.status != "complete":
        notes.append(f"Campaign status: {ds.header.status} ({ds.n_runs} runs).")
    return notes
