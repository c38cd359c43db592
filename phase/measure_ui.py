"""The terminal side of a campaign: progress bar, interruption, and the closing table."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from phase.campaign import Campaign, CampaignPlan, ScheduledRun, default_output, load_prompt
from phase.errors import PhaseError, UsageProblem
from phase.experiment import Experiment, resume_hint
from phase.results import ResultsFile, Run

console = Console(stderr=True)


class ProgressObserver:
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
        self.task: Any = None

    def message(self, text: str) -> None:
        console.print(f"[dim]{text}[/dim]")

    def campaign_started(self, total: int, already_done: int) -> None:
        if already_done:
            console.print(f"resuming: {already_done} of {total} runs already recorded")
        self.progress.start()
        self.task = self.progress.add_task("starting", total=total, completed=already_done)

    def run_started(self, index: int, scheduled: ScheduledRun) -> None:
        label = f"{scheduled.prompt} · {scheduled.strategy} (r{scheduled.repeat})"
        self.progress.update(self.task, description=label)

    def run_finished(self, index: int, run: Run) -> None:
        self.progress.advance(self.task)
        if not console.is_terminal:
            # Redirected to a log: the bar only draws at the end, so leave a line per run.
            done = int(self.progress.tasks[0].completed)
            accepted = "" if run.acceptance is None else f", {run.acceptance:.0%} accepted"
            console.print(
                f"[{done}/{int(self.progress.tasks[0].total or 0)}] {run.id}: "
                f"{run.tokens_per_s:.1f} tok/s{accepted}"
            )

    def close(self) -> None:
        if self.task is not None:
            self.progress.stop()


def _default_output(exp: Experiment, quick: bool) -> Path:
    # Smoke campaigns are not studies: keep them out of results/, which the site publishes.
    directory = Path("results") / "quick" if quick else Path("results")
    directory.mkdir(parents=True, exist_ok=True)
    return default_output(exp.name, directory)


def _plan(exp: Experiment, output: Path | None, resume: bool, args: dict[str, Any],
          opts: dict[str, Any], quick: bool) -> CampaignPlan:
    known = {p.stem for p in exp.prompts_dir.glob("*.txt")}
    unknown = [p for p in args["prompts"] if p not in known]
    if unknown:
        raise UsageProblem(
            f"unknown prompt(s) {', '.join(unknown)}: known are {', '.join(sorted(known))}"
        )
    prompts = [load_prompt(exp.prompts_dir / f"{name}.txt") for name in args["prompts"]]
    return CampaignPlan(
        experiment=exp.name,
        note=exp.note,
        output=output or _default_output(exp, quick),
        target=args["target"],
        draft=args["draft"],
        prompts=prompts,
        strategies=args["strategies"],
        tokens=args["tokens"],
        repeats=args["repeats"],
        seed=opts["seed"],
        shuffle=not opts["no_shuffle"],
        n_ctx=opts["n_ctx"],
        threads=opts["threads"],
        cooldown_s=args["cooldown_s"],
        idle_window_s=args["idle_window_s"],
        sample_hz=opts["sample_hz"],
        chat_template=not opts["raw_prompt"],
        use_sensors=opts["use_sensors"],
        meters=list(opts["meters"]),
        rapl_root=opts["rapl_root"],
        hwmon_root=opts["hwmon_root"],
        resume=resume,
    )


def run(exp: Experiment, output: Path | None, resume: bool, args: dict[str, Any],
        opts: dict[str, Any], *, quick: bool = False) -> int:
    """Prepare (errors here are bad input: exit 2, nothing written), run, summarise."""
    observer = ProgressObserver()
    try:
        plan = _plan(exp, output, resume, args, opts, quick)
        campaign = Campaign(plan, observer)
        campaign.prepare()
    except PhaseError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        return 2
    for backend in campaign.unavailable:
        console.print(f"[yellow]no energy from {backend.backend}:[/yellow] {backend.reason}")
    console.print(f"writing {plan.output}")
    try:
        results = campaign.run()
    except KeyboardInterrupt:
        observer.close()
        console.print(
            f"\n[yellow]interrupted[/yellow]: finished runs are saved in {plan.output}\n"
            f"continue with: {resume_hint(sys.argv, plan.output)}"
        )
        return 130
    except PhaseError as exc:
        observer.close()
        click.secho(f"error: {exc} (finished runs are saved in {plan.output})", fg="red", err=True)
        return 1
    observer.close()
    print_summary(results)
    click.echo(str(plan.output))
    return 0


def print_summary(results: ResultsFile) -> None:
    """Per prompt: the same derived rows the site shows (validated, rejected values left out)."""
    from phase.publish.summary import summarize
    from phase.validate import runs_by_condition, validate_results

    report = validate_results(results, results.id)
    summary = summarize(results, report, results.id)
    unstable = report.unstable_conditions()
    plain_speed = {r.prompt: r.tokens_per_s for r in summary.rows if r.strategy == "plain"}
    matches = {
        condition: sum(1 for r in runs if r.matches_plain)
        for condition, runs in runs_by_condition(results).items()
    }
    for prompt in [p.name for p in results.config.prompts]:
        table = Table(title=f"prompt: {prompt}", title_justify="left")
        for col in ("strategy", "tok/s", "×plain", "accept", "CPU ms/t", "mJ/tok", "E×plain",
                    "=plain"):
            table.add_column(col, justify="left" if col == "strategy" else "right")
        for row in (r for r in summary.rows if r.prompt == prompt):
            base = plain_speed.get(prompt)
            flag = " *" if (prompt, row.strategy) in unstable else ""
            table.add_row(
                row.strategy + flag,
                _fmt(row.tokens_per_s, "{:.1f}"),
                _fmt(row.tokens_per_s / base if row.tokens_per_s and base else None, "{:.2f}×"),
                _fmt(row.acceptance * 100 if row.acceptance is not None else None, "{:.0f}%"),
                _fmt(row.cpu_ms_per_token, "{:.1f}"),
                _fmt(row.chip_mj_per_token, "{:.1f}"),
                _fmt(row.ratio_vs_plain, "{:.2f}"),
                f"{matches.get((prompt, row.strategy), 0)}/{row.n}",
            )
        console.print(table)
    console.print(
        "×plain: speed vs plain · accept: drafted tokens kept · mJ/tok: chip energy · "
        "=plain: runs whose output equals plain's · * unstable: spread over the variance limit"
    )
    reasons = sorted({r.chip_mj_per_token_reason for r in summary.rows
                      if r.chip_mj_per_token_reason})
    for reason in reasons:
        console.print(f"[yellow]chip energy —[/yellow] {reason}")
    counts = report.counts()
    console.print(
        f"validation: {counts.get('blocking', 0)} blocking, {counts.get('rejected', 0)} "
        f"rejected, {counts.get('warning', 0)} warnings (details: phase validate FILE)"
    )


def _fmt(value: float | None, pattern: str) -> str:
    return "—" if value is None else pattern.format(value)
