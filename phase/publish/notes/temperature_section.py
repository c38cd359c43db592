"""The calls a note about sampling makes: `temperature_table()` (each strategy's acceptance,
speed and chip energy vs plain per prompt and temperature, what changed against the greedy
rows, and each trend over temperature per prompt, aggregated only where the prompts agree)
and `acceptance_chart()` (phase.publish.charts.temperature), bound to one page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jinja2
from markupsafe import Markup

from phase.analysis import FIGURES
from phase.analysis.counts import rate_with_counts
from phase.analysis.figures import STATISTICS
from phase.analysis.formatting import fmt, ratio
from phase.publish.data.datasets import Dataset
from phase.publish.markup.islands import island
from phase.publish.notes.page import PageAssets
from phase.publish.numbers.downloads import changes_frame, temperature_frame
from phase.publish.numbers.temperature import (
    StrategyTrend,
    changes_from_greedy,
    temperature_rows,
    trends,
)

Pick = Callable[[str | None], list[Dataset]]

# What the trend table's figures are: the summary's figures of one condition each.
CAPTION = ("Each condition's figures are in the results table. Acceptance: {acceptance}; speed "
           "vs plain: {ratio}, to plain decoding at the same temperature. A trend compares the "
           "highest temperature with the lowest on each prompt; the median over prompts is "
           "given only where every prompt goes the same way.")


def _show(t: StrategyTrend, prompt: str | None, value: float | None, at: int) -> str:
    """A trend's figure: at one prompt's lowest (0) or highest (1) temperature, or (prompt
    None) the median over prompts at the `at`-th temperature; an acceptance with its counts
    (across prompts: every prompt's, summed)."""
    if t.figure != "acceptance":
        return FIGURES[t.figure].show(value)
    counts = t.ends[prompt][at] if prompt is not None else t.across_counts[at]
    return rate_with_counts(value, counts, FIGURES["acceptance"].show)


def temperature_calls(env: jinja2.Environment, assets: PageAssets, pick: Pick) -> dict[str, Any]:
    def temperature_table(file: str | None = None) -> Markup:
        groups = []
        caption = CAPTION.format(acceptance=STATISTICS["acceptance"],
                                 ratio=STATISTICS["speed_vs_plain"])
        for d in pick(file):
            rows = temperature_rows(d)
            changes = changes_from_greedy(rows)
            label = f"this table ({d.name})"
            # Exact values as CSV and JSON beside each table, as every table has.
            by_t = (assets.downloads(temperature_frame(rows), f"{d.stem}-temperature",
                                     f"each prompt, strategy and temperature ({d.name})")
                    if rows else None)
            vs_greedy = (assets.downloads(changes_frame(changes),
                                          f"{d.stem}-temperature-vs-greedy", label)
                         if changes else None)
            groups.append((d.name, rows, changes, trends(rows), by_t, vs_greedy,
                           assets.notes.once([caption])))
        return island(env.get_template("temperature_table.html.j2").render(
            groups=groups, fmt=fmt, ratio=ratio, show=_show))

    def acceptance_chart(file: str | None = None) -> Markup:
        # Altair loads only where a chart is drawn (a refused build never draws one).
        from phase.publish.charts.temperature import acceptance_vs_temperature

        return island("\n".join(assets.chart(acceptance_vs_temperature(d), d.name)
                                for d in pick(file)))

    return {"temperature_table": temperature_table, "acceptance_chart": acceptance_chart}
