"""The terminal side of a campaign (rich, on stderr): progress, interruption, closing table.

No click here: the command line (phase.cli.measure) parses options and calls these.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from phase.analysis import (
    FIGURES,
    adaptive,
    condition_key,
    disturbed_note,
    disturbed_runs,
    row_value,
    runs_by_condition,
    summarize,
)
from phase.analysis.duration import took
from phase.analysis.figures import row_interval
from phase.analysis.formatting import span
from phase.analysis.queries import configured_conditions
from phase.campaign.runner import Campaign
from phase.campaign.schedule import ScheduledRun
from phase.results import AdaptiveCondition, CampaignConfig, ResultsFile, Run, SummaryRow
from phase.results.schedule import schedule_prompts
from phase.validate import validate_results

console = Console(stderr=True)


class ProgressObserver:
    """A progress bar per campaign; a line per run where stderr is not a terminal."""

    def __init__(self) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.task: TaskID | None = None

    def message(self, text: str) -> None:
        console.print(f"[dim]{text}[/dim]")

    def campaign_started(self, total: int, already_done: int) -> None:
        if already_done:
            console.print(f"resuming: {already_done} of {total} runs already recorded")
        self.progress.start()
        self.task = self.progress.add_task("starting", total=total, completed=already_done)

    def run_started(self, index: int, scheduled: ScheduledRun) -> None:
        label = (f"{scheduled.prompt} · {scheduled.strategy}"
                 + "".join(f" · {name}={level}" for name, level in scheduled.levels)
                 + f" (r{scheduled.repeat})")
        if self.task is not None:
            # A re-run of a disturbed run adds to the planned total.
            total = max(int(self.progress.tasks[0].total or 0), index + 1)
            self.progress.update(self.task, description=label, total=total)

    def run_finished(self, index: int, run: Run) -> None:
        if self.task is None:
            return
        self.progress.advance(self.task)
        if not console.is_terminal:
            # Redirected to a log: the bar only draws at the end, so leave a line per run.
            task = self.progress.tasks[0]
            accepted = "" if run.acceptance is None else f", {run.acceptance:.0%} accepted"
            if run.disturbed:
                accepted += f", disturbed ({run.disturbed_reason}): left out"
            console.print(
                f"[{int(task.completed)}/{int(task.total or 0)}] {run.id}: "
                f"{run.tokens_per_s:.1f} tok/s{accepted}"
            )

    def extra_runs(self, count: int) -> None:
        """An adaptive round adds to the planned total."""
        if self.task is not None:
            total = int(self.progress.tasks[0].total or 0)
            self.progress.update(self.task, total=total + count)

    def close(self) -> None:
        if self.task is not None:
            self.progress.stop()


def show_start(campaign: Campaign) -> None:
    """What the campaign cannot measure, and where it writes."""
    for backend in campaign.unavailable:
        console.print(f"[yellow]no energy from {escape(backend.backend)}:[/yellow] "
                      f"{escape(backend.reason)}")
    console.print(design_line(campaign.start.config))
    console.print(disturbance_line(campaign.start.config))
    console.print(f"writing {escape(str(campaign.output))}")


def disturbance_line(config: CampaignConfig) -> str:
    """What marks a run disturbed in this campaign, and what happens to it."""
    if config.disturbed_load is None:
        return "disturbance: foreign load recorded, nothing judged"
    tests = [f"foreign load >= {config.disturbed_load:.0%}"]
    if config.slow_vs_profile is not None:
        tests.append(f"target passes < {config.slow_vs_profile:.2f}x the cost profile's "
                     "price")
    if config.slow_vs_condition is not None:
        tests.append(f"speed < {config.slow_vs_condition:.2f}x its condition's earlier runs")
    if config.slow_vs_prefill is not None:
        tests.append(f"prefill < {config.slow_vs_prefill:.2f}x the earlier serving runs'")
    then = (f"re-run up to {config.max_reruns} time(s)" if config.max_reruns
            else "not re-run")
    return f"disturbance: {' or '.join(tests)}; a disturbed run is left out and {then}"


def design_line(config: CampaignConfig) -> str:
    """The plan's design in one line: its repeats and, for adaptive repeats, the target and
    the budget they may spend."""
    conditions = len(configured_conditions(config))
    planned = f"{config.repeats} repeat(s) of {conditions} condition(s), " \
        f"{config.repeats * conditions} runs"
    if config.blocked_by is not None:
        planned += f", each repeat in blocks of one {config.blocked_by} level"
    if config.target_half_width is None:
        return f"design: fixed, {planned}"
    budget = [f"{config.extra_budget_runs} runs"] if config.extra_budget_runs is not None else []
    if config.extra_budget_s is not None:
        budget.append(f"{config.extra_budget_s:.0f} s")
    return (f"design: {planned}, then more rounds of each condition whose ratio to plain is "
            f"not yet within ±{config.target_half_width:.0%} (Student t 95% interval), budget "
            f"{' and '.join(budget) or 'unlimited'}")


def show_interrupted(output: Path, resume_command: str) -> None:
    # soft_wrap: the command stays on one line, whatever the width, so it can be copied.
    console.print(
        f"\n[yellow]interrupted[/yellow]: finished runs are saved in {escape(str(output))}\n"
        f"continue with: {escape(resume_command)}",
        soft_wrap=True,
    )


# The registry's figures the closing table shows, under their narrow terminal headings.
SHOWN = ("tokens_per_s", "speed_vs_plain", "acceptance", "cpu_ms_per_token",
         "chip_mj_per_token", "energy_ratio_vs_plain")
COLUMNS = ("strategy", *(FIGURES[name].short for name in SHOWN), "=plain")


def figure_cell(name: str, rows: list[SummaryRow], row: SummaryRow) -> str:
    """A figure as the closing table writes it: the median and, on a second line, dimmed,
    its 95% interval where it has one."""
    fig = FIGURES[name]
    text = fig.terminal_show(row_value(name, rows, row))
    found = row_interval(name, row)
    if found is None:
        return text
    return f"{text}\n[dim]{escape(span(found.low, found.high, fig.terminal_show))}[/dim]"


def _width(c: AdaptiveCondition) -> str:
    parts = []
    for what, before, after in (("speed", c.speed_before, c.speed_after),
                                ("energy", c.energy_before, c.energy_after)):
        if after is None and before is None:
            continue
        shown = [f"±{i.half_width:.0%}" if i is not None and i.half_width is not None
                 else "unknown" for i in (before, after)]
        parts.append(f"{what} {shown[0]} → {shown[1]}")
    return f"({'; '.join(parts)}, +{c.runs_added} runs)"


def _list_disturbed(results: ResultsFile) -> None:
    """Each run left out as disturbed, with what disturbed it."""
    for run in disturbed_runs(results):
        console.print(f"  {escape(run.id)}: {run.tokens_per_s:.1f} tok/s, "
                      f"{escape(run.disturbed_reason or 'load')}")


def _show_time(results: ResultsFile) -> None:
    """What the runs took against the time stated before them (validation rule duration
    warns where they ran over)."""
    found = took(results)
    if found is None:
        return
    over = found.over_s is not None and found.over_s > 0
    console.print(f"{'[yellow]time —[/yellow]' if over else 'time —'} {escape(found.line())}")


LEGEND = (
    "medians of the undisturbed runs; under each, its order-statistic 95% interval (6 runs or "
    "more) · ×plain: speed vs plain, the geometric mean of per-round ratios with its Student t "
    "95% interval (not resolved from plain where it includes 1.00× or its test fails the "
    "Benjamini-Hochberg correction over the campaign's ratios) · accept: drafted tokens kept · "
    "mJ/tok: chip energy · =plain: runs whose output equals plain's · * unstable: spread over "
    "the variance limit"
)


def _table(title: str, cells: list[list[str]]) -> Table:
    table = Table(title=escape(title), title_justify="left")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col == "strategy" else "right")
    for row in cells:
        table.add_row(*row)
    return table


def print_summary(results: ResultsFile) -> None:
    """Per prompt: the same derived rows the site shows (validated, rejected values left out)."""
    report = validate_results(results, results.id)
    note = disturbed_note(results)
    by_condition = runs_by_condition(results)
    if not by_condition:
        console.print(f"[yellow]nothing to summarize —[/yellow] {note or 'no runs'}")
        _list_disturbed(results)
        return
    summary = summarize(results, report, results.id)
    unstable = report.unstable_conditions()
    matches = {condition: sum(1 for r in runs if r.matches_plain)
               for condition, runs in by_condition.items()}
    # A sampled run is not compared with plain's text (matches_plain None): its cell is "—".
    sampled = {condition for condition, runs in by_condition.items()
               if any(r.seed is not None for r in runs)}

    def cells(row: SummaryRow) -> list[str]:
        key = condition_key(row)
        return [escape(row.strategy) + (" *" if key in unstable else ""),
                *(figure_cell(name, summary.rows, row) for name in SHOWN),
                "—" if key in sampled else f"{matches.get(key, 0)}/{row.n}"]

    for prompt in schedule_prompts(results.config):
        # One table per prompt and factor levels, the levels in its title: in the strategy
        # column, an 80-column terminal cut every label to "concurre…", and the rows of a
        # factor study could not be told apart.
        tables: dict[tuple[tuple[str, object], ...], list[SummaryRow]] = {}
        for row in (r for r in summary.rows if r.prompt == prompt):
            tables.setdefault(tuple(condition_key(row)[2]), []).append(row)
        for at, rows in tables.items():
            title = " · ".join([f"prompt: {prompt}", *(f"{n}={v}" for n, v in at)])
            console.print(_table(title, [cells(row) for row in rows]))
    console.print(LEGEND)
    reasons = sorted({r.chip_mj_per_token_reason for r in summary.rows
                      if r.chip_mj_per_token_reason})
    for reason in reasons:
        console.print(f"[yellow]chip energy —[/yellow] {reason}")
    if note is not None:
        console.print(f"[yellow]disturbed —[/yellow] {note}")
        _list_disturbed(results)
    extra = adaptive.bought(results)
    if extra is not None:
        console.print(f"adaptive repeats — {escape(extra)}")
        rec = results.adaptive
        for c in rec.conditions if rec is not None else []:
            if not c.reached:
                levels = "".join(f" · {n}={v}" for n, v in c.factors.items())
                console.print(f"  not within target: {escape(c.prompt)} · "
                              f"{escape(c.strategy)}{escape(levels)} {_width(c)}")
    _show_time(results)
    counts = report.counts()
    console.print(
        f"validation: {counts.get('blocking', 0)} blocking, {counts.get('rejected', 0)} "
        f"rejected, {counts.get('warning', 0)} warnings (details: phase validate FILE)"
    )
