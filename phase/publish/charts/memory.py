"""The memory study's roofline-style chart (Altair -> Vega-Lite, drawn like the note's other
charts): each condition's tokens/s against the bytes a generated token reads (an estimate),
and per thread count the line the measured bandwidth allows, tokens/s = bandwidth / bytes.

A point on its thread count's line streams at the measured bandwidth; below it, decoding
uses a smaller share of it. Deterministic, like the other charts: frozen pages stay
byte-identical.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from phase.analysis.figures import FIGURES, memory_value
from phase.analysis.memory import MemoryView
from phase.publish.charts.spec import Chart

TITLE = "Tokens/s against bytes read per token, with the measured bandwidth"
_LINE_POINTS = 24


def _line(gb_s: float, lo: float, hi: float, threads: int) -> list[dict[str, Any]]:
    """tokens/s = bandwidth / bytes, sampled evenly on a log scale between lo and hi MB."""
    step = (hi / lo) ** (1 / (_LINE_POINTS - 1))
    return [{"mb": lo * step ** i, "tps": gb_s * 1e3 / (lo * step ** i),
             "threads": f"{threads} thread(s): {gb_s:.1f} GB/s measured"}
            for i in range(_LINE_POINTS)]


def roofline(views: Sequence[MemoryView]) -> Chart:
    points: list[dict[str, Any]] = [
        {"mb": mb, "tps": v.row.tokens_per_s, "format": v.label, "threads": f"{v.threads}",
         "fill": f"fill {v.fill}", "share": memory_value("bandwidth_share", v)}
        for v in views
        if (mb := memory_value("mb_per_token", v)) is not None and v.row.tokens_per_s is not None]
    if not points:
        return Chart("roofline", TITLE, None, "Not drawn: no condition has both tokens/s and "
                     "a bytes-per-token estimate (a campaign without measure_bandwidth).", "")
    lo = min(p["mb"] for p in points) * 0.8
    hi = max(p["mb"] for p in points) * 1.25
    seen: dict[int, float] = {}
    for v in views:
        if v.bandwidth is not None:
            seen[v.threads] = v.bandwidth.best_gb_s
    lines = [r for t, gb in sorted(seen.items()) for r in _line(gb, lo, hi, t)]
    x = alt.X("mb:Q", title=FIGURES["mb_per_token"].axis, scale=alt.Scale(type="log"))
    y = alt.Y("tps:Q", title="tokens/s (median of repeats)", scale=alt.Scale(type="log"))
    dots = (
        alt.Chart(alt.Data(values=points))
        .mark_point(filled=True, size=70)
        .encode(x=x, y=y, color=alt.Color("format:N", title="format", sort=None),
                shape=alt.Shape("fill:N", title="context fill"),
                tooltip=[alt.Tooltip("format:N"), alt.Tooltip("threads:N"),
                         alt.Tooltip("fill:N"), alt.Tooltip("mb:Q", format=".1f", title="MB/token"),
                         alt.Tooltip("tps:Q", format=".1f", title="tokens/s"),
                         alt.Tooltip("share:Q", format=".0%", title="share of measured")])
    )
    layers: list[Any] = [dots]
    if lines:
        layers.insert(0, alt.Chart(alt.Data(values=lines)).mark_line(strokeDash=[4, 3])
                      .encode(x=x, y=y, detail="threads:N",
                              color=alt.value("#888"),
                              tooltip=[alt.Tooltip("threads:N", title="bandwidth line")]))
    chart = alt.layer(*layers).properties(width=460, height=300)
    caption = ("Each dashed line is tokens/s = measured bandwidth / bytes per token at one "
               "thread count (the best of phase's STREAM-style copy and triad there): a "
               "condition on its line streams its bytes at the measured bandwidth. Bytes per "
               "token are an estimate from the GGUF header (weights + KV cache read).")
    return Chart("roofline", TITLE, chart.to_dict(), None, caption)
