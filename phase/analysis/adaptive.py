"""Adaptive repeats: which conditions need another round, and what the rounds bought.

After a campaign's planned repeats, a condition (a strategy on a prompt, at one level of each
extra factor) whose ratio to plain decoding has a 95% interval wider than
±config.target_half_width (speed always; chip energy where the file measures it) is run
again, with plain for its prompt at its levels (the ratio's baseline,
paired by round), in one more round, shuffled; rounds continue until every condition is
narrow enough or the next round does not fit in what is left of the budget
(config.extra_budget_runs runs, config.extra_budget_s seconds).

    decide(results, repeat)        the decision for round `repeat` (>= config.repeats): its
                                   runs, or why the rounds stop; from the runs of the rounds
                                   before it only, so an interrupted campaign decides again
                                   exactly as it did before
    walk(results)                  every decision the file's runs imply, in order
    record(results, decisions)     what ResultsFile.adaptive holds for those decisions

A round starts only if its runs fit in the runs left and its expected time (each condition's
median run so far) in the time left. Its disturbed runs are re-run at its end like a planned
repeat's (with the same retries); those re-runs are spent too, and may take the last round
past the run budget by their number: a round once started is finished, so its pairs stay whole.

Everything here is a pure function of the file: the campaign runner, `phase validate` (rule
`adaptive`) and the terminal summary use the same definitions. Disturbed runs are left out of
every interval (as out of every summary) but their time and count are spent all the same.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from phase.analysis import intervals, intervals_legacy
from phase.analysis.intervals import Interval
from phase.analysis.queries import (
    PLAIN,
    Condition,
    condition_key,
    levels_text,
    primary_energy_j,
    primary_sensors,
)
from phase.policy.strategies import is_baseline
from phase.results import (
    AdaptiveCondition,
    AdaptiveRecord,
    AdaptiveRound,
    CampaignConfig,
    RatioInterval,
    ResultsFile,
    Run,
)
from phase.results.schedule import (
    Levels,
    ScheduledRun,
    combinations,
    extra_round,
    schedule_prompts,
)

Stop = Literal["narrow", "runs", "time"]


@dataclass(frozen=True)
class ConditionState:
    """One compared condition's ratio intervals on the runs considered; energy None where the
    file measures no chip energy for it (then speed alone decides)."""

    prompt: str
    strategy: str
    speed: Interval | None
    energy: Interval | None
    energy_measured: bool
    levels: Levels = ()

    @property
    def condition(self) -> Condition:
        return (self.prompt, self.strategy, self.levels)

    def narrow(self, target: float) -> bool:
        if self.speed is None or not self.speed.narrow(target):
            return False
        return not self.energy_measured or (self.energy is not None
                                            and self.energy.narrow(target))


@dataclass(frozen=True)
class Decision:
    """Round `repeat`: the runs it holds (`slots`, empty when the rounds stop), the conditions
    that made it due, its expected cost; or `stopped` with a sentence saying why."""

    repeat: int
    wide: tuple[Condition, ...]
    slots: tuple[ScheduledRun, ...]
    expected_s: float
    runs_spent: int
    seconds_spent: float
    stopped: Stop | None = None
    reason: str | None = None


def adaptive(config: CampaignConfig) -> bool:
    return config.target_half_width is not None


def ratio_interval(config: CampaignConfig, values: dict[int, float],
                   baseline: dict[int, float]) -> Interval | None:
    """A ratio's interval by the method the file's rounds were decided with: the t interval on
    log ratios (config.interval_method "t-log"), or, for files before it, the bootstrap."""
    if config.interval_method is None:
        return intervals_legacy.ratio_interval(values, baseline)
    return intervals.ratio_interval(values, baseline)


def run_cost_s(run: Run, config: CampaignConfig) -> float:
    """What a run spends of the time budget: its span, plus the rest and idle sampling
    before it."""
    return max(run.ended_unix_s - run.started_unix_s, 0.0) + config.cooldown_s + \
        config.idle_window_s


def _per_round(runs: Sequence[Run], value: str, results: ResultsFile) -> dict[int, float]:
    """Round -> the value of the latest undisturbed run in it (by order)."""
    out: dict[int, float] = {}
    for run in sorted(runs, key=lambda r: r.order):
        if run.disturbed:
            continue
        if value == "speed":
            v: float | None = run.tokens_per_s
        else:
            joules, _ = primary_energy_j(results, run)
            v = joules / run.tokens if joules is not None else None
        if v is not None and math.isfinite(v) and v > 0:
            out[run.repeat] = v
    return out


def states(results: ResultsFile, before: int | None = None,
           prompts: Sequence[str] | None = None) -> list[ConditionState]:
    """Every compared condition (config order, plain left out) on the runs of rounds before
    `before` (None: every run). Empty where plain is not among the strategies."""
    config = results.config
    if not any(map(is_baseline, config.strategies)):
        return []
    names = schedule_prompts(config) if prompts is None else list(prompts)
    by: dict[Condition, list[Run]] = {}
    for run in results.runs:
        if before is None or run.repeat < before:
            by.setdefault(condition_key(run), []).append(run)
    energy = bool(primary_sensors(results))
    out = []
    for prompt, combo in ((p, c) for p in names for c in combinations(config.factors)):
        plain = by.get((prompt, PLAIN, combo.levels), [])
        plain_speed = _per_round(plain, "speed", results)
        plain_energy = _per_round(plain, "energy", results) if energy else {}
        for strategy in config.strategies:
            if is_baseline(strategy):
                continue
            runs = by.get((prompt, strategy, combo.levels), [])
            speed = ratio_interval(config, _per_round(runs, "speed", results), plain_speed)
            mine = _per_round(runs, "energy", results) if energy else {}
            measured = bool(mine) and bool(plain_energy)
            out.append(ConditionState(prompt, strategy, speed,
                                      ratio_interval(config, mine, plain_energy) if measured
                                      else None,
                                      measured, combo.levels))
    return out


def _extra(results: ResultsFile, before: float = math.inf) -> list[Run]:
    return [r for r in results.runs if results.config.repeats <= r.repeat < before]


def _expected_s(results: ResultsFile, slots: Sequence[ScheduledRun], before: int) -> float:
    """Each slot's condition's median recorded cost (rounds before `before`)."""
    config = results.config
    costs: dict[Condition, list[float]] = {}
    for run in results.runs:
        if run.repeat < before:
            costs.setdefault(condition_key(run), []).append(run_cost_s(run, config))
    return sum(statistics.median(costs[s.condition])
               if costs.get(s.condition) else 0.0 for s in slots)


def decide(results: ResultsFile, repeat: int) -> Decision:
    """The decision for round `repeat` (config.repeats for the first extra round), from the
    runs of the rounds before it: the wide conditions and plain for their prompts, if they fit
    in the budget left."""
    config = results.config
    target = config.target_half_width
    if target is None:
        raise ValueError("decide: the campaign has no target (a fixed design)")
    extra = _extra(results, repeat)
    spent_runs = len(extra)
    spent_s = sum(run_cost_s(r, config) for r in extra)

    def stop(why: Stop, reason: str, wide: tuple[Condition, ...] = ()) -> Decision:
        return Decision(repeat, wide, (), 0.0, spent_runs, spent_s, why, reason)

    wide = tuple(s.condition for s in states(results, repeat) if not s.narrow(target))
    if not wide:
        if not any(map(is_baseline, config.strategies)):
            return stop("narrow", "no ratio to narrow: plain is not among the strategies")
        return stop("narrow", f"every ratio to plain is within ±{target:.0%}")
    # Each wide condition, and plain for its prompt at its levels (its ratio's baseline).
    due = set(wide) | {(p, PLAIN, levels) for p, _, levels in wide}
    slots = tuple(extra_round(schedule_prompts(config), config.strategies,
                              config.repeats, config.seed, config.shuffle, repeat, due,
                              config.max_reruns or 0, config.factors, config.blocked_by))
    budget_runs = config.extra_budget_runs
    if budget_runs is not None and spent_runs + len(slots) > budget_runs:
        return stop("runs", f"{len(wide)} condition(s) still wider than ±{target:.0%}; the "
                    f"next round needs {len(slots)} runs and {budget_runs - spent_runs} of "
                    f"the {budget_runs}-run budget are left", wide)
    expected = _expected_s(results, slots, repeat)
    budget_s = config.extra_budget_s
    if budget_s is not None and spent_s + expected > budget_s:
        return stop("time", f"{len(wide)} condition(s) still wider than ±{target:.0%}; the "
                    f"next round needs about {expected:.0f} s and {max(budget_s - spent_s, 0):.0f}"
                    f" s of the {budget_s:.0f} s budget are left", wide)
    return Decision(repeat, wide, slots, expected, spent_runs, spent_s)


def walk(results: ResultsFile) -> list[Decision]:
    """The decisions the file's runs imply: each round that has runs, then the decision after
    the last of them (a stop, or the round due next)."""
    if not adaptive(results.config):
        return []
    last = max((r.repeat for r in results.runs), default=-1)
    out = []
    repeat = results.config.repeats
    while True:
        decision = decide(results, repeat)
        out.append(decision)
        if decision.stopped is not None or repeat > last:
            return out
        repeat += 1


def _interval(interval: Interval | None) -> RatioInterval | None:
    if interval is None:
        return None
    return RatioInterval(centre=interval.centre, low=interval.low, high=interval.high,
                         n=interval.n, half_width=interval.half_width)


def record(results: ResultsFile, decisions: Sequence[Decision]) -> AdaptiveRecord:
    """ResultsFile.adaptive for these decisions (from `walk`, or the runner's so far: a round
    is recorded as soon as it is decided, before its first run)."""
    config = results.config
    target = config.target_half_width or 0.0
    before = {s.condition: s for s in states(results, config.repeats)}
    extra = _extra(results)
    last = decisions[-1] if decisions else None
    conditions = []
    for state in states(results):
        was = before[state.condition]
        conditions.append(AdaptiveCondition(
            prompt=state.prompt, strategy=state.strategy,
            speed_before=_interval(was.speed), speed_after=_interval(state.speed),
            energy_before=_interval(was.energy), energy_after=_interval(state.energy),
            reached=state.narrow(target),
            runs_added=sum(1 for r in extra if condition_key(r) == state.condition),
            factors=dict(state.levels),
        ))
    return AdaptiveRecord(
        rounds=[AdaptiveRound(repeat=d.repeat,
                              conditions=[[p, s, *([levels_text(lv)] if lv else [])]
                                          for p, s, lv in d.wide],
                              runs=len(d.slots), expected_s=d.expected_s)
                for d in decisions if d.stopped is None],
        stopped=last.stopped if last is not None else None,
        stop_reason=last.reason if last is not None else None,
        runs_spent=len(extra),
        seconds_spent=sum(run_cost_s(r, config) for r in extra),
        conditions=conditions,
    )


def bought(results: ResultsFile) -> str | None:
    """One line: what the extra rounds bought (None for the fixed design)."""
    rec = results.adaptive
    target = results.config.target_half_width
    if rec is None or target is None:
        return None
    reached = sum(1 for c in rec.conditions if c.reached)
    budget = results.config.extra_budget_runs
    of = f" of {budget}" if budget is not None else ""
    why = f"; stopped: {rec.stop_reason}" if rec.stop_reason else ""
    return (f"{len(rec.rounds)} extra round(s), {rec.runs_spent}{of} extra runs "
            f"({rec.seconds_spent:.0f} s): {reached} of {len(rec.conditions)} ratio(s) to "
            f"plain within ±{target:.0%}{why}")
