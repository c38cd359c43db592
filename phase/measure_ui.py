"""The terminal side of a campaign: progress bar, interruption, and the closing table."""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
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

    def close(self) -> None:
        if self.task is not None:
            self.progress.stop()


def _plan(exp: Experiment, output: Path | None, resume: bool, args: dict[str, Any],
          opts: dict[str, Any]) -> CampaignPlan:
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
        output=output or default_output(exp.name),
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
        opts: dict[str, Any]) -> int:
    """Prepare (errors here are bad input: exit 2, nothing written), run, summarise."""
    observer = ProgressObserver()
    try:
        plan = _plan(exp, output, resume, args, opts)
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


def _energy_per_token_mj(run: Run, chip: str | None) -> float | None:
    for window in run.energy:
        if window.sensor == chip and window.energy_j is not None:
            return window.energy_j / run.tokens * 1000.0
    return None


def print_summary(results: ResultsFile) -> None:
    """Means of repeats per prompt × strategy, with ratios to plain on the same prompt."""
    chip = next((s.name for s in results.sensors if s.scope == "chip"), None)
    why = (
        "; ".join(f"{u.backend}: {u.reason}" for u in results.sensors_unavailable)
        if chip is None else None
    )
    groups: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in results.runs:
        groups[(run.prompt, run.strategy)].append(run)
    for prompt in [p.name for p in results.config.prompts]:
        table = Table(title=f"prompt: {prompt}", title_justify="left")
        for col in ("strategy", "tok/s", "vs plain", "accepted", "chip mJ/tok", "E vs plain",
                    "matches plain", "n"):
            table.add_column(col, justify="left" if col == "strategy" else "right")
        plain_tps = _mean([r.tokens_per_s for r in groups.get((prompt, "plain"), [])])
        plain_e = _mean([_energy_per_token_mj(r, chip) for r in groups.get((prompt, "plain"), [])])
        for strategy in results.config.strategies:
            runs = groups.get((prompt, strategy), [])
            if not runs:
                continue
            tps = _mean([r.tokens_per_s for r in runs])
            acc = _mean([r.acceptance for r in runs])
            e = _mean([_energy_per_token_mj(r, chip) for r in runs])
            same = sum(1 for r in runs if r.matches_plain)
            table.add_row(
                strategy,
                _fmt(tps, "{:.1f}"),
                _fmt(tps / plain_tps if tps and plain_tps else None, "{:.2f}×"),
                _fmt(acc * 100 if acc is not None else None, "{:.0f}%"),
                _fmt(e, "{:.1f}"),
                _fmt(e / plain_e if e and plain_e else None, "{:.2f}"),
                f"{same}/{len(runs)}",
                str(len(runs)),
            )
        console.print(table)
    if why:
        console.print(f"[yellow]chip energy —[/yellow] {why}")


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _fmt(value: float | None, pattern: str) -> str:
    return "—" if value is None else pattern.format(value)
