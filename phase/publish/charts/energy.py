"""Summary rows -> Altair charts: Vega-Lite specs inlined in pages (PNG fallbacks: spec.py).

Three charts per results file:

* energy_vs_speed      chip mJ/token against tokens/s, one panel per prompt, colour by strategy;
* ratio_vs_acceptance  energy ratio vs plain against acceptance (the break-even line at 1);
* per_k                tokens/s (and chip mJ/token) against draft length k, one line per prompt,
                       plain decoding as a dashed reference.

A chart that needs energy where none was measured is not drawn with zeros: it is replaced by
a sentence saying why it is missing. Everything here is deterministic (no random view names,
no timestamps), so a frozen page and its PNGs stay byte-identical.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import altair as alt

from phase.analysis import FIGURES, condition_key
from phase.analysis.figures import row_interval
from phase.analysis.queries import Condition
from phase.policy.strategies import is_baseline, needs_draft
from phase.publish.charts.spec import ENERGY_KINDS, Chart, energy_reason, overlaid_levels
from phase.results import SummaryFile, SummaryRow

# Each condition's accepted/drafted tokens summed over its runs ("412/812"), for tooltips.
CountsText = Mapping[Condition, str]

KINDS = ENERGY_KINDS


# The figures whose 95% interval a point carries, by the field it is drawn from.
INTERVALS = {"tokens_per_s": "tokens_per_s", "chip_mj_per_token": "chip_mj_per_token",
             "ratio_vs_plain": "energy_ratio_vs_plain"}


# Each chart's title, also where a sentence stands in for it.
TITLES = {
    "energy_vs_speed": "Chip energy per token against speed",
    "ratio_vs_acceptance": "Energy ratio vs plain against acceptance",
    "per_k": "Speed and energy against draft length k",
}


def _ends(r: SummaryRow) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, name in INTERVALS.items():
        found = row_interval(name, r)
        out[f"{field}_low"] = found.low if found is not None else None
        out[f"{field}_high"] = found.high if found is not None else None
    return out


def _records(rows: list[SummaryRow], counts: CountsText | None = None) -> list[dict[str, Any]]:
    counts = counts or {}
    return [
        {
            "prompt": r.prompt,
            "strategy": r.strategy,
            "k": r.k,
            "tokens_per_s": r.tokens_per_s,
            "chip_mj_per_token": r.chip_mj_per_token,
            # The key inside chart specs keeps its first name: specs are embedded in published
            # pages, which must not change.
            "ratio_vs_plain": r.energy_ratio_vs_plain,
            "acceptance": r.acceptance,
            "accepted_of_drafted": counts.get(condition_key(r), "not known"),
            "n": r.n,
            "tokens_per_s_spread": r.tokens_per_s_spread,
            "chip_energy_spread": r.chip_energy_spread,
            **(_ends(r) if r.intervals else {}),
        }
        for r in rows
    ]


def _uncertainty(rows: list[SummaryRow]) -> str:
    """The caption's sentence on what each point is and how far its runs spread."""
    ns = sorted({r.n for r in rows if r.n is not None})
    n = ("n not given" if not ns else f"n = {ns[0]}" if len(ns) == 1
         else f"n = {ns[0]} to {ns[-1]}")
    if any(r.intervals for r in rows):
        return (f" Each point is the median of its runs ({n}); its 95% interval (from 6 runs"
                ") and spread are in the tooltip.")
    if any(r.tokens_per_s_spread is not None or r.chip_energy_spread is not None for r in rows):
        return f" Each point is the mean of its runs ({n}); its spread is in the tooltip."
    return f" Each point is the mean of its runs ({n}); the source published no spread."


def _left_out(rows: list[SummaryRow], kept: list[SummaryRow], why: str) -> str:
    gone = [f"{r.prompt} × {r.strategy}" for r in rows if r not in kept]
    return f" Not plotted ({why}): {', '.join(gone)}." if gone else ""


def _energy_reason(rows: list[SummaryRow]) -> str:
    reasons = sorted({r.chip_mj_per_token_reason for r in rows if r.chip_mj_per_token_reason})
    return energy_reason(reasons, "no chip energy in this results file")


def _tip(field: str, name: str) -> alt.Tooltip:
    """A tooltip line of one registry figure: its label, written as its formatter writes it."""
    fig = FIGURES[name]
    return alt.Tooltip(f"{field}:Q", title=fig.label, format=fig.vega_format)


def _tooltip(intervals: bool = False) -> list[alt.Tooltip]:
    n = FIGURES["n"]
    ends = [alt.Tooltip(f"{field}_{end}:Q", title=f"{FIGURES[name].label}: 95% interval, {end}",
                        format=FIGURES[name].vega_format)
            for field, name in INTERVALS.items() for end in ("low", "high")] if intervals else []
    return [
        alt.Tooltip("prompt:N"),
        alt.Tooltip("strategy:N"),
        _tip("tokens_per_s", "tokens_per_s"),
        _tip("chip_mj_per_token", "chip_mj_per_token"),
        _tip("acceptance", "acceptance"),
        alt.Tooltip("accepted_of_drafted:N", title="accepted/drafted tokens, summed over runs"),
        _tip("ratio_vs_plain", "energy_ratio_vs_plain"),
        alt.Tooltip("n:Q", title=f"{n.label} ({n.unit})"),
        _tip("tokens_per_s_spread", "tokens_per_s_spread"),
        _tip("chip_energy_spread", "chip_energy_spread"),
        *ends,
    ]


def energy_vs_speed(rows: list[SummaryRow], counts: CountsText | None = None) -> Chart:
    title = TITLES["energy_vs_speed"]
    kept = [r for r in rows if r.chip_mj_per_token is not None and r.tokens_per_s is not None]
    if not kept:
        return Chart("energy_vs_speed", title, None,
                     f"Not drawn: it needs chip energy, which is missing ({_energy_reason(rows)}).",
                     "")
    prompts = list(dict.fromkeys(r.prompt for r in kept))
    strategies = list(dict.fromkeys(r.strategy for r in rows))
    chart = (
        alt.Chart(alt.Data(values=_records(kept, counts)))
        .mark_point(filled=True, size=70)
        .encode(
            x=alt.X("tokens_per_s:Q", title=FIGURES["tokens_per_s"].axis,
                    scale=alt.Scale(zero=False)),
            y=alt.Y("chip_mj_per_token:Q", title=FIGURES["chip_mj_per_token"].axis,
                    scale=alt.Scale(zero=False)),
            color=alt.Color("strategy:N", sort=strategies, title="strategy"),
            tooltip=_tooltip(any(r.intervals for r in rows)),
        )
        .properties(width=200, height=200)
        .facet(column=alt.Column("prompt:N", sort=prompts, title="prompt"))
    )
    caption = ("Lower is cheaper, further right is faster; one panel per prompt."
               + _uncertainty(kept) + _left_out(rows, kept, "no chip energy"))
    return Chart("energy_vs_speed", title, chart.to_dict(validate=False), None, caption)


def ratio_vs_acceptance(rows: list[SummaryRow], counts: CountsText | None = None) -> Chart:
    title = TITLES["ratio_vs_acceptance"]
    speculating = [r for r in rows if not is_baseline(r.strategy)]
    if all(r.chip_mj_per_token is None for r in rows):
        return Chart("ratio_vs_acceptance", title, None,
                     f"Not drawn: it needs chip energy, which is missing ({_energy_reason(rows)}).",
                     "")
    kept = [r for r in speculating
            if r.energy_ratio_vs_plain is not None and r.acceptance is not None]
    if not kept:
        return Chart("ratio_vs_acceptance", title, None,
                     "Not drawn: no speculative condition has both an acceptance figure and an "
                     "energy ratio to plain.", "")
    prompts = list(dict.fromkeys(r.prompt for r in rows))
    points = (
        alt.Chart(alt.Data(values=_records(kept, counts)))
        .mark_point(filled=True, size=70)
        .encode(
            x=alt.X("acceptance:Q", title=FIGURES["acceptance"].axis, axis=alt.Axis(format="%"),
                    scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("ratio_vs_plain:Q", title=FIGURES["energy_ratio_vs_plain"].axis),
            color=alt.Color("prompt:N", sort=prompts, title="prompt"),
            shape=alt.Shape("strategy:N", title="strategy"),
            tooltip=_tooltip(any(r.intervals for r in rows)),
        )
    )
    even = (
        alt.Chart(alt.Data(values=[{"ratio_vs_plain": 1.0}]))
        .mark_rule(strokeDash=[4, 4], color="gray")
        .encode(y="ratio_vs_plain:Q")
    )
    layers: list[alt.Chart] = [points]
    whiskers = any(row_interval("energy_ratio_vs_plain", r) is not None for r in kept)
    if whiskers:
        layers.append(
            alt.Chart(alt.Data(values=_records(kept))).mark_rule().encode(
                x="acceptance:Q", y="ratio_vs_plain_low:Q", y2="ratio_vs_plain_high:Q",
                color=alt.Color("prompt:N", sort=prompts, title="prompt")))
    chart = alt.layer(*layers, even).properties(width=420, height=260)
    caption = ("Below the dashed line a strategy used less chip energy per token than plain "
               "decoding." + (" Whiskers: the ratio's Student t 95% interval; one that "
                              "crosses the dashed line is a difference that was not resolved."
                              if whiskers else "") + _uncertainty(kept)
               + _left_out(speculating, kept, "no acceptance or energy ratio"))
    return Chart("ratio_vs_acceptance", title, chart.to_dict(validate=False), None, caption)


def per_k(rows: list[SummaryRow], counts: CountsText | None = None) -> Chart:
    title = TITLES["per_k"]
    drafts = [r for r in rows if r.k is not None and needs_draft(r.strategy)]
    if not drafts:
        return Chart("per_k", title, None,
                     "Not drawn: this results file has no draft-k strategies.", "")
    if len({r.k for r in drafts}) < 2:
        # A trend over k needs two values of k; one would only repeat the results table.
        return Chart("per_k", title, None,
                     f"Not drawn: this results file has one draft length only (k = {drafts[0].k}), "
                     "so there is no trend over k to show.", "")
    prompts = list(dict.fromkeys(r.prompt for r in rows))
    plain = [r for r in rows if is_baseline(r.strategy)]
    color = alt.Color("prompt:N", sort=prompts, title="prompt")
    k_axis = alt.X("k:Q", title="draft length k", scale=alt.Scale(type="log", base=2),
                   axis=alt.Axis(values=sorted({r.k for r in drafts if r.k}), format="d"))

    def panel(
        field: str, label: str, kept: list[SummaryRow], base: list[SummaryRow]
    ) -> alt.LayerChart:
        lines = (
            alt.Chart(alt.Data(values=_records(kept, counts)))
            .mark_line(point=True)
            .encode(x=k_axis, y=alt.Y(f"{field}:Q", title=label), color=color,
                    tooltip=_tooltip())
        )
        layers: list[alt.Chart] = [lines]
        if base:
            layers.append(
                alt.Chart(alt.Data(values=_records(base)))
                .mark_rule(strokeDash=[4, 4])
                .encode(y=f"{field}:Q", color=color)
            )
        chart = alt.layer(*layers).properties(width=260, height=220)
        assert isinstance(chart, alt.LayerChart)  # properties() keeps the chart's kind
        return chart

    with_energy = [r for r in drafts if r.chip_mj_per_token is not None]
    panels = [panel("tokens_per_s", FIGURES["tokens_per_s"].axis, drafts, plain)]
    caption = "Dashed lines: plain decoding for the same prompt." + _uncertainty(drafts)
    if with_energy:
        panels.append(
            panel("chip_mj_per_token", FIGURES["chip_mj_per_token"].axis, with_energy,
                  [r for r in plain if r.chip_mj_per_token is not None])
        )
        caption += _left_out(drafts, with_energy, "no chip energy")
    else:
        caption += (" The energy panel is left out: chip energy is missing "
                    f"({_energy_reason(rows)}).")
    chart = alt.hconcat(*panels) if len(panels) > 1 else panels[0]
    return Chart("per_k", title, chart.to_dict(validate=False), None, caption)


BUILDERS = {"energy_vs_speed": energy_vs_speed, "ratio_vs_acceptance": ratio_vs_acceptance,
            "per_k": per_k}


def build_chart(summary: SummaryFile, kind: str, counts: CountsText | None = None) -> Chart:
    """`counts`: each condition's accepted/drafted tokens, where the runs are at hand."""
    try:
        builder = BUILDERS[kind]
    except KeyError:
        raise ValueError(f"unknown chart {kind!r}; known: {', '.join(KINDS)}") from None
    overlaid = overlaid_levels([r.factors for r in summary.rows], kind, TITLES[kind])
    return overlaid if overlaid is not None else builder(list(summary.rows), counts)
