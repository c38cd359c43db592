"""A serving campaign's charts against load: aggregate throughput per strategy at each
concurrency (the median of its runs, with the order-statistic interval where there are enough
runs for one), and chip energy per finished request over the whole run (the median of its
runs), "not measured" with the runs' reason where no sensor measured it. Drawn only where a
note asks for them (not among `charts()`' kinds), so other notes are unchanged.
Deterministic: the same rows give the same spec."""

from __future__ import annotations

import statistics

import altair as alt

from phase.analysis.figures import MEDIAN_OF_RUNS
from phase.analysis.serving import concurrency_factor, energy_per_request
from phase.publish.charts.spec import Chart
from phase.publish.data.datasets import Dataset

THROUGHPUT = "throughput_vs_concurrency"
ENERGY = "energy_per_request_vs_concurrency"


def _lines(records: list[dict[str, object]], y: str, title: str,
           strategies: list[str]) -> alt.LayerChart | alt.FacetChart:
    base = alt.Chart(alt.Data(values=records)).encode(
        x=alt.X("concurrency:O", title="concurrency (requests decoded together)"),
        color=alt.Color("strategy:N", sort=strategies, title="strategy"))
    line = base.mark_line(point=True).encode(
        y=alt.Y(f"{y}:Q", title=title),
        tooltip=[alt.Tooltip("strategy:N"), alt.Tooltip("concurrency:O"),
                 alt.Tooltip(f"{y}:Q", title=f"{title} ({MEDIAN_OF_RUNS})", format=".3~f"),
                 alt.Tooltip("interval:N", title="95% interval"),
                 alt.Tooltip("n:Q", title="runs")])
    bars = base.mark_rule().encode(y=alt.Y("low:Q"), y2=alt.Y2("high:Q"))
    return alt.layer(bars, line).properties(width=360, height=240)


def throughput_vs_concurrency(ds: Dataset) -> Chart:
    title = "Aggregate throughput against concurrency, per strategy"
    raw = ds.raw
    factor = concurrency_factor(raw) if raw is not None else None
    if raw is None or factor is None:
        return Chart(THROUGHPUT, title, None, "Not drawn: the file has no concurrency factor.",
                     "")
    records: list[dict[str, object]] = []
    for row in ds.summary.rows:
        if factor not in row.factors:
            continue
        iv = row.intervals.get("tokens_per_s")
        records.append({"strategy": row.strategy, "concurrency": row.factors[factor],
                        "tokens_per_s": row.tokens_per_s, "n": row.n,
                        "low": iv.low if iv else row.tokens_per_s,
                        "high": iv.high if iv else row.tokens_per_s,
                        "interval": f"{iv.low:.3g}–{iv.high:.3g}" if iv else
                        "none (too few runs)"})
    strategies = list(dict.fromkeys(str(r["strategy"]) for r in records))
    caption = (f"Each point: a strategy's output tokens per second over every request of a run "
               f"(all requests' tokens over the whole run), the {MEDIAN_OF_RUNS}; the bar is "
               "its order-statistic 95% interval where the runs suffice for one. Where a "
               "speculative line falls to plain decoding's, speculation stops paying.")
    chart = _lines(records, "tokens_per_s", "output tokens/s (aggregate)", strategies)
    return Chart(THROUGHPUT, title, chart.to_dict(validate=False), None, caption)


def energy_per_request_vs_concurrency(ds: Dataset) -> Chart:
    title = "Chip energy per request against concurrency, per strategy"
    raw = ds.raw
    factor = concurrency_factor(raw) if raw is not None else None
    if raw is None or factor is None:
        return Chart(ENERGY, title, None, "Not drawn: the file has no concurrency factor.", "")
    by_id = {r.id: r for r in raw.runs}
    records: list[dict[str, object]] = []
    reasons: set[str] = set()
    for row in ds.summary.rows:
        if factor not in row.factors:
            continue
        found = [energy_per_request(by_id[i], "whole run") for i in row.run_ids if i in by_id]
        values = [v for v, _ in found if v is not None]
        reasons |= {why for v, why in found if v is None and why}
        if values:
            median = statistics.median(values)
            records.append({"strategy": row.strategy, "concurrency": row.factors[factor],
                            "joules": median, "n": len(values), "low": median,
                            "high": median,
                            "interval": "none here: its ratio to plain has one (table)"})
    if not records:
        return Chart(ENERGY, title, None, "Not drawn: energy was not measured: "
                     + ("; ".join(sorted(reasons)) or "no run records energy per request")
                     + ".", "")
    strategies = list(dict.fromkeys(str(r["strategy"]) for r in records))
    caption = ("Each point: a strategy's chip energy over the whole run divided by the "
               f"requests it finished, the {MEDIAN_OF_RUNS}. Its ratio to plain decoding's, "
               "with its interval, is in the crossover table.")
    chart = _lines(records, "joules", "chip J per request (whole run)", strategies)
    return Chart(ENERGY, title, chart.to_dict(validate=False), None, caption)
