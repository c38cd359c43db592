"""The calls a note about sampling makes: `temperature_table()` (each strategy's acceptance,
speed and chip energy vs plain per temperature, and what changed against the greedy rows)
and `acceptance_chart()` (phase.publish.charts.temperature), bound to one page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jinja2
from markupsafe import Markup

from phase.analysis.formatting import fmt, pct, ratio
from phase.publish.data.datasets import Dataset
from phase.publish.markup.islands import island
from phase.publish.notes.page import PageAssets
from phase.publish.numbers.downloads import changes_frame, temperature_frame
from phase.publish.numbers.temperature import changes_from_greedy, temperature_rows

Pick = Callable[[str | None], list[Dataset]]


def temperature_calls(env: jinja2.Environment, assets: PageAssets, pick: Pick) -> dict[str, Any]:
    def temperature_table(file: str | None = None) -> Markup:
        groups = []
        for d in pick(file):
            rows = temperature_rows(d)
            changes = changes_from_greedy(rows)
            label = f"this table ({d.name})"
            # Exact values as CSV and JSON beside each table, as every table has.
            by_t = (assets.downloads(temperature_frame(rows), f"{d.stem}-temperature", label)
                    if rows else None)
            vs_greedy = (assets.downloads(changes_frame(changes),
                                          f"{d.stem}-temperature-vs-greedy", label)
                         if changes else None)
            groups.append((d.name, rows, changes, by_t, vs_greedy))
        return island(env.get_template("temperature_table.html.j2").render(
            groups=groups, fmt=fmt, pct=pct, ratio=ratio))

    def acceptance_chart(file: str | None = None) -> Markup:
        # Altair loads only where a chart is drawn (a refused build never draws one).
        from phase.publish.charts.temperature import acceptance_vs_temperature

        return island("\n".join(assets.chart(acceptance_vs_temperature(d), d.name)
                                for d in pick(file)))

    return {"temperature_table": temperature_table, "acceptance_chart": acceptance_chart}
