"""Checks of a summary file (no runs): its rows form a complete, unambiguous table.

schema (blocking): two rows for the same prompt, strategy and k.
consistency (blocking): a figure outside its own interval (`intervals`), which every interval
phase computes holds; a row whose n is not the number of run ids it lists (a count a list
backs is recomputed from the list).
completeness (warning): a row that falls short of the expected repeats; a prompt x strategy
missing though both appear in other rows.
"""

from __future__ import annotations

from phase.analysis.queries import Condition, condition_key
from phase.results import SummaryFile, SummaryRow
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings

# Float round-off between the figure and its interval's ends, computed apart.
_REL = 1e-9


def check(summary: SummaryFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    seen: dict[tuple[Condition, int | None], int] = {}
    for i, row in enumerate(summary.rows):
        key = (condition_key(row), row.k)
        if key in seen:
            out.append(ctx.finding(
                "schema", "blocking",
                f"row duplicates $.rows[{seen[key]}] (same prompt, strategy and k"
                + (", and levels)" if key[0][2] else ")"),
                prompt=row.prompt, strategy=row.strategy, levels=key[0][2],
                json_path=f"$.rows[{i}]",
            ))
        else:
            seen[key] = i
        out += _intervals(row, i, ctx)
        if row.n is not None and row.run_ids and row.n != len(row.run_ids):
            out.append(ctx.finding(
                "consistency", "blocking",
                f"row says n = {row.n} but lists {len(row.run_ids)} run id(s): its figures "
                "are over the runs it lists, so n is recomputed from them",
                prompt=row.prompt, strategy=row.strategy, levels=tuple(row.factors.items()),
                json_path=f"$.rows[{i}].n",
                numbers={"n": row.n, "run_ids": len(row.run_ids)},
            ))
        if settings.repeats is not None and row.n is not None and row.n < settings.repeats:
            out.append(ctx.finding(
                "completeness", "warning",
                f"row averages {row.n} of {settings.repeats} expected repeats",
                prompt=row.prompt, strategy=row.strategy,
                numbers={"expected": settings.repeats, "found": row.n},
            ))
    prompts = list(dict.fromkeys(r.prompt for r in summary.rows))
    strategies = list(dict.fromkeys(r.strategy for r in summary.rows))
    levels = list(dict.fromkeys(condition_key(r)[2] for r in summary.rows))
    present = {condition_key(r) for r in summary.rows}
    for prompt in prompts:
        for strategy in strategies:
            for level in levels:
                if (prompt, strategy, level) not in present:
                    out.append(ctx.finding(
                        "completeness", "warning",
                        "no row for this prompt x strategy, though both appear in other rows"
                        if not level else "no row for this condition, though its prompt, "
                        "strategy and levels appear in other rows",
                        prompt=prompt, strategy=strategy, levels=level,
                    ))
    return out


def _intervals(row: SummaryRow, i: int, ctx: Context) -> list[Finding]:
    """Each figure's interval holds the figure it is the interval of: a median's order
    statistics bracket it, a ratio's t interval is centred on it (phase.analysis.intervals).
    One that does not is of another figure, or the figure was changed after."""
    out = []
    for name, interval in row.intervals.items():
        centre = getattr(row, name)
        slack = _REL * max(abs(centre), abs(interval.low), abs(interval.high))
        if interval.low - slack <= centre <= interval.high + slack:
            continue
        out.append(ctx.finding(
            "consistency", "blocking",
            f"{name} is {centre:.6g}, outside its own 95% interval "
            f"[{interval.low:.6g}, {interval.high:.6g}]",
            prompt=row.prompt, strategy=row.strategy, levels=tuple(row.factors.items()),
            json_path=f"$.rows[{i}].intervals.{name}",
            numbers={name: centre, "low": interval.low, "high": interval.high},
        ))
    return out


RULE = Rule(order=10, check=check, applies_to="summary")
