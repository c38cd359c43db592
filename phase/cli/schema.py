"""`phase schema`: the JSON Schema of results files."""

from __future__ import annotations

import json

import click

from phase.cli.common import say
from phase.results import json_schema, json_schema_text
from phase.storage.outputs import regenerate


def _is_schema(text: str) -> bool:
    """A JSON Schema this command wrote (any version of it): the one file it may replace."""
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("title") == json_schema()["title"]


@click.command("schema", epilog="Exit status: 0 printed or written; 2 the file cannot be "
               "written there (no such directory, not writable, a file that is not a phase "
               "schema, another phase writing it); 1 the write failed (disk full).")
@click.option(
    "--write", "write_to", type=click.Path(dir_okay=False), default=None,
    help="Write the JSON Schema to this file instead of printing it (results/schema.json); "
    "replaces only an earlier phase schema.",
)
def schema(write_to: str | None) -> None:
    """Print the JSON Schema of results files, so others can read them without phase."""
    if write_to:
        regenerate(write_to, json_schema_text(), "--write", "a phase results schema",
                   _is_schema)
        say(f"wrote {write_to}")
    else:
        click.echo(json_schema_text(), nl=False)
