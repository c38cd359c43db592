"""acceptance_vs_temperature: each speculative strategy's acceptance at each temperature of a
campaign with a temperature factor, one panel per prompt and a line per strategy (a median
over prompts would show a trend no prompt need have); T = 0 is greedy decoding. Drawn only
where a note asks for it (it is not among `charts()`' kinds), so notes without sampling are
unchanged. Deterministic: the same rows give the same spec."""

from __future__ import annotations

import altair as alt

from phase.analysis import FIGURES
from phase.analysis.figures import STATISTICS
from phase.publish.charts.spec import Chart
from phase.publish.data.datasets import Dataset
from phase.publish.numbers.temperature import temperature_rows

KIND = "acceptance_vs_temperature"


def acceptance_vs_temperature(ds: Dataset) -> Chart:
    title = "Acceptance against temperature, per prompt"
    rows = [r for r in temperature_rows(ds) if r.acceptance is not None]
    if not rows:
        return Chart(KIND, title, None, "Not drawn: no speculative condition at any temperature "
                     "has an acceptance figure (or the file has no temperature factor).", "")
    strategies = list(dict.fromkeys(r.strategy for r in rows))
    prompts = list(dict.fromkeys(r.prompt for r in rows))
    records = [{"strategy": r.strategy, "prompt": r.prompt, "temperature": r.temperature,
                "acceptance": r.acceptance, "n": r.n,
                "counts": r.counts.text if r.counts else "not known"} for r in rows]
    accepted = FIGURES["acceptance"]
    chart = alt.Chart(alt.Data(values=records)).mark_line(point=True).encode(
        x=alt.X("temperature:Q", title="temperature (0: greedy)"),
        y=alt.Y("acceptance:Q", title=accepted.axis, axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("strategy:N", sort=strategies, title="strategy"),
        tooltip=[alt.Tooltip("prompt:N"), alt.Tooltip("strategy:N"),
                 alt.Tooltip("temperature:Q"),
                 alt.Tooltip("acceptance:Q", title=f"{accepted.label} (median of runs)",
                             format=accepted.vega_format),
                 alt.Tooltip("counts:N", title="accepted/drafted tokens, summed over runs"),
                 alt.Tooltip("n:Q", title="runs")],
    ).properties(width=200, height=200).facet(
        column=alt.Column("prompt:N", sort=prompts, title="prompt"))
    caption = (f"Each point: one prompt's acceptance (proposed tokens kept) at one "
               f"temperature: the {STATISTICS['acceptance'].replace('in brackets', 'tooltip')}. "
               "Above temperature 0 a proposal is kept by rejection sampling, which keeps the "
               "target's distribution exactly.")
    return Chart(KIND, title, chart.to_dict(validate=False), None, caption)
