"""How a figure is written for a reader: one module, so the page, its downloads' labels, the
changes table, a note's figure calls, the generated notes' prose and the terminal summary
agree on what a number looks like.

Every formatter takes None (a missing figure: a dash, never 0) and returns text. The figure
registry (figures.py) names which one each figure uses; the Vega format beside it there
writes the same text in a chart's tooltip.
"""

from __future__ import annotations

from collections.abc import Callable

DASH = "—"  # a missing figure; its reason is in the cell's title


def fmt(value: float | None, digits: int = 1) -> str:
    """A plain number: "12.3"."""
    return DASH if value is None else f"{value:.{digits}f}"


def pct(value: float | None, digits: int = 0) -> str:
    """A fraction as a percentage: 0.734 -> "73%"."""
    return DASH if value is None else f"{value * 100:.{digits}f}%"


def pct1(value: float | None) -> str:
    """A percentage to a tenth: spreads, where 4.5% and 5.4% mean different things."""
    return pct(value, 1)


def ratio(value: float | None) -> str:
    """A ratio to something (plain decoding's figure): "1.23"."""
    return DASH if value is None else f"{value:.2f}"


def times(value: float | None) -> str:
    """A ratio read as "so many times": "1.23×" (the terminal summary, headlines)."""
    return DASH if value is None else f"{value:.2f}×"


def count(value: float | None) -> str:
    """A whole number of things (runs): "3"."""
    return DASH if value is None else f"{value:.0f}"


def span(low: float | None, high: float | None, show: Callable[[float | None], str] = fmt) -> str:
    """An interval's two ends in a figure's own writing: "39.0–42.0" (a dash when missing)."""
    if low is None or high is None:
        return DASH
    if show in (ratio, times) and any(show(v) == show(1.0) and v != 1.0 for v in (low, high)):
        # An end that rounds to 1.00 would hide which side of "no different" it lies on.
        unit = "×" if show is times else ""
        return f"{low:.3f}{unit}–{high:.3f}{unit}"
    return f"{show(low)}–{show(high)}"


def with_interval(value: float | None, low: float | None, high: float | None,
                  show: Callable[[float | None], str] = fmt) -> str:
    """A figure and its 95% interval: "41.5 (39.0–42.0)"; the figure alone without one."""
    if value is None or low is None or high is None:
        return show(value)
    return f"{show(value)} ({span(low, high, show)})"
