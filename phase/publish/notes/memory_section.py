"""A memory study on a note's page: template calls a note body can use.

    {{ memory_table() }}      per condition: format, model, threads, fill, tokens/s, MB/token
                              (estimate), effective GB/s, share of measured bandwidth, chip
                              mJ/token and J/GB (null with the reason), each row linked to
                              its runs on the data page
    {{ bandwidth_table() }}   the machine's memory bandwidth as the campaign measured it, with
                              the method
    {{ roofline() }}          tokens/s against MB/token with the measured-bandwidth lines
    {{ memory_findings() }}   the sentences of the experiment's rule (phase.analysis.rules.memory,
                              thresholds in the experiment file), a list; without a declared
                              rule only the largest share, a fact that concludes nothing

Each takes `file="name.json"` like the other calls. Every text from data is escaped (the
tables by autoescape, the sentences by the template's `| md`).
"""

from __future__ import annotations

from typing import Any

import jinja2
from markupsafe import Markup

from phase.analysis import runs_by_condition
from phase.analysis.figures import (
    BYTES_FORMULA,
    FIGURES,
    MEDIAN_OF_RUNS,
    memory_reason,
    memory_value,
)
from phase.analysis.formatting import DASH, fmt
from phase.analysis.memory import MemoryView, memory_views
from phase.analysis.queries import condition_key
from phase.policy.strategies import is_baseline
from phase.publish.data.datasets import Dataset
from phase.publish.notes.cost_section import (
    CostCalls,
    CostCell,
    CostTable,
    Pick,
    run_links,
)
from phase.publish.notes.page import PageAssets
from phase.publish.numbers.memory import highest_share
from phase.publish.numbers.outcomes import outcome_of

FIGURE_COLUMNS = ("mb_per_token", "effective_gb_s", "bandwidth_share", "j_per_gb")


def _cell(name: str, v: MemoryView) -> CostCell:
    value = memory_value(name, v)
    if value is None:
        return CostCell(DASH, None, memory_reason(name, v))
    return CostCell(FIGURES[name].show(value), value)


class MemoryCalls(CostCalls):
    def _views(self, d: Dataset) -> list[MemoryView]:
        assert d.raw is not None
        return memory_views(d.raw, [r for r in d.summary.rows
                                   if is_baseline(r.strategy)])

    def memory_table(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._raw(file):
            views = self._views(d)
            runs = runs_by_condition(raw)
            page = self._page(d)
            rows = [[CostCell(v.label), CostCell(v.model.name if v.model else "?"),
                     CostCell(str(v.threads), v.threads), CostCell(str(v.fill), v.fill),
                     CostCell(fmt(v.row.tokens_per_s), v.row.tokens_per_s),
                     *(_cell(n, v) for n in FIGURE_COLUMNS[:3]),
                     CostCell(fmt(v.row.chip_mj_per_token), v.row.chip_mj_per_token,
                              v.row.chip_mj_per_token_reason),
                     _cell("j_per_gb", v)] for v in views]
            reasons = sorted({r for v in views if (r := v.row.chip_mj_per_token_reason)})
            notes = [f"MB/token is an estimate: {BYTES_FORMULA}.",
                     "Share of measured: effective GB/s over the best of phase's STREAM-style "
                     "copy and triad at the same thread count (the bandwidth table below)."]
            notes += [f"Energy: {self._reason(r)}" for r in reasons]
            parts.append(self._table(CostTable(
                "memory", "Per condition: speed, bytes read and bandwidth", d.name, page,
                ["format", "model", "threads", "fill", f"tokens/s ({MEDIAN_OF_RUNS})",
                 "MB/token (estimate)", "effective GB/s (of the median)",
                 "share of measured (of the median)", f"chip mJ/token ({MEDIAN_OF_RUNS})",
                 "chip J/GB (of the median)"],
                rows, notes,
                [run_links(page, runs.get(condition_key(v.row), []), by_repeat=True)
                 for v in views])))
        return self._block(parts)

    def bandwidth_table(self, file: str | None = None) -> Markup:
        parts = []
        for d, raw in self._raw(file):
            found = raw.bandwidth or []
            methods = sorted({b.method for b in found})
            parts.append(self._table(CostTable(
                "bandwidth", "This machine's memory bandwidth, as measured", d.name,
                self._page(d),
                ["threads", "kernel", "best GB/s", "median GB/s", "MiB per array", "passes",
                 "arrays ≥ 4× last-level cache"],
                [[CostCell(str(b.threads), b.threads), CostCell(b.kernel),
                  CostCell(fmt(b.best_gb_s), b.best_gb_s),
                  CostCell(fmt(b.median_gb_s), b.median_gb_s),
                  CostCell(f"{b.array_bytes / (1 << 20):.0f}", b.array_bytes),
                  CostCell(str(b.repeats), b.repeats),
                  CostCell("yes" if b.meets_llc_rule else "no")] for b in found],
                methods or ["This results file records no memory bandwidth."])))
        return self._block(parts)

    def roofline(self, file: str | None = None) -> Markup:
        # Altair loads only where a chart is drawn (a refused build never draws one).
        from phase.publish.charts.memory import roofline

        return self._block([self.assets.chart(roofline(self._views(d)), d.name)
                            for d, _ in self._raw(file)])

    def memory_findings(self, file: str | None = None) -> list[str]:
        out: list[str] = []
        for d, _ in self._raw(file):
            outcome = outcome_of(d)
            if outcome is not None:
                out += outcome.findings
            elif (said := highest_share(self._views(d))) is not None:
                out.append(said)
        return out


def memory_calls(env: jinja2.Environment, assets: PageAssets, pick: Pick,
                 root: str) -> dict[str, Any]:
    """The memory-study functions a note body can call, bound to one page."""
    c = MemoryCalls(env, assets, pick, root)
    return {"memory_table": c.memory_table, "bandwidth_table": c.bandwidth_table,
            "roofline": c.roofline, "memory_findings": c.memory_findings}
