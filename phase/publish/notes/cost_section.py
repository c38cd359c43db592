"""The cost model on a note's page: template calls a note body can use.

    {{ cost_curve() }}        the profiled cost per pass (chart, and the numbers)
    {{ cost_prediction() }}   predicted vs measured tokens/s and J/token per condition, and
                              where a prediction misses by more than 10%, the term that is off
    {{ break_even() }}        break-even acceptance per k vs each condition's, and the best k
                              per prompt that the measured acceptance gives
    {{ auto_choices() }}      what `auto` chose per prompt (share of steps by proposer and k)

Each takes `file="name.json"` like the other calls, and shows, for a file without a profile
(or without auto runs), a sentence saying so instead. Every text from data is escaped.

Every row links to what it was computed from on the file's data page, as the results table's
rows link to their runs: a pass cost to its timed blocks, a prediction to the runs it priced
and the profiled fills it read, a break-even to those fills, a best k to the runs whose steps
gave its acceptance, a share of auto's choices to the auto runs it counts. Runs are linked
once per row, to the data page's list of exactly those runs (numbers/rungroups.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import jinja2
from markupsafe import Markup

from phase.analysis import primary_sensors, runs_by_condition
from phase.analysis.counts import Counts, rate_with_counts
from phase.analysis.formatting import DASH, fmt, pct
from phase.analysis.prediction import (
    TOLERANCE,
    ConditionPrediction,
    auto_choices,
    best_k_rows,
    break_even_rows,
    predict_conditions,
    profile_share,
    prompt_fill,
    proposer_runs,
    run_fill,
)
from phase.analysis.queries import levels_text
from phase.costmodel.curve import points_at_fill
from phase.policy.strategies import decides
from phase.publish.data.datasets import Dataset, page_stem
from phase.publish.markup.anchors import profile_anchor, raw_page, run_anchor
from phase.publish.markup.islands import island
from phase.publish.notes.page import PageAssets
from phase.publish.numbers.downloads import cells_frame
from phase.publish.numbers.pagenotes import LONG_REASON, note_anchor
from phase.publish.numbers.rungroups import GroupLinks
from phase.publish.numbers.tables import Link
from phase.results import CostProfile, ResultsFile, Run

# Picks a version's results files by name (None: all of them), as every call of the page does.
Pick = Callable[[str | None], list[Dataset]]


# The prediction table compares like with like: the cost model prices each run, and both the
# measured and the predicted figures are means over the condition's runs.
PREDICTION_STATISTICS = (
    "Measured and predicted figures are means over the condition's undisturbed runs (tokens/s: "
    "the runs' mean; predicted: their mean tokens over their mean predicted time), so that "
    "the two are compared like with like; the results table shows medians, so its tokens/s "
    "can differ from this table's.")


@dataclass(frozen=True)
class CostCell:
    text: str
    value: float | None = None
    title: str | None = None
    note: int | None = None  # the page's numbered note that says why (a long reason)

    @property
    def note_id(self) -> str | None:
        return None if self.note is None else note_anchor(self.note)


@dataclass(frozen=True)
class CostTable:
    kind: str
    title: str
    dataset: str
    data_page: str
    headers: list[str]
    rows: list[list[CostCell]]
    notes: list[str] = field(default_factory=list)
    # Per row, links to its source on the data page (same order as rows).
    sources: list[list[Link]] = field(default_factory=list)
    # The rows drawn on the page (indices; None: all). The downloads always hold every row.
    shown: list[int] | None = None


def run_links(page: str, runs: list[Run], by_repeat: bool = False) -> list[Link]:
    """Links to runs on the data page, labelled by run id, or by repeat number (1, 2, …) as
    the results table does where a row's other columns already name the condition (the ids
    of factor campaigns are long enough to push a table past the column)."""
    # Labelled by its id, a link needs no title saying the same again (a page weighs less).
    return [Link(str(run.repeat + 1) if by_repeat else run.id,
                 f"{page}#{run_anchor(run.id)}", f"run {run.id}" if by_repeat else "")
            for run in sorted(runs, key=lambda r: r.order)]


def _fill_links(page: str, profile: CostProfile, fills: set[int]) -> list[Link]:
    """The profiled points costs at these KV fills were read from (one, or the two blended)."""
    used = sorted({i for fill in fills for i in points_at_fill(profile.points, fill)})
    # The label says what the link is; a title saying it again weighed on every row.
    return [Link(f"fill {profile.points[i].kv_tokens}", f"{page}#{profile_anchor(i)}", "")
            for i in used]


def _num(value: float | None, show: Callable[[float | None], str] = fmt) -> CostCell:
    return CostCell(show(value), value)


def _signed(value: float | None) -> CostCell:
    return CostCell(DASH if value is None else f"{value:+.1%}", value)


def _alpha(value: float | None) -> CostCell:
    if value is None:
        return CostCell("cannot pay", None, "even 100% acceptance would not beat plain "
                        "decoding here")
    return CostCell(pct(value), value)


class CostCalls:
    """The cost-model calls of one page; charts and downloads go through the page's assets,
    which the page's other calls share (chart ids and file names stay unique on the page)."""

    def __init__(self, env: jinja2.Environment, assets: PageAssets, pick: Pick,
                 root: str) -> None:
        self.env = env
        self.assets = assets
        self.pick = pick
        self.root = root

    def _raw(self, file: str | None) -> list[tuple[Dataset, ResultsFile]]:
        return [(d, d.raw) for d in self.pick(file) if d.raw is not None]

    def _cite(self, cell: CostCell) -> CostCell:
        """A long reason cited as the page's numbered note, not repeated in every cell."""
        if cell.title is None or len(cell.title) < LONG_REASON:
            return cell
        return replace(cell, title=None, note=self.assets.notes.cite(cell.title))

    def _table(self, table: CostTable) -> str:
        """The table, with its exact values as CSV and JSON next to it (like every table)."""
        table = replace(table, rows=[[self._cite(c) for c in row] for row in table.rows])
        frame = cells_frame(table.headers, [[c.value if c.value is not None else c.text
                                              for c in row] for row in table.rows])
        tag = hashlib.sha256(table.title.encode()).hexdigest()[:8]
        stem = f"{page_stem(Path(table.dataset).stem)}-{table.kind}-{tag}"
        downloads = self.assets.downloads(frame, stem, f"this table ({table.dataset})")
        if table.shown is not None:
            table = replace(table, rows=[table.rows[i] for i in table.shown],
                            sources=[table.sources[i] for i in table.shown]
                            if table.sources else [])
        return self.env.get_template("cost_table.html.j2").render(
            table=table, downloads=downloads, said=self.assets.notes.once(table.notes))

    def _reason(self, reason: str) -> str:
        """A reason as a table note writes it: a long one cites the page's numbered note,
        so that it is written once per page."""
        if len(reason) < LONG_REASON:
            return reason
        return f"see note {self.assets.notes.cite(reason)}"

    def _page(self, d: Dataset) -> str:
        return raw_page(d.stem, self.root)

    def _groups(self, raw: ResultsFile, page: str) -> Callable[[list[Run]], list[Link]]:
        """A row's link to its runs: once, to the group of the data page that lists them."""
        groups = GroupLinks(raw, page)
        return lambda runs: [Link(label, href, "") for label, href in groups.hrefs(runs)]

    def _block(self, parts: list[str]) -> Markup:
        return island("\n".join(parts))

    def cost_curve(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._raw(file):
            parts.append(self.assets.chart(_cost_charts().cost_curve(raw.profile), d.name))
            if raw.profile is None:
                continue
            # The per-pass costs at each fill are the data page's cost profile (with their
            # timed blocks): linked once here, not repeated as a table per fill.
            page = self._page(d)
            fills = [(f"KV fill {point.kv_tokens}"
                      + (f" (prompt {point.prompt})" if point.prompt else ""),
                      f"{page}#{profile_anchor(index)}")
                     for index, point in enumerate(raw.profile.points)]
            notes = [f"n-gram lookup: {fmt(raw.profile.ngram_lookup_ms, 3)} ms"]
            share = profile_share(raw)
            if share is not None:
                notes.append(f"Profiling took {fmt(raw.profile.wall_s, 1)} s, "
                             f"{pct(share, 1)} of the campaign's wall time.")
            # A reason as it is (once() writes a long one as the page's numbered note, or
            # nothing where the page said it already), not "see note N" after that note.
            notes += [r for r in (raw.profile.draft_reason, raw.profile.energy_reason) if r]
            parts.append(self.env.get_template("cost_profile_link.html.j2").render(
                dataset=d.name, fills=fills, notes=self.assets.notes.once(notes)))
        return self._block(parts)

    def cost_prediction(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._raw(file):
            preds = predict_conditions(raw, primary_sensors(raw, d.report.chip_sensor))
            parts.append(self.assets.chart(_cost_charts().prediction(preds), d.name))
            if not preds:
                continue
            page = self._page(d)
            priced = runs_by_condition(raw)
            profile = raw.profile
            assert profile is not None  # predictions need one
            groups = self._groups(raw, page)
            sources = [groups(runs) + _fill_links(page, profile, {run_fill(r) for r in runs})
                       for p in preds
                       for runs in [priced.get((p.prompt, p.strategy, p.levels), [])]]
            missed = sum(not p.within for p in preds)
            notes = [f"{len(preds) - missed} of {len(preds)} conditions predicted within "
                     f"{TOLERANCE:.0%} of the measured tokens/s."]
            if any(p.pace is not None for p in preds):
                notes.append(
                    "Pace: how fast the host ran during a condition's runs against its "
                    "profile, read by the plain runs nearest to each run in time (their median "
                    "step over the profile's one-token pass; x1.10: 10% slower than when "
                    "profiled; a plain run is read by its neighbours, never by itself). "
                    "\"Error at that pace\" is the prediction scaled by it: where it is small "
                    "and the error is large, the host drifted after it was profiled.")
            notes.append(PREDICTION_STATISTICS)
            reasons = sorted({p.energy_reason for p in preds if p.energy_reason})
            headers, rows, no_energy = _prediction_table(preds, bool(reasons))
            said = "J/token (columns left out, no row has it)" if no_energy else "J/token"
            notes += [f"{said}: {self._reason(r)}" for r in reasons]
            shown = _misses_shown(preds)
            if shown is not None:
                notes.insert(0, f"Drawn here: the {len(shown)} of {len(preds)} conditions with the "
                                "largest error; every row is in this table's CSV and JSON.")
            parts.append(self._table(CostTable(
                "cost_prediction", "Predicted and measured, per condition", d.name,
                self._page(d), headers, rows, notes,
                sources if any(sources) else [], shown)))
        return self._block(parts)

    def break_even(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._raw(file):
            rows = break_even_rows(raw)
            chart = _cost_charts().break_even(rows, list(d.summary.rows))
            parts.append(self.assets.chart(chart, d.name))
            if not rows or raw.profile is None:
                continue
            page = self._page(d)
            profile = raw.profile
            fills = {r.prompt: {f} if (f := prompt_fill(raw, r.prompt)) is not None else set()
                     for r in rows}
            parts.append(self._table(CostTable(
                "break_even", "Break-even acceptance per k", d.name, page,
                ["prompt", "k", "draft", "n-gram"],
                [[CostCell(r.prompt), _num(r.k, lambda v: f"{v:.0f}"),
                  _alpha(r.draft) if r.has_draft else CostCell(DASH, None, "no draft model "
                                                               "was profiled"),
                  _alpha(r.ngram)] for r in rows],
                sources=[_fill_links(page, profile, fills[r.prompt]) for r in rows])))
            best = best_k_rows(raw)
            linked = self._groups(raw, page)
            parts.append(self._table(CostTable(
                "best_k", "The best k for each prompt, from its measured acceptance", d.name,
                self._page(d), ["prompt", "proposer", "acceptance (i.i.d.; kept/tried)",
                                "best k", "predicted speed vs plain"],
                [[CostCell(b.prompt), CostCell(b.proposer),
                  CostCell(rate_with_counts(b.alpha, Counts(b.kept, b.tried)), b.alpha),
                  CostCell("none beats plain" if b.k == 0 else str(b.k), b.k),
                  _num(b.speedup, lambda v: fmt(v, 2))] for b in best],
                ["Predicted from each position's measured acceptance (pooled over the "
                 "prompt's runs of that proposer) and the profiled costs. Acceptance: proposed "
                 "positions kept over positions tried, summed over those runs and positions."],
                [linked(proposer_runs(raw, b.prompt, b.proposer))
                 + _fill_links(page, profile, fills.get(b.prompt, set())) for b in best])))
        return self._block(parts)

    def auto_choices(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._raw(file):
            shares = auto_choices(raw)
            parts.append(self.assets.chart(_cost_charts().auto_choices(shares), d.name))
            if not shares:
                continue
            page = self._page(d)
            autos = {s.prompt: [r for r in raw.runs if r.prompt == s.prompt
                                and decides(r.strategy)] for s in shares}
            totals: dict[str, int] = {}
            for s in shares:
                totals[s.prompt] = totals.get(s.prompt, 0) + s.steps
            linked = self._groups(raw, page)
            parts.append(self._table(CostTable(
                "auto_choices", "auto's choices", d.name, page,
                ["prompt", "choice", "k", "steps", "share (steps/all auto steps)"],
                [[CostCell(s.prompt), CostCell(s.proposer), _num(s.k, lambda v: f"{v:.0f}"),
                  _num(s.steps, lambda v: f"{v:.0f}"),
                  CostCell(rate_with_counts(s.share, Counts(s.steps, totals[s.prompt]),
                                            lambda v: pct(v, 1)), s.share)]
                 for s in shares],
                sources=[linked(autos[s.prompt]) for s in shares])))
        return self._block(parts)


def cost_calls(env: jinja2.Environment, assets: PageAssets, pick: Pick,
               root: str) -> dict[str, Any]:
    """The cost-model functions a note body can call, bound to one page."""
    c = CostCalls(env, assets, pick, root)
    return {"cost_curve": c.cost_curve, "cost_prediction": c.cost_prediction,
            "break_even": c.break_even, "auto_choices": c.auto_choices}


def _cost_charts() -> ModuleType:
    """The cost-model charts' module, imported when a section draws one: it loads Altair,
    which a build without such a section need not (charts/spec.py)."""
    from phase.publish.charts import cost_model

    return cost_model


def _prediction_table(preds: list[ConditionPrediction], energy_reasons: bool
                      ) -> tuple[list[str], list[list[CostCell]], bool]:
    """The prediction table's headers and rows, and whether its energy columns were left out
    (a dash in every row: no energy measured; the note says why)."""
    rows = [[CostCell(p.prompt), CostCell(p.strategy),
             _num(p.measured_tokens_per_s), _num(p.predicted_tokens_per_s),
             _signed(p.error), _num(p.pace, lambda v: DASH if v is None else f"x{v:.2f}"),
             _signed(p.paced_error),
             _num(p.measured_j_per_token, lambda v: fmt(v, 3)),
             _num(p.predicted_j_per_token, lambda v: fmt(v, 3)),
             CostCell(p.blame() or f"within {TOLERANCE:.0%}")] for p in preds]
    headers = ["prompt", "strategy", "tokens/s (mean of runs)",
               "predicted (mean of runs)", "error", "pace (mean of runs)",
               "error at that pace", "J/token (mean of runs)",
               "predicted J/token (mean of runs)", "where it misses"]
    no_energy = energy_reasons and all(
        p.measured_j_per_token is None and p.predicted_j_per_token is None for p in preds)
    if no_energy:
        headers, rows = headers[:7] + headers[9:], [r[:7] + r[9:] for r in rows]
    if any(p.levels for p in preds):  # else one prompt and strategy would repeat as one
        headers = [*headers[:2], "levels", *headers[2:]]
        rows = [[*r[:2], CostCell(levels_text(p.levels)), *r[2:]]
                for r, p in zip(rows, preds, strict=True)]
    return headers, rows, no_energy


# A page draws at most this many rows of a per-condition table (the rest are in its downloads),
# as it lists at most this many findings: a campaign over factors has dozens of conditions.
ROWS_DRAWN = 12


def _misses_shown(preds: list[ConditionPrediction]) -> list[int] | None:
    """The rows a long prediction table draws: the ROWS_DRAWN conditions with the largest
    error, in the table's order; None (every row) for a table that short."""
    if len(preds) <= ROWS_DRAWN:
        return None
    largest = sorted(range(len(preds)), key=lambda i: -abs(preds[i].error))
    return sorted(largest[:ROWS_DRAWN])
