"""What a batched step has cost in this run: a line through the measured (rows, ms) of its
own target passes, for pricing `auto`'s proposals while serving (AutoProposer.at_batch).

Why not the profile alone: the cost profile times one sequence's passes of 1..17 rows, a few
blocks each. On a 2-core VM its larger passes were non-monotone (at KV 130: 9 rows 393 ms,
10 rows 388 ms, 12 rows 387 ms, 13 rows 473 ms), so the difference of two neighbouring
points, which is what a proposal adds to a batched pass, came out at 9-20 ms a row where the
serving runs' own steps showed about 33 ms (results/serving-x86_64-2c-2026-12-07.json).
Each step of a serving run is a measurement of exactly the pass auto prices, at the batch
sizes it meets, so once enough steps with different row counts are in, their fitted slope
is the better price of one more row.
"""

from __future__ import annotations

from collections import deque

import numpy as np

# Steps a fit needs, and the spread of row counts it needs among them (a line through
# nearly one x has no slope to speak of).
MIN_STEPS = 12
MIN_SPAN = 2
# The most recent steps the fit reads: the machine's pace drifts over a run.
WINDOW = 256


class StepPrices:
    """The run's own step costs by rows in the pass; `line` once they determine one."""

    def __init__(self, min_steps: int = MIN_STEPS, min_span: int = MIN_SPAN,
                 window: int = WINDOW) -> None:
        self._steps: deque[tuple[int, float]] = deque(maxlen=window)
        self.min_steps = min_steps
        self.min_span = min_span

    def observe(self, rows: int, ms: float) -> None:
        """One step's target pass (with its verification) of `rows` rows took `ms`."""
        if rows >= 1 and ms > 0 and np.isfinite(ms):
            self._steps.append((rows, ms))

    def line(self) -> tuple[float, float] | None:
        """(ms of a pass's fixed part, ms per row) by least squares, the slope never below
        zero; None until `min_steps` steps span at least `min_span` row counts."""
        if len(self._steps) < self.min_steps:
            return None
        rows = np.array([r for r, _ in self._steps], dtype=float)
        if rows.max() - rows.min() < self.min_span:
            return None
        ms = np.array([m for _, m in self._steps], dtype=float)
        slope = max(float(np.polyfit(rows, ms, 1)[0]), 0.0)
        # The line through the mean step (least squares' own intercept where the slope was
        # not clamped; with it clamped at zero, the mean).
        fixed = float(ms.mean() - slope * rows.mean())
        return max(fixed, 0.0), slope

    def pass_ms(self, rows: int) -> float | None:
        """A pass of `rows` rows by the fitted line, or None before there is one."""
        line = self.line()
        return None if line is None else line[0] + line[1] * rows
