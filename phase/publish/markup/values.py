"""A cell's number as its `data-value` (and `data-low`, `data-high`) attribute carries it.

Six significant digits: enough to order any column (the cells show at most four) and to check a
cell against the runs it summarises; the exact values are in the table's CSV and JSON downloads,
next to every table. Full precision (17 digits) made a quarter of a large note's weight.
"""

from __future__ import annotations

SIGNIFICANT = 6


def data_value(value: float | int | str) -> str:
    """`value` at SIGNIFICANT digits, as float() and JavaScript's Number() read it back."""
    if isinstance(value, str):  # already text (a level): kept as it is
        return value
    return f"{float(value):.{SIGNIFICANT}g}"
