"""Charts of the cost model (Altair -> Vega-Lite, drawn like the note's other charts):

* cost_curve        the target's and the draft's cost per pass against tokens per pass (b),
                    one line per profiled KV fill;
* prediction        predicted against measured tokens/s per condition, the diagonal = exact;
* break_even        break-even acceptance α* per k for draft and n-gram proposals, with each
                    speculative condition's measured acceptance at its k;
* auto_choices      the share of `auto`'s steps by proposer and k, per prompt.

A chart whose data is missing (a file without a profile, no auto runs) is not drawn; the
Chart says why. Deterministic, like `charts`: frozen pages stay byte-identical.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from phase.analysis.prediction import AutoShare, BreakEven, ConditionPrediction
from phase.publish.charts.spec import Chart
from phase.results import CostProfile, SummaryRow


def _missing(kind: str, title: str, why: str) -> Chart:
    return Chart(kind, title, None, f"Not drawn: {why}.", "")


def cost_curve(profile: CostProfile | None) -> Chart:
    title = "Cost of one forward pass against the tokens it carries"
    if profile is None:
        return _missing("cost_curve", title, "this results file has no cost profile")
    records: list[dict[str, Any]] = []
    for point in profile.points:
        fill = f"KV {point.kv_tokens}" + (f" ({point.prompt})" if point.prompt else "")
        for role, costs in (("target", point.target), ("draft", point.draft)):
            records.extend({"b": c.tokens, "ms": c.ms, "spread": c.ms_spread, "model": role,
                            "fill": fill} for c in costs)
    chart = (
        alt.Chart(alt.Data(values=records))
        .mark_line(point=True)
        .encode(
            x=alt.X("b:Q", title="tokens in the pass (b)"),
            y=alt.Y("ms:Q", title="ms per pass (median of blocks)"),
            color=alt.Color("model:N", title="model"),
            strokeDash=alt.StrokeDash("fill:N", title="KV fill"),
            tooltip=[alt.Tooltip("model:N"), alt.Tooltip("fill:N"), alt.Tooltip("b:Q"),
                     alt.Tooltip("ms:Q", format=".2f"),
                     alt.Tooltip("spread:Q", format=".1%", title="spread")],
        )
        .properties(width=420, height=260)
    )
    caption = ("A plain step is one pass of b = 1; verifying k proposals is one pass of "
               "b = k + 1; drafting k tokens costs the draft's passes on top. Where the "
               "target's line is nearly straight, every verified row costs almost a plain "
               "step.")
    return Chart("cost_curve", title, chart.to_dict(), None, caption)


def prediction(rows: list[ConditionPrediction]) -> Chart:
    title = "Predicted against measured speed"
    if not rows:
        return _missing("prediction", title, "this results file has no cost profile to "
                        "predict from")
    records = [{"prompt": r.prompt, "strategy": r.strategy,
                "measured": r.measured_tokens_per_s, "predicted": r.predicted_tokens_per_s,
                "error": r.error} for r in rows]
    top = max(max(r.measured_tokens_per_s, r.predicted_tokens_per_s) for r in rows) * 1.05
    points = (
        alt.Chart(alt.Data(values=records))
        .mark_point(filled=True, size=70)
        .encode(
            x=alt.X("measured:Q", title="measured tokens/s", scale=alt.Scale(domain=[0, top])),
            y=alt.Y("predicted:Q", title="predicted tokens/s", scale=alt.Scale(domain=[0, top])),
            color=alt.Color("prompt:N", title="prompt"),
            shape=alt.Shape("strategy:N", title="strategy"),
            tooltip=[alt.Tooltip("prompt:N"), alt.Tooltip("strategy:N"),
                     alt.Tooltip("measured:Q", format=".1f"),
                     alt.Tooltip("predicted:Q", format=".1f"),
                     alt.Tooltip("error:Q", format="+.1%")],
        )
    )
    diagonal = (
        alt.Chart(alt.Data(values=[{"measured": 0, "predicted": 0},
                                   {"measured": top, "predicted": top}]))
        .mark_line(strokeDash=[4, 4], color="gray")
        .encode(x="measured:Q", y="predicted:Q")
    )
    chart = alt.layer(diagonal, points).properties(width=320, height=320)
    return Chart("prediction", title, chart.to_dict(), None,
                 "On the dashed line the cost model predicted the speed exactly.")


def break_even(rows: list[BreakEven], summary: list[SummaryRow]) -> Chart:
    title = "Break-even acceptance per k, and the acceptance measured"
    if not rows:
        return _missing("break_even", title, "this results file has no cost profile")
    lines = [{"prompt": r.prompt, "k": r.k, "proposer": who, "alpha": a}
             for r in rows for who, a in (("draft", r.draft), ("ngram", r.ngram))
             if a is not None]
    measured = [{"prompt": s.prompt, "k": s.k, "proposer": s.strategy.split("-", 1)[0],
                 "alpha": s.acceptance, "strategy": s.strategy}
                for s in summary
                if s.k is not None and s.acceptance is not None
                and s.strategy.startswith(("draft", "ngram"))]
    never = sorted({f"{r.prompt}: {who} at k = {r.k}" for r in rows
                    for who, a in (("draft", r.draft), ("ngram", r.ngram))
                    if a is None and (who == "ngram" or r.has_draft)})
    k_axis = alt.X("k:Q", title="tokens proposed per step (k)",
                   scale=alt.Scale(type="log", base=2))
    alpha_axis = alt.Y("alpha:Q", title="acceptance", axis=alt.Axis(format="%"),
                       scale=alt.Scale(domain=[0, 1]))
    layers = []
    if lines:
        layers.append(alt.Chart(alt.Data(values=lines)).mark_line(point=True).encode(
            x=k_axis, y=alpha_axis, color=alt.Color("proposer:N", title="break-even"),
            strokeDash=alt.StrokeDash("prompt:N", title="prompt")))
    if measured:
        layers.append(alt.Chart(alt.Data(values=measured)).mark_point(size=80, filled=True)
                      .encode(x=k_axis, y=alpha_axis, shape=alt.Shape("prompt:N"),
                              color=alt.Color("proposer:N"),
                              tooltip=[alt.Tooltip("prompt:N"), alt.Tooltip("strategy:N"),
                                       alt.Tooltip("alpha:Q", format=".0%")]))
    if not layers:
        return _missing("break_even", title, "no proposer can beat plain decoding at any k "
                        "here, and no speculative condition has an acceptance")
    chart = alt.layer(*layers).properties(width=420, height=260)
    caption = ("Lines: the i.i.d. acceptance above which proposing k tokens beats plain "
               "decoding on this host. Points: each condition's measured acceptance.")
    if never:
        caption += " No acceptance, not even 100%, pays for: " + "; ".join(never) + "."
    return Chart("break_even", title, chart.to_dict(), None, caption)


def auto_choices(rows: list[AutoShare]) -> Chart:
    title = "What auto chose, per prompt"
    if not rows:
        return _missing("auto_choices", title, "this results file has no auto runs")
    records = [{"prompt": r.prompt, "choice": "plain step" if r.proposer == "none" else
                f"{r.proposer} k={r.k}", "share": r.share, "steps": r.steps} for r in rows]
    chart = (
        alt.Chart(alt.Data(values=records))
        .mark_bar()
        .encode(
            y=alt.Y("prompt:N", title="prompt"),
            x=alt.X("share:Q", title="share of auto's steps", axis=alt.Axis(format="%"),
                    stack="normalize"),
            color=alt.Color("choice:N", title="choice"),
            tooltip=[alt.Tooltip("prompt:N"), alt.Tooltip("choice:N"),
                     alt.Tooltip("share:Q", format=".1%"), alt.Tooltip("steps:Q")],
        )
        .properties(width=420, height=30 * len({r.prompt for r in rows}) + 40)
    )
    return Chart("auto_choices", title, chart.to_dict(), None,
                 "Each step auto chose a plain step, an n-gram proposal or a draft of k "
                 "tokens, whichever it expected to gain the most over plain decoding.")
