"""acceptance_vs_temperature: each speculative strategy's acceptance (median over prompts)
at each temperature of a campaign with a temperature factor, a line per strategy; T = 0 is
greedy decoding. Drawn only where a note asks for it (it is not among `charts()`' kinds), so
notes without sampling are unchanged. Deterministic: the same rows give the same spec."""

from __future__ import annotations

import altair as alt

from phase.analysis import FIGURES
from phase.publish.charts.spec import Chart
from phase.publish.data.datasets import Dataset
from phase.publish.numbers.temperature import temperature_rows

KIND = "acceptance_vs_temperature"


def acceptance_vs_temperature(ds: Dataset) -> Chart:
    title = "Acceptance against temperature"
    rows = [r for r in temperature_rows(ds) if r.acceptance is not None]
    if not rows:
        return Chart(KIND, title, None, "Not drawn: no speculative condition at any temperature "
                     "has an acceptance figure (or the file has no temperature factor).", "")
    strategies = list(dict.fromkeys(r.strategy for r in rows))
    records = [{"strategy": r.strategy, "temperature": r.temperature,
                "acceptance": r.acceptance, "prompts": r.prompts} for r in rows]
    accepted = FIGURES["acceptance"]
    chart = alt.Chart(alt.Data(values=records)).mark_line(point=True).encode(
        x=alt.X("temperature:Q", title="temperature (0: greedy)"),
        y=alt.Y("acceptance:Q", title=accepted.axis, axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("strategy:N", sort=strategies, title="strategy"),
        tooltip=[alt.Tooltip("strategy:N"), alt.Tooltip("temperature:Q"),
                 alt.Tooltip("acceptance:Q", title=accepted.label,
                             format=accepted.vega_format),
                 alt.Tooltip("prompts:Q", title="prompts (median over)")],
    ).properties(width=420, height=260)
    caption = ("Each point: the median over prompts of the condition's median acceptance "
               "(proposed tokens kept). Above temperature 0 a proposal is kept by rejection "
               "sampling, which keeps the target's distribution exactly.")
    return Chart(KIND, title, chart.to_dict(validate=False), None, caption)
