"""duration (warning): the runs took longer than the campaign stated before them.

`phase measure` states, once the cost profile is measured, how long the planned runs will take
and what adaptive rounds and re-runs may add, and keeps the statement in the file
(ResultsFile.stated_duration). The span of the runs after it, re-runs of disturbed runs left
out, is held against the stated time plus the adaptive rounds' budget
(phase.analysis.duration). Past it, the statement did not hold: a warning, since the runs
themselves are no worse for it, but the plan's promise to the person who started it was.
"""

from __future__ import annotations

from phase.analysis.duration import took
from phase.results import ResultsFile
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    found = took(results)
    over = found.over_s if found is not None else None
    if found is None or over is None or over <= 0:
        return []
    allowed = found.allowed_s or 0.0
    share = f", {over / allowed:.0%} past it" if allowed > 0 else ""
    return [ctx.finding(
        "duration", "warning",
        f"the runs {found.line()}{share}: the time stated before them did not hold (the "
        "statement is stated_duration.statement)",
        numbers={"actual_s": found.actual_s, "stated_s": found.stated_s,
                 "allowed_s": allowed, "rerun_s": found.rerun_s, "over_s": over},
        json_path="$.stated_duration.estimated_s",
    )]


RULE = Rule(order=250, check=check)
