"""completeness (warning): every configured prompt x strategy has the configured repeats.

Also warns when the campaign is not complete, about runs beyond the configured repeats, and
about disturbed runs (Run.disturbed), which no repeat counts and every summary leaves out.
Runs of a prompt or strategy the config does not declare are rule consistency's (blocking).
A shard's file (`shard` set) is expected to hold only its own part of the plan: its prompts and
its repeats. Runs of adaptive rounds (config.target_half_width set, repeats past the planned
ones) are not "beyond the configured repeats": rule adaptive judges whether each was due.
"""

from __future__ import annotations

from phase.analysis import conditions, disturbed_note, disturbed_runs, runs_by_condition
from phase.analysis.queries import configured_conditions
from phase.results import ResultsFile
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    repeats = settings.repeats or results.config.repeats
    configured = set(configured_conditions(results.config))
    shard = results.shard
    expected_repeats = list(range(repeats)) if shard is None else shard.repeats
    by_condition = runs_by_condition(results)
    out: list[Finding] = []
    if results.status != "complete":
        out.append(ctx.finding(
            "completeness", "warning", f"campaign status is {results.status!r}, not 'complete'",
            numbers={"runs": len(results.runs)},
        ))
    note = disturbed_note(results)
    if note is not None:
        out.append(ctx.finding("completeness", "warning", note,
                               numbers={"disturbed": len(disturbed_runs(results))}))
    for condition in conditions(results):
        prompt, strategy, levels = condition
        runs = by_condition.get(condition, [])
        if shard is not None and prompt not in shard.prompts and not runs:
            continue  # another shard's prompt
        if condition not in configured:
            continue
        if results.config.target_half_width is not None:
            runs = [r for r in runs if r.repeat < results.config.repeats]
        present = {r.repeat for r in runs if r.repeat in expected_repeats}
        missing = [i for i in expected_repeats if i not in present]
        extra = len(runs) - len(present)
        if missing:
            shown = ", ".join(str(i) for i in missing[:10]) + ("…" if len(missing) > 10 else "")
            out.append(ctx.finding(
                "completeness", "warning",
                f"{len(present)} of {len(expected_repeats)} repeats; missing repeat {shown}",
                prompt=prompt, strategy=strategy, levels=levels,
                numbers={"expected": len(expected_repeats), "found": len(present),
                         "missing": len(missing)},
            ))
        if extra:
            out.append(ctx.finding(
                "completeness", "warning",
                f"{extra} run(s) beyond the {repeats} configured repeats "
                "(a repeat index duplicated or out of range)",
                prompt=prompt, strategy=strategy, levels=levels,
                numbers={"expected": repeats, "runs": len(runs), "extra": extra},
            ))
    return out


RULE = Rule(order=80, check=check)
