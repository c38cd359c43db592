"""The cost model on a note's page: template calls a note body can use.

    {{ cost_curve() }}        the profiled cost per pass (chart, and the numbers)
    {{ cost_prediction() }}   predicted vs measured tokens/s and J/token per condition, and
                              where a prediction misses by more than 10%, the term that is off
    {{ break_even() }}        break-even acceptance per k vs each condition's, and the best k
                              per prompt that the measured acceptance gives
    {{ auto_choices() }}      what `auto` chose per prompt (share of steps by proposer and k)

Each takes `file="name.json"` like the other calls, and shows, for a file without a profile
(or without auto runs), a sentence saying so instead. Every text from data is escaped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from phase.analysis import primary_sensors
from phase.analysis.formatting import DASH, fmt, pct
from phase.prediction import (
    TOLERANCE,
    auto_choices,
    best_k_rows,
    break_even_rows,
    predict_conditions,
    profile_share,
)
from phase.publish.charts import cost_model as cost_charts
from phase.publish.data.datasets import Dataset, page_stem
from phase.publish.markup.anchors import raw_page
from phase.publish.markup.islands import island
from phase.publish.notes.page import PageAssets
from phase.publish.numbers.downloads import cells_frame
from phase.results import ResultsFile

# Picks a version's results files by name (None: all of them), as every call of the page does.
Pick = Callable[[str | None], list[Dataset]]


@dataclass(frozen=True)
class CostCell:
    text: str
    value: float | None = None
    title: str | None = None


@dataclass(frozen=True)
class CostTable:
    kind: str
    title: str
    dataset: str
    data_page: str
    headers: list[str]
    rows: list[list[CostCell]]
    notes: list[str] = field(default_factory=list)


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

    def _table(self, table: CostTable) -> str:
        """The table, with its exact values as CSV and JSON next to it (like every table)."""
        frame = cells_frame(table.headers, [[c.value if c.value is not None else c.text
                                              for c in row] for row in table.rows])
        tag = hashlib.sha256(table.title.encode()).hexdigest()[:8]
        stem = f"{page_stem(Path(table.dataset).stem)}-{table.kind}-{tag}"
        downloads = self.assets.downloads(frame, stem, f"this table ({table.dataset})")
        return self.env.get_template("cost_table.html.j2").render(table=table,
                                                                  downloads=downloads)

    def _page(self, d: Dataset) -> str:
        return raw_page(d.stem, self.root)

    def _block(self, parts: list[str]) -> Markup:
        return island("\n".join(parts))

    def cost_curve(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._raw(file):
            parts.append(self.assets.chart(cost_charts.cost_curve(raw.profile), d.name))
            if raw.profile is None:
                continue
            for point in raw.profile.points:
                draft = {c.tokens: c for c in point.draft}
                rows = [[_num(c.tokens, lambda v: f"{v:.0f}"), _num(c.ms, lambda v: fmt(v, 2)),
                         _num(c.ms_spread, lambda v: pct(v, 1)),
                         _num(draft[c.tokens].ms if c.tokens in draft else None,
                              lambda v: fmt(v, 2))]
                        for c in point.target]
                where = f" (prompt {point.prompt})" if point.prompt else ""
                notes = [f"n-gram lookup: {fmt(raw.profile.ngram_lookup_ms, 3)} ms"]
                share = profile_share(raw)
                if share is not None:
                    notes.append(f"Profiling took {fmt(raw.profile.wall_s, 1)} s, "
                                 f"{pct(share, 1)} of the campaign's wall time.")
                notes += [r for r in (raw.profile.draft_reason, raw.profile.energy_reason) if r]
                parts.append(self._table(CostTable(
                    "cost_curve", f"Cost per pass at a KV fill of {point.kv_tokens}{where}",
                    d.name, self._page(d), ["b", "target ms", "spread", "draft ms"], rows,
                    notes)))
        return self._block(parts)

    def cost_prediction(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._raw(file):
            preds = predict_conditions(raw, primary_sensors(raw, d.report.chip_sensor))
            parts.append(self.assets.chart(cost_charts.prediction(preds), d.name))
            if not preds:
                continue
            rows = [[CostCell(p.prompt), CostCell(p.strategy),
                     _num(p.measured_tokens_per_s), _num(p.predicted_tokens_per_s),
                     _signed(p.error), _num(p.pace, lambda v: DASH if v is None else
                                             f"x{v:.2f}"),
                     _signed(p.paced_error),
                     _num(p.measured_j_per_token, lambda v: fmt(v, 3)),
                     _num(p.predicted_j_per_token, lambda v: fmt(v, 3)),
                     CostCell(p.blame() or f"within {TOLERANCE:.0%}")] for p in preds]
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
            reasons = sorted({p.energy_reason for p in preds if p.energy_reason})
            notes += [f"J/token: {r}" for r in reasons]
            parts.append(self._table(CostTable(
                "cost_prediction", "Predicted and measured, per condition", d.name,
                self._page(d), ["prompt", "strategy", "tokens/s", "predicted", "error", "pace",
                                "error at that pace", "J/token", "predicted J/token",
                                "where it misses"],
                rows, notes)))
        return self._block(parts)

    def break_even(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._raw(file):
            rows = break_even_rows(raw)
            chart = cost_charts.break_even(rows, list(d.summary.rows))
            parts.append(self.assets.chart(chart, d.name))
            if not rows:
                continue
            parts.append(self._table(CostTable(
                "break_even", "Break-even acceptance per k", d.name, self._page(d),
                ["prompt", "k", "draft", "n-gram"],
                [[CostCell(r.prompt), _num(r.k, lambda v: f"{v:.0f}"),
                  _alpha(r.draft) if r.has_draft else CostCell(DASH, None, "no draft model "
                                                               "was profiled"),
                  _alpha(r.ngram)] for r in rows])))
            best = best_k_rows(raw)
            parts.append(self._table(CostTable(
                "best_k", "The best k for each prompt, from its measured acceptance", d.name,
                self._page(d), ["prompt", "proposer", "acceptance (i.i.d.)", "best k",
                                "predicted speed vs plain"],
                [[CostCell(b.prompt), CostCell(b.proposer), _num(b.alpha, pct),
                  CostCell("none beats plain" if b.k == 0 else str(b.k), b.k),
                  _num(b.speedup, lambda v: fmt(v, 2))] for b in best],
                ["Predicted from each position's measured acceptance (pooled over the "
                 "prompt's runs of that proposer) and the profiled costs."])))
        return self._block(parts)

    def auto_choices(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._raw(file):
            shares = auto_choices(raw)
            parts.append(self.assets.chart(cost_charts.auto_choices(shares), d.name))
            if not shares:
                continue
            parts.append(self._table(CostTable(
                "auto_choices", "auto's choices", d.name, self._page(d),
                ["prompt", "choice", "k", "steps", "share"],
                [[CostCell(s.prompt), CostCell(s.proposer), _num(s.k, lambda v: f"{v:.0f}"),
                  _num(s.steps, lambda v: f"{v:.0f}"), _num(s.share, lambda v: pct(v, 1))]
                 for s in shares])))
        return self._block(parts)


def cost_calls(env: jinja2.Environment, assets: PageAssets, pick: Pick,
               root: str) -> dict[str, Any]:
    """The cost-model functions a note body can call, bound to one page."""
    c = CostCalls(env, assets, pick, root)
    return {"cost_curve": c.cost_curve, "cost_prediction": c.cost_prediction,
            "break_even": c.break_even, "auto_choices": c.auto_choices}
