"""How an experiment script becomes a campaign: its defaults, its prompts, its command line.

An experiment (experiments/<name>.py) declares an `Experiment` and exposes
`command = measure_command(EXPERIMENT)`. Running the script directly and running
`phase measure <name>` invoke that same click command.
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import click

from phase.errors import UsageProblem
from phase.machine import REPO_ROOT

EXPERIMENTS_DIR = REPO_ROOT / "experiments"


@dataclass(frozen=True)
class Experiment:
    name: str
    note: str
    description: str
    prompts_dir: Path
    prompts: tuple[str, ...]
    strategies: tuple[str, ...]
    target: str
    draft: str
    tokens: int = 384
    repeats: int = 3
    cooldown_s: float = 2.0
    idle_window_s: float = 1.0
    quick: dict[str, Any] = field(default_factory=dict)


def load_experiment(name: str, directory: Path = EXPERIMENTS_DIR) -> ModuleType:
    path = directory / f"{name}.py"
    if not path.is_file():
        known = sorted(p.stem for p in directory.glob("*.py") if not p.stem.startswith("_"))
        known = [k for k in known if _is_experiment(directory / f"{k}.py")]
        raise UsageProblem(f"unknown experiment '{name}': known are {', '.join(known) or 'none'}")
    spec = importlib.util.spec_from_file_location(f"phase_experiment_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "command"):
        raise UsageProblem(f"{path} defines no `command`; it is not a phase experiment")
    return module


def _is_experiment(path: Path) -> bool:
    try:
        return "measure_command(" in path.read_text(encoding="utf-8")
    except OSError:
        return False


def _csv(value: str | None) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise click.BadParameter("give at least one name")
    return items


def measure_command(exp: Experiment) -> click.Command:
    """The click command shared by `python experiments/<name>.py` and `phase measure <name>`."""

    @click.command(
        name=exp.name,
        help=f"{exp.description}\n\nOUTPUT defaults to "
        f"results/{exp.name}-<host-class>-<date>.json.",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    @click.argument("output_arg", metavar="[OUTPUT]", required=False,
                    type=click.Path(dir_okay=False, path_type=Path))
    @click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
                  help="Results file to write (same as OUTPUT).")
    @click.option("--resume", "resume", type=click.Path(dir_okay=False, path_type=Path),
                  help="Continue an interrupted campaign in this file (same options as before).")
    @click.option("--quick", is_flag=True,
                  help="Smoke campaign: small test model, short generations, fewer strategies; "
                  "written under results/quick/, which the site does not publish.")
    @click.option("--target", help=f"Target model: embedded name, .gguf path or hf:REPO/FILE "
                  f"[default: {exp.target}]")
    @click.option("--draft", help=f"Draft model for draft-k [default: {exp.draft}]")
    @click.option("--tokens", type=click.IntRange(min=1),
                  help=f"Tokens generated per run [default: {exp.tokens}]")
    @click.option("--repeats", type=click.IntRange(min=1),
                  help=f"Repeats of every prompt × strategy [default: {exp.repeats}]")
    @click.option("--strategies", help=f"Comma list [default: {','.join(exp.strategies)}]")
    @click.option("--prompts", help=f"Comma list of prompt names in {exp.prompts_dir.name}/ "
                  f"[default: {','.join(exp.prompts)}]")
    @click.option("--threads", type=click.IntRange(min=1), help="CPU threads [default: all cores]")
    @click.option("--n-ctx", type=click.IntRange(min=64), default=4096, show_default=True,
                  help="Context length.")
    @click.option("--sensor/--no-sensor", "use_sensors", default=True, show_default=True,
                  help="Sample every energy sensor found (see `phase sensors`).")
    @click.option("--meter", "meters", multiple=True, metavar="FILE:SCOPE:TAU",
                  help="External meter trace (CSV/JSON), e.g. wall.csv:wall:1.0. Repeatable.")
    @click.option("--rapl-root", help="powercap sysfs root [default: /sys/class/powercap]")
    @click.option("--hwmon-root", help="hwmon sysfs root [default: /sys/class/hwmon]")
    @click.option("--cooldown", "cooldown_s", type=click.FloatRange(min=0),
                  help=f"Seconds of rest before each run [default: {exp.cooldown_s}]")
    @click.option("--idle-window", "idle_window_s", type=click.FloatRange(min=0),
                  help=f"Seconds of idle sampling before each run [default: {exp.idle_window_s}]")
    @click.option("--sample-hz", type=click.FloatRange(min=0, min_open=True), default=20.0,
                  show_default=True, help="Sensor sampling rate.")
    @click.option("--seed", type=int, default=0, show_default=True,
                  help="Seed of the shuffled order.")
    @click.option("--no-shuffle", is_flag=True, help="Keep the same order in every repeat.")
    @click.option("--raw-prompt", is_flag=True, help="Send prompts without the chat template.")
    def command(output_arg: Path | None, output: Path | None, resume: Path | None,
                quick: bool, **opts: Any) -> None:
        from phase import measure_ui

        if sum(x is not None for x in (output_arg, output, resume)) > 1:
            raise click.UsageError("give the output once: OUTPUT, -o or --resume")
        settings = dict(exp.quick) if quick else {}
        chosen = {k: v for k, v in opts.items() if v is not None}
        plan_args = {
            "target": exp.target, "draft": exp.draft, "tokens": exp.tokens,
            "repeats": exp.repeats, "strategies": list(exp.strategies),
            "prompts": list(exp.prompts), "cooldown_s": exp.cooldown_s,
            "idle_window_s": exp.idle_window_s, **settings,
        }
        for key in ("target", "draft", "tokens", "repeats", "cooldown_s", "idle_window_s"):
            if key in chosen:
                plan_args[key] = chosen[key]
        plan_args["strategies"] = _csv(chosen.get("strategies")) or plan_args["strategies"]
        plan_args["prompts"] = _csv(chosen.get("prompts")) or plan_args["prompts"]
        target = resume or output_arg or output
        code = measure_ui.run(exp, target, resume is not None, plan_args, opts, quick=quick)
        sys.exit(code)

    return command


def resume_hint(argv: list[str], output: Path) -> str:
    """The command that continues this campaign: the original one, resuming its file."""
    args = list(argv) or ["phase"]
    cleaned: list[str] = []
    skip = False
    for arg in args[1:]:
        if skip:
            skip = False
            continue
        if arg in ("-o", "--output", "--resume"):
            skip = True
            continue
        if arg.startswith(("--output=", "--resume=")) or arg.endswith(".json"):
            continue
        cleaned.append(arg)
    head = "phase" if Path(args[0]).name == "phase" else f"python {args[0]}"
    return " ".join([head, *map(shlex.quote, cleaned), "--resume", shlex.quote(str(output))])


__all__ = ["Experiment", "load_experiment", "measure_command", "resume_hint"]
