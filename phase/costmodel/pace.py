"""The host's pace: how fast the machine ran during a run, against the profile's prices.

A profile prices passes in the minute it was taken. A shared host's speed moves within
minutes: a one-token pass can cost visibly less in plain decoding a minute after the profile,
and two arms doing identical work can differ as much as the prediction's tolerance (examples:
"code auto" against "code auto on plain's text" in bench/results/2026-12-01-epyc-auto.md, and
bench/results/notes-from-docstrings.md). A prediction from a single profile then misses
conditions by the drift, though the curve's shape is right.

Plain decoding reads that drift for free: each of its steps is one c_t(1) pass, and a
campaign interleaves plain runs with the others. A plain run's pace is its median step over
the profile's c_t(1) at the run's fill (1.15: the host ran 15% slower than when profiled).
The pace during any run is that of the plain runs nearest to it in time, one before and one
after (their mean), never its own: a plain run is read by its neighbours.

The pace explains a miss; it does not replace the prediction. Each reading is one run, and
where the host's speed moves run to run, a neighbour's pace carries that noise into the run it
scales, so the paced prediction can miss more often than the profile's own (as it did in
bench/results/2026-12-02-epyc-pace.md: each row's detail gives the profile alone). Scaling
every cost alike leaves their ratios as they were, so `auto`'s choices and the break-even
acceptances do not depend on it. Energy is not paced: a plain run reads time.
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from phase.costmodel.curve import CostTable
from phase.results import Step


@dataclass(frozen=True)
class PaceReading:
    """One plain run's pace: at_s is its midpoint (any clock, the same for every reading)."""

    at_s: float
    pace: float
    key: Hashable  # which run was read: a run's pace never comes from its own reading


def plain_pace(steps: Sequence[Step], table: CostTable) -> float | None:
    """A plain run's median one-token step over the profile's c_t(1) at its fill; None for a
    run without one-token steps (or a profile whose c_t(1) is not positive)."""
    one_token = [s.verify_ms for s in steps if s.proposed == 0]
    if not one_token or table.target(1) <= 0:
        return None
    return statistics.median(one_token) / table.target(1)


def pace_at(readings: Sequence[PaceReading], at_s: float,
            exclude: Hashable | None = None) -> float | None:
    """The pace at a moment: the mean of the nearest reading before it and the nearest after
    (only one where the other side has none), leaving out the reading keyed `exclude`; None
    without any other reading."""
    others = [r for r in readings if r.key != exclude]
    before = [r for r in others if r.at_s <= at_s]
    after = [r for r in others if r.at_s > at_s]
    nearest = ([max(before, key=lambda r: r.at_s)] if before else []) + (
        [min(after, key=lambda r: r.at_s)] if after else [])
    if not nearest:
        return None
    return statistics.fmean(r.pace for r in nearest)
