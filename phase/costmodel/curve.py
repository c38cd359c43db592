"""Cost curves from a measured profile: the cost of one pass by batch size, at a KV fill.

A profile measures passes at a few batch sizes and a few KV fills (`results.CostProfile`).
Between measured batch sizes the cost is interpolated linearly; beyond the largest it is
extended along the line through the last two points (a catch-up batch of the draft model can
be longer than any profiled one). Between KV fills it is interpolated linearly in position,
and held flat outside the profiled range: attention's share of a pass grows linearly with
the cached positions, and a run's mean step cost is its cost at its middle position.

`CostTable` is what a decision or a prediction needs for one run: the target's and the
draft's curves and one lookup's cost, all in one unit — milliseconds, or joules of one sensor
for the energy objective.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from phase.base.errors import PhaseError
from phase.results import CostProfile, PassCost, ProfilePoint

Objective = Literal["time", "energy"]
OBJECTIVES: tuple[Objective, ...] = ("time", "energy")


class NoCost(PhaseError):
    """The profile lacks a figure a cost table needs (no energy for the energy objective)."""


@dataclass(frozen=True)
class Curve:
    """Cost of one pass of b tokens, from measured (b, cost) points (b ascending, unique)."""

    sizes: tuple[int, ...]
    costs: tuple[float, ...]
    # Costs already read, by batch size: a run's steps ask for a few sizes many times over,
    # and validation prices every run of a file several times (not part of the value).
    _read: dict[int, float] = field(default_factory=dict, init=False, repr=False,
                                    compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.sizes or len(self.sizes) != len(self.costs):
            raise ValueError("a curve needs as many costs as sizes, and at least one")
        if any(b >= c for b, c in zip(self.sizes, self.sizes[1:], strict=False)):
            raise ValueError(f"batch sizes must ascend without repeats: {self.sizes}")

    def __call__(self, b: int) -> float:
        cost = self._read.get(b)
        if cost is None:
            cost = self._read[b] = self._interpolate(b)
        return cost

    def _interpolate(self, b: int) -> float:
        sizes, costs = self.sizes, self.costs
        if len(sizes) == 1:  # one measured size: cost in proportion to the tokens
            return costs[0] * b / sizes[0]
        if b <= sizes[0]:
            return costs[0]
        i = bisect.bisect_left(sizes, b)
        if i < len(sizes) and sizes[i] == b:
            return costs[i]
        lo = min(i - 1, len(sizes) - 2)  # beyond the end: the last segment, extended
        b0, b1, c0, c1 = sizes[lo], sizes[lo + 1], costs[lo], costs[lo + 1]
        return max(0.0, c0 + (c1 - c0) * (b - b0) / (b1 - b0))


def blend(a: Curve, b: Curve, weight_b: float) -> Curve:
    """(1 - w)·a + w·b at the batch sizes both curves were measured at."""
    sizes = tuple(s for s in a.sizes if s in set(b.sizes))
    if not sizes:
        raise ValueError("the two curves share no batch size")
    return Curve(sizes, tuple((1 - weight_b) * a(s) + weight_b * b(s) for s in sizes))


# Whose joules count: one sensor, or several whose energy is summed (the chip energy of two
# sockets or two GPUs, ResultsFile.primary_energy); None for the default.
Sensors = str | Sequence[str] | None


def sensor_names(sensors: Sensors) -> tuple[str, ...]:
    if sensors is None:
        return ()
    return (sensors,) if isinstance(sensors, str) else tuple(sensors)


def _curve(passes: Sequence[PassCost], objective: Objective, sensors: Sensors) -> Curve | None:
    """The curve of one point's passes, or None when a pass lacks the figure."""
    ordered = sorted(passes, key=lambda p: p.tokens)
    if not ordered:
        return None
    if objective == "time":
        return Curve(tuple(p.tokens for p in ordered), tuple(p.ms for p in ordered))
    names = sensor_names(sensors)
    if not names or any(n not in p.energy_j for p in ordered for n in names):
        return None
    return Curve(tuple(p.tokens for p in ordered),
                 tuple(sum(p.energy_j[n] for n in names) for p in ordered))


def _at_fill(points: Sequence[ProfilePoint], kv_tokens: int, role: str,
             objective: Objective, sensor: Sensors) -> Curve | None:
    """The role's curve at `kv_tokens`, interpolated between the nearest profiled fills."""
    curves = [(p.kv_tokens, c) for p in sorted(points, key=lambda p: p.kv_tokens)
              if (c := _curve(getattr(p, role), objective, sensor)) is not None]
    if not curves:
        return None
    fills = [f for f, _ in curves]
    if kv_tokens <= fills[0]:
        return curves[0][1]
    if kv_tokens >= fills[-1]:
        return curves[-1][1]
    i = bisect.bisect_right(fills, kv_tokens)
    (f0, c0), (f1, c1) = curves[i - 1], curves[i]
    return blend(c0, c1, (kv_tokens - f0) / (f1 - f0))


def points_at_fill(points: Sequence[ProfilePoint], kv_tokens: int) -> list[int]:
    """Indices (in `points`) of the profiled fills a cost at `kv_tokens` is read from: the
    nearest one outside their range, the two it lies between inside it (as `_at_fill` blends
    them). A page links a priced figure to these points' recorded blocks."""
    order = sorted(range(len(points)), key=lambda i: points[i].kv_tokens)
    fills = [points[i].kv_tokens for i in order]
    if kv_tokens <= fills[0]:
        return [order[0]]
    if kv_tokens >= fills[-1]:
        return [order[-1]]
    i = bisect.bisect_right(fills, kv_tokens)
    return [order[i - 1]] if fills[i - 1] == kv_tokens else [order[i - 1], order[i]]


def energy_sensors(profile: CostProfile) -> list[str]:
    """Sensors that have energy for every target pass of every point, in first-seen order."""
    names: list[str] = []
    for point in profile.points:
        for cost in point.target:
            names.extend(n for n in cost.energy_j if n not in names)
    return [n for n in names
            if all(n in c.energy_j for p in profile.points for c in p.target)]


@dataclass(frozen=True)
class CostTable:
    """Everything one run's decisions or predictions cost, in `unit` (ms or J)."""

    unit: str
    target: Curve
    draft: Curve | None
    lookup: float  # one n-gram lookup
    kv_tokens: int

    def plain(self) -> float:
        """One plain step: a one-token target pass."""
        return self.target(1)

    def draft_step(self, k: int, feed: int = 1) -> float:
        """Drafting k tokens: one pass over the `feed` tokens the draft has not seen (its
        last pass produces the first guess), then k - 1 one-token passes."""
        if self.draft is None:
            raise NoCost("no draft model was profiled")
        return self.draft(feed) + max(0, k - 1) * self.draft(1)


def cost_table(profile: CostProfile, kv_tokens: int, objective: Objective = "time",
               sensor: Sensors = None) -> CostTable:
    """The costs of a run whose mean KV fill is `kv_tokens` (its prompt plus half its tokens).

    With the energy objective, `sensor` names whose joules count: one sensor or several,
    summed (default: the first sensor with energy for every target pass). A lookup's energy
    is its time at the power of a one-token target pass: too short to meter on its own, and
    the CPU is as busy.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, not {objective!r}")
    if objective == "energy":
        candidates = energy_sensors(profile)
        names = sensor_names(sensor) or tuple(candidates[:1])
        missing = [n for n in names if n not in candidates]
        if not names or missing:
            why = profile.energy_reason or (f"sensor(s) {', '.join(missing)} lack energy for "
                                            "some passes")
            raise NoCost(f"the energy objective needs energy per pass: {why}")
        sensor = names
    target = _at_fill(profile.points, kv_tokens, "target", objective, sensor)
    if target is None:
        raise NoCost("the profile has no target pass costs")
    if target(1) <= 0:
        # Nothing to divide by: a counter that did not move around the profiled passes.
        raise NoCost(f"a one-token pass costs {target(1):g} {'ms' if objective == 'time' else 'J'}"
                     " in the profile, so no choice can be weighed against it")
    draft = _at_fill(profile.points, kv_tokens, "draft", objective, sensor)
    lookup_ms = profile.ngram_lookup_ms or 0.0
    if objective == "time":
        lookup = lookup_ms
        unit = "ms"
    else:
        time_curve = _at_fill(profile.points, kv_tokens, "target", "time", None)
        assert time_curve is not None  # a target curve exists, and time needs no sensor
        lookup = lookup_ms * target(1) / time_curve(1) if time_curve(1) > 0 else 0.0
        unit = "J"
    return CostTable(unit=unit, target=target, draft=draft, lookup=lookup, kv_tokens=kv_tokens)
