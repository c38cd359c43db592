"""`phase publish NOTE`: freeze a note's new versions into the archive (published/)."""

from __future__ import annotations

import functools

import click

from phase.cli.site import BLOCKED, _paths, _publish, _with_dirs
from phase.publish.site.build import publish


@click.command("publish", epilog=BLOCKED + " 2 also: no such note.")
@click.argument("note")
@_with_dirs
def publish_command(note: str, results_dir: str | None, notes_dir: str | None,
                    docs_dir: str | None, published_dir: str | None,
                    into_project_archive: bool, allow_mixed_builds: bool) -> None:
    """Publish NOTE (its slug, e.g. speculative-decoding-cpu): freeze its new versions.

    Builds the whole site in a throwaway directory (validation, rendering, mkdocs build
    --strict) and, when that succeeds, writes each version of NOTE that is not published yet
    (and is not a draft) into published/NOTE/vN/: its page, chart specs and images, findings,
    and the sha256 of every input. Later builds serve that version from there byte for byte;
    correct it with an erratum in the note's front matter. docs/ and site/ are not touched
    (`phase site` publishes new versions too, and rebuilds the site).
    """
    paths = _paths(into_project_archive, allow_mixed_builds, results_dir=results_dir,
                   notes_dir=notes_dir, docs_dir=docs_dir, published_dir=published_dir)
    result = _publish(functools.partial(publish, slug=note), paths)
    if not result.frozen:
        click.echo(f"note {note}: nothing new to publish", err=True)
    for path in result.frozen:
        click.echo(path)
