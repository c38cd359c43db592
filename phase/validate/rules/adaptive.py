"""adaptive (blocking): every extra round past the planned repeats was due, and within budget.

Adaptive repeats (config.target_half_width set) add rounds after the planned repeats for the
conditions whose ratio to plain was still wider than the target; each decision rests on the
runs of the rounds before it (phase.analysis.adaptive), so it is re-derived here from the file
alone, round by round:

- a round's runs are the conditions that were too wide and plain for their prompts, with the
  ids and orders `extra_round` gives them (a re-run: its slot's order plus its attempt); a
  run of a condition that was already narrow, or of a round after the rounds stopped (every
  ratio narrow, or the next round past the run or time budget), is blocking: extra runs
  chosen any other way would let a campaign repeat what it liked until a ratio looked right;
- `$.adaptive`, what the file says the rounds did and bought, is what the runs give;
- warnings: a complete campaign that stopped while a round was still due and affordable, a
  round with runs missing, an unfinished record.

A fixed-design file (no target) has no rounds: its runs past the planned repeats are rule
completeness's, and an `adaptive` record there is blocking.
"""

from __future__ import annotations

import math
from typing import Any

from phase.analysis import adaptive
from phase.analysis.queries import condition_key
from phase.results import ResultsFile, Run
from phase.results.schedule import ScheduledRun, rerun
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings

_REL = 1e-6


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    config = results.config
    if not adaptive.adaptive(config):
        if results.adaptive is not None:
            return [ctx.finding("adaptive", "blocking", "the file records adaptive rounds, but "
                                "its config has no target (config.target_half_width): a fixed "
                                "design", json_path="$.adaptive")]
        return []
    if results.shard is not None or results.merged_from:
        return [ctx.finding("adaptive", "blocking", "adaptive repeats run on one machine, never "
                            "in shards", json_path="$.config.target_half_width")]
    index = {id(r): i for i, r in enumerate(results.runs)}
    decisions = adaptive.walk(results)
    out: list[Finding] = []
    for decision in decisions:
        runs = [r for r in results.runs if r.repeat == decision.repeat]
        if decision.stopped is not None:
            for run in (r for r in results.runs if r.repeat >= decision.repeat):
                out.append(_not_due(ctx, run, index, decision))
            break
        out += _round(ctx, results, decision, runs, index)
    out += _recorded(ctx, results, decisions)
    return out


def _not_due(ctx: Context, run: Run, index: dict[int, int],
             decision: adaptive.Decision) -> Finding:
    what = {"narrow": "not due", "runs": "past the run budget",
            "time": "past the time budget"}[decision.stopped or "narrow"]
    return ctx.finding(
        "adaptive", "blocking",
        f"extra run of repeat {run.repeat} is {what}: after the rounds before repeat "
        f"{decision.repeat}, {decision.reason}",
        run=run, json_path=f"$.runs[{index[id(run)]}].repeat",
        numbers={"runs_spent": decision.runs_spent, "seconds_spent": decision.seconds_spent},
    )


def _round(ctx: Context, results: ResultsFile, decision: adaptive.Decision, runs: list[Run],
           index: dict[int, int]) -> list[Finding]:
    slots = {s.run_id: s for s in decision.slots}
    out = []
    for run in runs:
        slot = slots.get(run.rerun_of or run.id)
        if slot is None or slot.condition != condition_key(run):
            narrow = condition_key(run) not in {s.condition for s in decision.slots}
            why = ("its ratio to plain was already within the target after the rounds before"
                   if narrow else "its id is not the round's for this condition")
            out.append(ctx.finding(
                "adaptive", "blocking",
                f"extra round (repeat {decision.repeat}) ran {run.id!r}, which was not due: "
                f"{why}", run=run, json_path=f"$.runs[{index[id(run)]}].id"))
            continue
        expected = _placement(run, slot)
        if expected is not None:
            out.append(ctx.finding(
                "adaptive", "blocking",
                f"run {run.id!r} has order {run.order}; its place in extra round "
                f"(repeat {decision.repeat}) is {expected}", run=run,
                json_path=f"$.runs[{index[id(run)]}].order"))
    present = {r.rerun_of or r.id for r in runs}
    missing = [s.run_id for s in decision.slots if s.run_id not in present]
    if missing and runs:
        out.append(ctx.finding(
            "adaptive", "warning",
            f"extra round (repeat {decision.repeat}) is missing {len(missing)} of its "
            f"{len(decision.slots)} runs: {', '.join(missing[:5])}",
            numbers={"missing": len(missing)}))
    if not runs and results.status == "complete":
        shown = ", ".join(f"{p} · {s}" + "".join(f" · {n}={v}" for n, v in lv)
                          for p, s, lv in decision.wide[:5])
        out.append(ctx.finding(
            "adaptive", "warning",
            f"the campaign ended while an extra round (repeat {decision.repeat}) was due and "
            f"within budget: {shown} still wider than the target", json_path="$.adaptive"))
    return out


def _placement(run: Run, slot: ScheduledRun) -> int | None:
    """None when the run sits where the round puts it (a re-run: its slot's order plus its
    attempt, id `<slot>-rerunN`); else the order it should have."""
    if run.rerun_of is None:
        return None if run.order == slot.order else slot.order
    attempt = run.order - slot.order
    if attempt >= 1 and run.id == rerun(slot, attempt, 1).run_id:
        return None
    return slot.order + 1


def _recorded(ctx: Context, results: ResultsFile,
              decisions: list[adaptive.Decision]) -> list[Finding]:
    """The file's record against the one its runs give (complete files; an unfinished one
    may have decided a round it did not start)."""
    if results.adaptive is None:
        if results.status == "complete":
            return [ctx.finding("adaptive", "blocking", "the config sets a target, but the file "
                                "has no record of its adaptive rounds ($.adaptive)",
                                json_path="$.adaptive")]
        return []
    if results.status != "complete":
        return []
    if results.adaptive.stopped is None:
        return [ctx.finding("adaptive", "warning", "the campaign is complete but its adaptive "
                            "record never stopped", json_path="$.adaptive.stopped")]
    derived = adaptive.record(results, decisions).model_dump()
    where = _differs(results.adaptive.model_dump(), derived, "$.adaptive")
    if where is None:
        return []
    return [ctx.finding("adaptive", "blocking", f"{where[0]} records {where[1]!r}, but the runs "
                        f"give {where[2]!r}", json_path=where[0])]


def _differs(recorded: Any, derived: Any, path: str) -> tuple[str, Any, Any] | None:
    """The first place (JSON path, recorded, derived) where the two differ; floats to round-off."""
    if isinstance(recorded, dict) and isinstance(derived, dict):
        for key in sorted(set(recorded) | set(derived)):
            found = _differs(recorded.get(key), derived.get(key), f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(derived, list):
        if len(recorded) != len(derived):
            return f"{path}", f"{len(recorded)} entries", f"{len(derived)} entries"
        for i, (a, b) in enumerate(zip(recorded, derived, strict=True)):
            found = _differs(a, b, f"{path}[{i}]")
            if found is not None:
                return found
        return None
    if isinstance(recorded, float) and isinstance(derived, float | int):
        if math.isclose(recorded, derived, rel_tol=_REL, abs_tol=1e-9):
            return None
    elif recorded == derived:
        return None
    return path, recorded, derived


RULE = Rule(order=90, check=check)
