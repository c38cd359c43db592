"""`phase merge OUT FILES...`: the shards of one campaign into one results file."""

from __future__ import annotations

from pathlib import Path

import click

from phase.campaign.merge import merge_files
from phase.cli.common import say


@click.command("merge")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def merge(out: Path, files: tuple[Path, ...]) -> None:
    """Merge the shard FILES of one campaign into OUT (a new file; inputs are only read).

    \b
    phase merge results/speculative-h200-2026-12-01.json shards/*-shard-*-of-4.json

    Refused, naming what differs: files that are not complete shards, mixed campaign ids,
    configs, model sha256s, phase or llama.cpp versions or declared sensors, a missing or
    duplicated shard, and hosts outside one host class (CPU model, cores, memory, GPU model
    and driver, accelerator build: hosts may differ by name only).

    \b
    Exit status:
      0  OUT written
      1  OUT could not be written (a full disk): nothing is left behind, lock included
      2  refused or bad input (nothing is written): the message says what differs
    """
    results = merge_files(out, list(files))
    hosts = ", ".join(f"{h.hostname} (shard {', '.join(map(str, h.shards))})"
                      for h in results.hosts)
    say(f"merged {len(results.merged_from)} shard(s) of campaign {results.campaign_id}: "
        f"{len(results.runs)} runs from {hosts}")
    click.echo(str(out))
