"""The record of adaptive repeats (phase.analysis.adaptive) in a results file: each round,
why the rounds stopped, and per condition its ratio intervals before and after."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from phase.results.base import NonNegFloat, NonNegInt, Strict


class RatioInterval(Strict):
    """A condition's ratio to plain decoding and its 95% interval, on the rounds it rests on:
    by config.interval_method (phase.analysis.adaptive.ratio_interval): the geometric mean of
    the per-round ratios with a Student t interval ("t-log"), or, in files without one, the
    median of per-round ratios with a percentile bootstrap interval."""

    centre: NonNegFloat
    low: NonNegFloat
    high: NonNegFloat
    n: NonNegInt
    # The larger distance from the centre to an end, relative to the centre; None for a
    # centre of 0.
    half_width: NonNegFloat | None


class AdaptiveCondition(Strict):
    """One compared condition (a strategy against plain, on one prompt): its intervals after
    the planned repeats (`*_before`) and at the end (`*_after`); energy only where measured.
    None: fewer than two rounds to pair (not known, so it counts as too wide)."""

    prompt: str
    strategy: str
    speed_before: RatioInterval | None
    speed_after: RatioInterval | None
    energy_before: RatioInterval | None = None
    energy_after: RatioInterval | None = None
    # Whether its intervals ended within the target; the runs the extra rounds added for it
    # (its own, and re-runs of them; plain's runs are counted once per prompt, under plain).
    reached: bool
    runs_added: NonNegInt
    # From version 10: the condition's extra factors' levels (its plain is at the same ones);
    # empty, and not written, where the experiment has none.
    factors: dict[str, str | int | float] = Field(default_factory=dict,
                                                  exclude_if=lambda v: not v)


class AdaptiveRound(Strict):
    """One extra round, decided from the runs of the rounds before it: the conditions still
    too wide (each run once with plain for its prompt, shuffled), as repeat `repeat`."""

    repeat: NonNegInt
    # [prompt, strategy] of each condition too wide after the rounds before (and its levels,
    # "threads=2, mode=a", where the experiment has extra factors); the round runs each once,
    # and plain once for each of their prompts at those levels (`runs` in all).
    conditions: list[list[str]]
    runs: NonNegInt
    # What the round was expected to cost (each condition's median run, plus its cooldown and
    # idle window), checked against the time left in the budget before it started.
    expected_s: NonNegFloat


class AdaptiveRecord(Strict):
    """What the adaptive repeats did (config.target_half_width set): every round and why it
    ran, why they stopped, what the budget bought. Re-derived from the runs by validation
    (rule `adaptive`), so a resumed campaign continues exactly where the decisions left it."""

    rounds: list[AdaptiveRound]
    # "narrow": every condition within the target; "runs" / "time": the next round did not
    # fit in what was left of the budget; None while the campaign is still deciding.
    stopped: Literal["narrow", "runs", "time"] | None
    stop_reason: str | None
    runs_spent: NonNegInt
    seconds_spent: NonNegFloat
    conditions: list[AdaptiveCondition]
