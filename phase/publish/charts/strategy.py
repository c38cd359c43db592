"""Charts that answer a note's question — is speculation worth it here, and why — per results file:

* cost_per_token       CPU ms per generated token by strategy, and chip mJ per token where
                       energy was measured (bars: median of runs; whiskers: its order-statistic
                       95% interval, from 6 runs);
* speed_vs_acceptance  speed vs plain against acceptance, with the break-even line at 1;
* time_per_token       where each generated token's time goes: drafting vs verifying, from
                       the per-step trace;
* step_cost            per step: ms per drafted token against plain's ms per token, and the
                       verify pass's time against how many tokens it scores.

Every point or bar carries n, its 95% interval and its spread (tooltip, whiskers, caption).
A chart whose data is missing is replaced by a sentence saying why, never drawn with zeros.
Deterministic: the same inputs give byte-identical specs.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from phase.analysis import FIGURES, PLAIN, Condition, Figure, condition_key, row_value
from phase.analysis.counts import row_acceptance_counts
from phase.analysis.figures import STATISTICS, row_interval
from phase.publish.charts.spec import STRATEGY_KINDS, Chart, energy_reason, overlaid_levels
from phase.publish.data.datasets import Dataset
from phase.publish.numbers.spreads import ConditionSpread, condition_spreads, unstable_baselines
from phase.publish.numbers.steps import NO_TRACE, StepCost, pooled_median, step_costs
from phase.results import SummaryRow

KINDS = STRATEGY_KINDS
WHISKERS = "whiskers: its order-statistic 95% interval (medians of 6 or more runs)"


# Each chart's title, also where a sentence stands in for it.
TITLES = {
    "cost_per_token": "CPU time and energy per generated token, by strategy",
    "speed_vs_acceptance": "Speed vs plain against acceptance",
    "time_per_token": "Where each generated token's time goes: drafting and verifying",
    "step_cost": "Per-step cost: drafting a token, verifying a batch",
}


def _order(ds: Dataset) -> tuple[list[str], list[str]]:
    rows = ds.summary.rows
    return (list(dict.fromkeys(r.prompt for r in rows)),
            list(dict.fromkeys(r.strategy for r in rows)))


def _interval_fields(prefix: str, name: str, rows: list[SummaryRow], row: SummaryRow,
                     spread: ConditionSpread | None) -> dict[str, Any]:
    """A figure's median, the ends of its 95% interval and its runs' spread; without
    an interval (one run, or a summary without runs), the figure alone."""
    found = row_interval(name, row)
    per_run = spread.figures.get(name) if spread is not None else None
    return {prefix: row_value(name, rows, row),
            f"{prefix}_low": found.low if found is not None else None,
            f"{prefix}_high": found.high if found is not None else None,
            f"{prefix}_spread": per_run.relative if per_run is not None else None}


def _n_text(spreads: dict[Condition, ConditionSpread]) -> str:
    ns = sorted({c.n for c in spreads.values() if c.n is not None})
    if not ns:
        return "n not given"
    return f"n = {ns[0]} runs each" if len(ns) == 1 else f"n = {ns[0]} to {ns[-1]} runs"


def _bars(records: list[dict[str, Any]], field: str, fig: Figure, prompts: list[str],
          strategies: list[str], with_range: bool) -> alt.LayerChart:
    base = alt.Chart(alt.Data(values=records)).encode(
        x=alt.X("strategy:N", sort=strategies, title="strategy"),
        xOffset=alt.XOffset("prompt:N", sort=prompts),
        color=alt.Color("prompt:N", sort=prompts, title="prompt"),
    )
    spread, n = FIGURES["spread"], FIGURES["n"]
    tooltip = [alt.Tooltip("prompt:N"), alt.Tooltip("strategy:N"),
               alt.Tooltip(f"{field}:Q", title=f"{fig.axis} (median)", format=fig.vega_format),
               alt.Tooltip(f"{field}_low:Q", title="95% interval, low", format=fig.vega_format),
               alt.Tooltip(f"{field}_high:Q", title="95% interval, high",
                           format=fig.vega_format),
               alt.Tooltip(f"{field}_spread:Q", title=spread.label, format=spread.vega_format),
               alt.Tooltip("n:Q", title=n.label)]
    layers: list[alt.Chart] = [
        base.mark_bar().encode(y=alt.Y(f"{field}:Q", title=fig.axis), tooltip=tooltip)]
    if with_range:
        layers.append(base.mark_rule(color="black").encode(
            y=f"{field}_low:Q", y2=f"{field}_high:Q", tooltip=tooltip))
    chart = alt.layer(*layers).properties(width=330, height=220)
    assert isinstance(chart, alt.LayerChart)  # properties() keeps the chart's kind
    return chart


def cost_per_token(ds: Dataset) -> Chart:
    title = TITLES["cost_per_token"]
    spreads = condition_spreads(ds)
    prompts, strategies = _order(ds)
    raw = any(r.intervals for r in ds.summary.rows)
    records = []
    rows = ds.summary.rows
    for row in rows:
        c = spreads[condition_key(row)]
        records.append({
            "prompt": row.prompt, "strategy": row.strategy, "n": row.n,
            **_interval_fields("cpu", "cpu_ms_per_token", rows, row, c),
            **_interval_fields("chip", "chip_mj_per_token", rows, row, c),
        })
    panels = []
    missing = []
    cpu = [r for r in records if r["cpu"] is not None]
    chip = [r for r in records if r["chip"] is not None]
    if cpu:
        panels.append(_bars(cpu, "cpu", FIGURES["cpu_ms_per_token"], prompts, strategies, raw))
    else:
        missing.append("CPU time is not in this file")
    if chip:
        panels.append(_bars(chip, "chip", FIGURES["chip_mj_per_token"], prompts, strategies,
                            raw))
    else:
        reasons = sorted({r.chip_mj_per_token_reason for r in ds.summary.rows
                          if r.chip_mj_per_token_reason})
        missing.append("chip energy is missing (" + energy_reason(reasons) + ")")
    if not panels:
        return Chart("cost_per_token", title, None, "Not drawn: " + "; ".join(missing) + ".", "")
    chart = alt.hconcat(*panels) if len(panels) > 1 else panels[0]
    spread = WHISKERS if raw else "no intervals: the runs are not in this file, so no whiskers"
    caption = f"Bars: median of the runs ({_n_text(spreads)}); {spread}. Lower is cheaper."
    if missing:
        caption += " Not shown: " + "; ".join(missing) + "."
    return Chart("cost_per_token", title, chart.to_dict(validate=False), None, caption)


def _speed_tooltip() -> list[alt.Tooltip]:
    accepted, vs = FIGURES["acceptance"], FIGURES["speed_vs_plain"]
    return [alt.Tooltip("prompt:N"), alt.Tooltip("strategy:N"),
            alt.Tooltip("acceptance:Q", title=f"{accepted.label} (median of runs)",
                        format=accepted.vega_format),
            alt.Tooltip("accepted_of_drafted:N", title="accepted/drafted tokens, summed over runs"),
            alt.Tooltip("speed:Q", title=f"{vs.label} ({STATISTICS['speed_vs_plain']})",
                        format=vs.vega_format),
            alt.Tooltip("speed_low:Q", title="95% interval, low", format=vs.vega_format),
            alt.Tooltip("speed_high:Q", title="95% interval, high", format=vs.vega_format),
            alt.Tooltip("n:Q", title=FIGURES["n"].label),
            alt.Tooltip("baseline:N", title="plain baseline")]


def speed_vs_acceptance(ds: Dataset) -> Chart:
    title = TITLES["speed_vs_acceptance"]
    spreads = condition_spreads(ds)
    prompts, strategies = _order(ds)
    unstable = unstable_baselines(ds)
    rows = ds.summary.rows
    records = []
    for row in rows:
        speed = row_value("speed_vs_plain", rows, row)
        # Not a point: plain itself, no acceptance, or no speed to set against plain's (0 too).
        if row.strategy == PLAIN or row.acceptance is None or not speed:
            continue
        c = spreads[condition_key(row)]
        counts = row_acceptance_counts(ds.raw, row)
        records.append({
            "prompt": row.prompt, "strategy": row.strategy, "n": row.n,
            "acceptance": row.acceptance,
            "accepted_of_drafted": counts.text if counts is not None else "not known",
            **_interval_fields("speed", "speed_vs_plain", rows, row, c),
            "baseline": "unstable" if row.prompt in unstable else "stable",
        })
    if not records:
        return Chart("speed_vs_acceptance", title, None,
                     "Not drawn: no speculative condition has both an acceptance figure and a "
                     "plain baseline to compare its speed with.", "")
    accepted, vs = FIGURES["acceptance"], FIGURES["speed_vs_plain"]
    tooltip = _speed_tooltip()
    # The records once, on the layer: each sub-layer reads them (not a copy per layer).
    base = alt.Chart().encode(
        x=alt.X("acceptance:Q", title=accepted.axis, axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("prompt:N", sort=prompts, title="prompt"),
        tooltip=tooltip,
    )
    points = base.mark_point(filled=True, size=70).encode(
        y=alt.Y("speed:Q", title=vs.axis),
        shape=alt.Shape("strategy:N", sort=strategies, title="strategy"))
    layers: list[alt.Chart] = [points]
    whiskers = any(r["speed_low"] is not None for r in records)
    if whiskers:
        layers.append(base.mark_rule().encode(y="speed_low:Q", y2="speed_high:Q"))
    layers.append(alt.Chart(alt.Data(values=[{"even": 1.0}]))
                  .mark_rule(strokeDash=[4, 4], color="gray").encode(y="even:Q"))
    chart = alt.layer(*layers, data=alt.Data(values=records)).properties(width=420, height=260)
    caption = ("Above the dashed line a strategy decoded faster than plain decoding on the same "
               f"prompt. Points: the {STATISTICS['speed_vs_plain']} "
               f"({_n_text(spreads)}); "
               + (f"{WHISKERS}. A whisker that crosses the dashed line is a difference from "
                  "plain decoding that was not resolved."
                  if whiskers else "no intervals: the runs are not in this file, so no "
                  "whiskers."))
    if unstable:
        caption += (" Plain decoding was itself unstable on "
                    + ", ".join(f"{p} ({m})"
                                for p, m in sorted(unstable.items()))
                    + ": ratios on those prompts are at least that uncertain.")
    return Chart("speed_vs_acceptance", title, chart.to_dict(validate=False), None, caption)


def _no_trace(ds: Dataset, kind: str, title: str, costs: list[StepCost]) -> Chart | None:
    if ds.raw is None:
        return Chart(kind, title, None, f"Not drawn: {NO_TRACE}.", "")
    if not costs:
        return Chart(kind, title, None, "Not drawn: no run in this file recorded its steps.", "")
    return None


def time_per_token(ds: Dataset) -> Chart:
    title = TITLES["time_per_token"]
    costs = step_costs(ds)
    missing = _no_trace(ds, "time_per_token", title, costs)
    if missing is not None:
        return missing
    prompts, strategies = _order(ds)
    records = []
    for c in costs:
        for part, s in (("drafting", c.propose_ms_per_token), ("verifying", c.verify_ms_per_token)):
            records.append({"prompt": c.prompt, "strategy": c.strategy, "part": part,
                            "ms": s.mean, "low": s.low, "high": s.high, "n": c.n_runs})
    chart = (
        alt.Chart(alt.Data(values=records))
        .mark_bar()
        .encode(
            x=alt.X("strategy:N", sort=strategies, title="strategy"),
            y=alt.Y("ms:Q", stack="zero", title="ms per generated token"),
            color=alt.Color("part:N", sort=["drafting", "verifying"], title="time spent",
                            scale=alt.Scale(range=["#e45756", "#4c78a8"])),
            order=alt.Order("part:N", sort="descending"),
            tooltip=[alt.Tooltip("prompt:N"), alt.Tooltip("strategy:N"), alt.Tooltip("part:N"),
                     alt.Tooltip("ms:Q", title="ms per token (mean)", format=".1f"),
                     alt.Tooltip("low:Q", title="lowest run", format=".1f"),
                     alt.Tooltip("high:Q", title="highest run", format=".1f"),
                     alt.Tooltip("n:Q", title="n")],
        )
        .properties(width=200, height=220)
        .facet(column=alt.Column("prompt:N", sort=prompts, title="prompt"))
    )
    n = sorted({c.n_runs for c in costs})
    caption = ("Each bar: the decode time of a run, summed over its steps and divided by the "
               f"tokens it generated; mean of n = {n[0]}{'' if len(n) == 1 else f' to {n[-1]}'} "
               "runs (lowest and highest run in the tooltip). Plain decoding only verifies; a "
               "speculative strategy beats it only if its two parts together are shorter.")
    return Chart("time_per_token", title, chart.to_dict(validate=False), None, caption)


def step_cost(ds: Dataset) -> Chart:
    title = TITLES["step_cost"]
    costs = step_costs(ds)
    missing = _no_trace(ds, "step_cost", title, costs)
    if missing is not None:
        return missing
    assert ds.raw is not None
    prompts, strategies = _order(ds)
    plain_ms, plain_steps = pooled_median(ds.raw, "plain_ms_per_token")
    drafts = [c for c in costs if c.propose_ms_per_drafted is not None]
    if not drafts or plain_ms is None:
        return Chart("step_cost", title, None, "Not drawn: it needs plain runs and runs that "
                     "drafted tokens, and this file lacks one of them.", "")
    color = alt.Color("prompt:N", sort=prompts, title="prompt")
    drafted = FIGURES["propose_ms_per_drafted"]
    unit = [{"prompt": c.prompt, "strategy": c.strategy, "ms": c.propose_ms_per_drafted,
             "steps": c.n_steps, "n": c.n_runs} for c in drafts]
    left = alt.layer(
        alt.Chart(alt.Data(values=unit)).mark_point(filled=True, size=70).encode(
            x=alt.X("strategy:N", sort=[s for s in strategies if s != PLAIN], title="strategy"),
            xOffset=alt.XOffset("prompt:N", sort=prompts),
            y=alt.Y("ms:Q", title=f"{drafted.label} (median step)"),
            color=color,
            tooltip=[alt.Tooltip("prompt:N"), alt.Tooltip("strategy:N"),
                     alt.Tooltip("ms:Q", title=drafted.label, format=drafted.vega_format),
                     alt.Tooltip("steps:Q", title="steps"), alt.Tooltip("n:Q", title="runs")]),
        alt.Chart(alt.Data(values=[{"ms": plain_ms}])).mark_rule(
            strokeDash=[4, 4], color="gray").encode(y="ms:Q"),
    ).properties(width=300, height=220)
    batch = [{"prompt": c.prompt, "strategy": c.strategy, "tokens": c.tokens_per_verify or 1.0,
              "ms": c.verify_ms_per_step, "steps": c.n_steps, "n": c.n_runs}
             for c in costs if c.verify_ms_per_step is not None]
    right = alt.Chart(alt.Data(values=batch)).mark_point(filled=True, size=70).encode(
        x=alt.X("tokens:Q", title="tokens scored per verify pass (median step)"),
        y=alt.Y("ms:Q", title="verify ms per step (median)"),
        color=color,
        shape=alt.Shape("strategy:N", sort=strategies, title="strategy"),
        tooltip=[alt.Tooltip("prompt:N"), alt.Tooltip("strategy:N"),
                 alt.Tooltip("tokens:Q", title="tokens per pass", format=".0f"),
                 alt.Tooltip("ms:Q", title="verify ms", format=".1f"),
                 alt.Tooltip("steps:Q", title="steps"), alt.Tooltip("n:Q", title="runs")],
    ).properties(width=300, height=220)
    chart = alt.hconcat(left, right)
    caption = (f"Left: the draft's time per proposed token; dashed line: plain decoding's "
               f"median time per token ({plain_ms:.1f} ms over {plain_steps} steps). Right: a "
               "verify pass's time against the tokens it scores (plain decoding scores one). "
               "Medians over every step of every run of a condition; steps and runs in the "
               "tooltip.")
    return Chart("step_cost", title, chart.to_dict(validate=False), None, caption)


BUILDERS = {"cost_per_token": cost_per_token, "speed_vs_acceptance": speed_vs_acceptance,
            "time_per_token": time_per_token, "step_cost": step_cost}


def build_strategy_chart(ds: Dataset, kind: str) -> Chart:
    try:
        builder = BUILDERS[kind]
    except KeyError:
        raise ValueError(f"unknown chart {kind!r}; known: {', '.join(KINDS)}") from None
    overlaid = overlaid_levels([r.factors for r in ds.summary.rows], kind, TITLES[kind])
    return overlaid if overlaid is not None else builder(ds)
