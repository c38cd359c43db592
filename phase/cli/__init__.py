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
from phase.cli.common import LazyGroup

# Each command's module is imported only when that command runs (or shows its own --help):
# `phase --help` and light commands start without pandas, Altair, mkdocs or llama.cpp.
# name -> (module, attribute, the line `phase --help` shows)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "bandwidth": ("phase.cli.bandwidth", "bandwidth_command",
                  "Measure memory bandwidth: STREAM-style copy and triad by thread count."),
    "build": ("phase.cli.site", "build",
              "Validate every results file and render the notes into docs/ (no mkdocs)."),
    "confirm": ("phase.cli.confirm", "confirm",
                "Measure a campaign's headline condition again on fresh runs, with plain."),
    "generate": ("phase.cli.generate", "generate_command",
                 "Generate with one strategy (or serve a workload); print the numbers."),
    "measure": ("phase.cli.measure", "measure",
                "Run an experiment campaign (phase measure EXPERIMENT --help)."),
    "merge": ("phase.cli.merge", "merge",
              "Merge the shard files of one campaign into a new results file."),
    "models": ("phase.cli.models", "models",
               "List, fetch and verify GGUF models (embedded, paths, hf:REPO/FILE)."),
    "predict": ("phase.cli.predict", "predict_command",
                "The cost model against a campaign's measurements, per condition."),
    "profile": ("phase.cli.profile", "profile_command",
                "Time target and draft passes of 1..17 tokens (and energy per pass)."),
    "publish": ("phase.cli.publish", "publish_command",
                "Freeze a note's new versions into published/."),
    "schema": ("phase.cli.schema", "schema", "Print (or write) the JSON Schema of results files."),
    "sensors": ("phase.cli.sensors", "sensors",
                "List this machine's energy sensors and the chip-energy choice."),
    "serve": ("phase.cli.site", "serve_command", "Serve the built site over HTTP."),
    "site": ("phase.cli.site", "site",
             "Validate, render the notes, and build the static site (mkdocs --strict)."),
    "validate": ("phase.cli.validate", "validate",
                 "Check results files against the validation rules."),
}


@click.group(cls=LazyGroup, lazy_commands=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="phase")
def main() -> None:
    """Measure what LLM inference optimisations cost in energy and time, and publish it.

    \b
    Typical use:
      phase models fetch qwen2.5-coder-1.5b   get an embedded model (verified)
      phase sensors                           which energy sensors this machine has
      phase profile                           what a forward pass costs here
      phase bandwidth                         this machine's memory bandwidth (STREAM-style)
      phase measure speculative -o results/x.json
      phase measure speculative --shard 0/4  one part of it (a job array's task)
      phase merge results/x.json shards/*.json   the shards of one campaign, checked
      phase confirm results/x.json            its headline again, on fresh runs
      phase validate results/x.json           check a results file against the rules
      phase predict results/x.json            the cost model against the measurements
      phase site                              validate, render notes, build site/
      phase publish NOTE                      freeze a note's new versions (published/)

    Exit status: 0 success; 1 a check failed or something blocks (a blocking finding, a
    sha256 mismatch, a failed decode); 2 bad input or usage (an unknown option or name, an
    unreadable or malformed file, an output that exists). Each command's --help says which
    apply to it. Errors are one line, `error: ...`, naming the file and the JSON path.
    """


def run_cli(argv: list[str] | None = None) -> int:
    """Entry point for tests: run the CLI and return its exit code instead of exiting."""
    try:
        main.main(args=argv, prog_name="phase", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


__all__ = ["main", "run_cli"]
