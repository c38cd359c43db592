"""`phase build`, `phase site`, `phase serve`: validate, render the notes, build and serve."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import click

from phase.base.errors import PhaseError
from phase.cli.common import say
from phase.publish.site.build import (
    BlockedError,
    BuildResult,
    SitePaths,
    build_docs,
    build_site,
    describe,
    serve,
)
from phase.validate import format_report

F = TypeVar("F", bound=Callable[..., None])
BLOCKED = ("Exit status: 0 built; 1 a results file has a blocking finding, or a published "
           "version's inputs changed (nothing is published); 2 bad input: an output directory "
           "phase did not make, or one that overlaps an input (nothing is touched).")


def _paths(into_project_archive: bool = False, allow_mixed_builds: bool = False,
           **dirs: str | None) -> SitePaths:
    """Relative directories are taken from the working directory (for mkdocs too)."""
    given: dict[str, Any] = {k: v for k, v in dirs.items() if v is not None}
    paths = SitePaths.default(**given)
    return replace(paths, archive_foreign=into_project_archive,
                   allow_mixed_builds=allow_mixed_builds)


def _publish(build: Callable[[SitePaths], BuildResult], paths: SitePaths) -> BuildResult:
    """Run a publish step; on blocking findings print each file's report, then fail (exit 1)."""
    try:
        result = build(paths)
    except BlockedError as exc:
        for report in exc.reports:
            say(format_report(report))
        raise
    for line in describe(result, paths):
        say(line)
    return result


QUICK = click.option("--include-quick", is_flag=True,
                     help="Also show the quick campaigns in results/quick/ as preview notes "
                     "(never published).")


def _with_dirs(fn: F) -> F:
    for option in reversed([
        click.option("--results-dir", default=None, help="Results files [results/]."),
        click.option("--notes-dir", default=None, help="Note sources [phase/notes/]."),
        click.option("--docs-dir", default=None, help="mkdocs docs dir to render into [docs/]."),
        click.option("--published-dir", default=None,
                     help="The archive of published note versions [published/]."),
        click.option("--into-project-archive", is_flag=True,
                     help="Freeze versions built from another --results-dir into this "
                     "project's own published/ (refused by default: only results/ feeds it)."),
        click.option("--allow-mixed-builds", is_flag=True,
                     help="Let a cross-host table show campaigns measured on different "
                     "llama.cpp builds or models (refused by default); the page states every "
                     "difference."),
    ]):
        fn = option(fn)
    return fn


@click.command("build", epilog=BLOCKED)
@_with_dirs
@QUICK
def build(results_dir: str | None, notes_dir: str | None, docs_dir: str | None,
          published_dir: str | None, into_project_archive: bool, allow_mixed_builds: bool,
          include_quick: bool) -> None:
    """Validate every results file and render the notes into docs/ (no mkdocs build).

    Refuses (exit 1) when any results file has a blocking finding. Replaces the generated
    pages docs/notes/ and docs/raw/ (with each raw file's derived summary as a download) only
    once all of them rendered; nothing is written into the results directory, and no version
    is published (`phase site` or `phase publish` does that).
    """
    paths = _paths(allow_mixed_builds=allow_mixed_builds, results_dir=results_dir,
                   notes_dir=notes_dir, docs_dir=docs_dir, published_dir=published_dir)
    _publish(functools.partial(build_docs, include_quick=include_quick), paths)
    click.echo(paths.docs_dir)


@click.command("site", epilog=BLOCKED)
@_with_dirs
@click.option("--site-dir", default=None, help="Where the static site goes [site/].")
@QUICK
def site(results_dir: str | None, notes_dir: str | None, docs_dir: str | None,
         published_dir: str | None, into_project_archive: bool, allow_mixed_builds: bool,
         site_dir: str | None, include_quick: bool) -> None:
    """Validate, render the notes, and build the static site (mkdocs build --strict).

    Every campaign becomes a note (one per experiment and host class; authored notes in
    phase/notes/ keep the files they cite). A note version built for the first time is
    published: frozen into published/<note>/vN/ (commit it), and served from there byte for
    byte ever after. Refuses (exit 1) when any results file has a blocking finding. The site
    works offline and from file://; open site/index.html or run `phase serve`.
    """
    paths = _paths(into_project_archive, allow_mixed_builds, results_dir=results_dir,
                   notes_dir=notes_dir, docs_dir=docs_dir, published_dir=published_dir,
                   site_dir=site_dir)
    _publish(functools.partial(build_site, include_quick=include_quick), paths)
    click.echo(paths.site_dir / "index.html")


@click.command("serve", epilog="Exit status: 0 stopped with Ctrl-C; 1 no built site, or the "
               "address cannot be served.")
@click.option("--site-dir", default=None, help="The built site [site/].")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--build", "rebuild", is_flag=True, help="Run `phase site` first.")
def serve_command(site_dir: str | None, host: str, port: int, rebuild: bool) -> None:
    """Serve the built site over HTTP until interrupted (Ctrl-C)."""
    paths = _paths(site_dir=site_dir)
    if rebuild:
        _publish(build_site, paths)
    say(f"serving {paths.site_dir} on http://{host}:{port}/ (Ctrl-C stops)")
    try:
        serve(paths.site_dir, host, port)
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        raise PhaseError(f"cannot serve on {host}:{port}: {exc.strerror}") from None
