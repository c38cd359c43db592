"""The `phase` command line: parses arguments, calls the library, prints.

One module per command (or command group); this package is the only importer of click, and
`common.reporting_errors` is the only place a PhaseError becomes an `error:` line and its exit
code. Exit codes: 0 success; 1 a domain error (one line, no traceback) or a failed check;
2 a usage error (bad option, unknown name, unreadable input); each command's --help says which
apply to it.
"""

from __future__ import annotations

import click

from phase import __version__
from phase.cli.common import PhaseGroup
from phase.cli.generate import generate_command
from phase.cli.measure import measure
from phase.cli.merge import merge
from phase.cli.models import models
from phase.cli.publish import publish_command
from phase.cli.schema import schema
from phase.cli.sensors import sensors
from phase.cli.site import build, serve_command, site
from phase.cli.validate import validate


@click.group(cls=PhaseGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="phase")
def main() -> None:
    """Measure what LLM inference optimisations cost in energy and time, and publish it.

    \b
    Typical use:
      phase models fetch qwen2.5-coder-1.5b   get an embedded model (verified)
      phase sensors                           which energy sensors this machine has
      phase measure speculative -o results/x.json
      phase measure speculative --shard 0/4  one part of it (a job array's task)
      phase merge results/x.json shards/*.json   the shards of one campaign, checked
      phase validate results/x.json           check a results file against the rules
      phase site                              validate, render notes, build site/
      phase publish NOTE                      freeze a note's new versions (published/)
    """


for _command in (models, schema, measure, merge, validate, sensors, generate_command, build, site,
                 publish_command, serve_command):
    main.add_command(_command)


def run_cli(argv: list[str] | None = None) -> int:
    """Entry point for tests: run the CLI and return its exit code instead of exiting."""
    try:
        main.main(args=argv, prog_name="phase", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


__all__ = ["main", "run_cli"]
