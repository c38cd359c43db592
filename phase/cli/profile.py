"""`phase profile [EXPERIMENT]`: what one forward pass costs on this machine (the cost profile
every campaign measures before its runs), printed, and written as JSON with -o."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from phase.campaign import SensorOptions, load_experiment
from phase.campaign.profiling import run_standalone, table_lines
from phase.cli.common import say
from phase.storage.outputs import NewFile


@click.command("profile", epilog="Exit status: 0 profiled; 1 a model or decoding failure; "
               "2 bad input (unknown experiment, prompt or model, an output file that exists).")
@click.argument("experiment", default="speculative")
@click.option("--target", help="Target model (default: the experiment's).")
@click.option("--draft", help="Draft model (default: the experiment's).")
@click.option("--no-draft", is_flag=True, help="Profile the target only.")
@click.option("--prompts", help="Comma list of the experiment's prompts whose mid-run KV fill "
              "is profiled (default: all of the experiment's).")
@click.option("--tokens", type=click.IntRange(min=1),
              help="Tokens a run generates; a prompt's fill is its length + tokens/2.")
@click.option("--threads", type=click.IntRange(min=1), help="CPU threads [default: physical "
              "cores].")
@click.option("--n-ctx", type=click.IntRange(min=64), help="Context length.")
@click.option("--blocks", type=click.IntRange(min=1), help="Timed blocks per pass size.")
@click.option("--min-block", "min_block_s", type=click.FloatRange(min=0),
              help="Shortest block in seconds (longer where a sensor updates slowly).")
@click.option("--quick", is_flag=True, help="The experiment's quick plan (small test model).")
@click.option("--sensor/--no-sensor", "use_sensors", default=True, show_default=True,
              help="Read energy per pass from every sensor found.")
@click.option("--no-disturbance", is_flag=True,
              help="Judge no block by foreign load or speed: none is marked disturbed or "
              "repeated (as under `phase measure --no-disturbance`; for a machine whose "
              "background load is part of what you measure).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the profile as JSON (a new file; never overwritten).")
def profile_command(experiment: str, target: str | None, draft: str | None, no_draft: bool,
                    prompts: str | None, tokens: int | None, threads: int | None,
                    n_ctx: int | None, blocks: int | None, min_block_s: float | None,
                    quick: bool, use_sensors: bool, no_disturbance: bool,
                    output: Path | None) -> None:
    """Time the target's passes of 1..17 tokens (and the draft's, and an n-gram lookup) at
    each prompt's mid-run KV fill; energy per pass where a sensor reads."""
    from phase.decode.cores import check_thread_counts

    check_thread_counts([threads], "--threads")
    exp = load_experiment(experiment)
    base = exp.quick if quick else exp.plan
    if base is None:
        raise click.UsageError(f"experiment {exp.name} declares no quick campaign")
    given: dict[str, Any] = {"target": target, "draft": draft, "tokens": tokens, "threads": threads,
             "n_ctx": n_ctx, "profile_blocks": blocks, "profile_min_block_s": min_block_s}
    plan = replace(base, **{k: v for k, v in given.items() if v is not None})
    if prompts is not None:
        names = tuple(p.strip() for p in prompts.split(",") if p.strip())
        if not names:
            raise click.BadParameter("give at least one prompt", param_hint="--prompts")
        plan = replace(plan, prompts=names)
    if no_draft:
        plan = replace(plan, draft=None)
    if no_disturbance:
        plan = replace(plan, disturbed_load=None)
    # Claimed before the minutes of profiling: a second writer or an existing file is
    # refused now, and a file that appears meanwhile is never replaced (exit 2 at the end).
    out = NewFile.claim(output, "-o") if output is not None else None
    try:
        result = run_standalone(exp, plan, SensorOptions(use=use_sensors), say)
        for line in table_lines(result):
            click.echo(line)
        if out is not None:
            out.write(result.model_dump_json(indent=1) + "\n")
            say(f"wrote {output}")
    finally:
        if out is not None:
            out.release()
