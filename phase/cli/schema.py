"""`phase schema`: the JSON Schema of results files."""

from __future__ import annotations

import click

from phase.cli.common import say
from phase.results import atomic_write_text, json_schema_text


@click.command("schema", epilog="Exit status: 0 printed or written; 2 the file cannot be "
               "written there (no such directory, not writable); 1 the write failed (disk full).")
@click.option(
    "--write", "write_to", type=click.Path(dir_okay=False), default=None,
    help="Write the JSON Schema to this file instead of printing it (results/schema.json).",
)
def schema(write_to: str | None) -> None:
    """Print the JSON Schema of results files, so others can read them without phase."""
    if write_to:
        atomic_write_text(write_to, json_schema_text())
        say(f"wrote {write_to}")
    else:
        click.echo(json_schema_text(), nl=False)
