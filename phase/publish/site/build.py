"""Orchestration: check the output directories, render into staging, build, publish, swap.

    build_docs(paths)     render every page kind (docs) into a staging docs dir, then swap the
                          generated parts of docs/ (or the whole --docs-dir) in; freezes nothing
    build_site(paths)     the same, plus `mkdocs build --strict` into a staging site dir; once
                          that succeeded, new note versions are frozen into published/ and
                          docs/ and site/ are swapped in
    publish(paths, slug)  freeze one note's new versions after a full build in a throwaway
                          directory (docs/ and site/ are left alone)
    serve(paths.site_dir)

Before anything is written every output directory is checked (phase/publish/site/outdirs.py): phase
replaces only what it made. A failed build (blocking finding, template error, mkdocs error)
leaves docs/, site/ and published/ as they were. Every directory is configurable through
SitePaths, so tests build into temporary directories. The page kinds rendered are
phase.publish.pages.PAGE_KINDS unless `kinds` names others (a test's own kind, for one).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from phase.publish.archive.store import Archive, ArchiveError
from phase.publish.notes.source import NoteError
from phase.publish.pages import PAGE_KINDS
from phase.publish.pages.base import PageKind
from phase.publish.site.docs import (
    BlockedError,
    BuildResult,
    copy_hand_written,
    render_docs,
    results_files,
)
from phase.publish.site.mkdocs_run import mkdocs_build as _mkdocs
from phase.publish.site.outdirs import staging
from phase.publish.site.paths import SitePaths, generated_dirs
from phase.publish.site.serving import serve, serving
from phase.validate import Report, RuleSettings, format_finding


def _render(paths: SitePaths, settings: RuleSettings | None, include_quick: bool, *,
            site: bool, kinds: Sequence[PageKind]) -> BuildResult:
    """Check the outputs, render (and build) into staging, freeze, swap in (see module doc)."""
    settings = settings or RuleSettings()
    paths = replace(paths, generated=generated_dirs(kinds))
    paths.check_outputs(site=site)
    with staging() as stage:
        if paths.docs_is_source:
            # The generated parts go next to the hand-written pages: mkdocs reads a full tree
            # built aside, whose generated parts are then moved into their own staging dirs.
            parts = {target: stage.stage(target) for target in paths.docs_targets()}
            docs = stage.scratch(paths.docs_dir)
        else:
            parts, docs = {}, stage.stage(paths.docs_dir)
        copy_hand_written(paths.docs_src, docs, paths.generated)
        result = render_docs(paths, docs, settings, include_quick, freeze=site, kinds=kinds)
        if site:
            _mkdocs(paths.mkdocs_yml, docs, stage.stage(paths.site_dir), result.notes, kinds)
        for target, staged in parts.items():
            built = docs / target.relative_to(paths.docs_dir)
            if built.is_dir():
                staged.rmdir()
                built.rename(staged)
        if site:
            _freeze(paths, result)
        stage.commit()
    return result


def _freeze(paths: SitePaths, result: BuildResult, only: str | None = None) -> None:
    if result.to_freeze and paths.foreign_into_project_archive:
        names = ", ".join(f"{f.manifest.note} v{f.manifest.version}" for f in result.to_freeze)
        result.lines.append(
            f"not frozen: {names}: the results dir {paths.results_dir} is not this project's "
            f"results/, and {paths.published_dir} is the project's archive; give "
            "--published-dir DIR, or --into-project-archive to publish them there")
        return
    archive = Archive(paths.published_dir)
    for frozen in result.to_freeze:
        if only is None or frozen.manifest.note == only:
            result.frozen.append(archive.write(frozen))


def build_docs(paths: SitePaths, settings: RuleSettings | None = None, *,
               include_quick: bool = False,
               kinds: Sequence[PageKind] = PAGE_KINDS) -> BuildResult:
    """Render the docs (no mkdocs, no freezing): new versions render as they would be frozen."""
    return _render(paths, settings, include_quick, site=False, kinds=kinds)


def build_site(paths: SitePaths, settings: RuleSettings | None = None, *,
               include_quick: bool = False,
               kinds: Sequence[PageKind] = PAGE_KINDS) -> BuildResult:
    """Render, `mkdocs build --strict`, freeze new versions, swap docs/ and site/ in."""
    return _render(paths, settings, include_quick, site=True, kinds=kinds)


def publish(paths: SitePaths, slug: str, settings: RuleSettings | None = None) -> BuildResult:
    """Freeze note `slug`'s new versions after a full strict build in a throwaway directory
    (the docs and site directories are not touched)."""
    settings = settings or RuleSettings()
    paths.check_archive()
    with tempfile.TemporaryDirectory(prefix="phase-publish-") as scratch:
        docs = Path(scratch) / "docs"
        copy_hand_written(paths.docs_src, docs)
        result = render_docs(paths, docs, settings)
        if slug not in {n.slug for n in result.notes}:
            known = ", ".join(n.slug for n in result.notes) or "none"
            raise NoteError(f"no note {slug!r}; known notes: {known}", exit_code=2)
        _mkdocs(paths.mkdocs_yml, docs, Path(scratch) / "site", result.notes)
        _freeze(paths, result, only=slug)
    return result


def _brief(report: Report) -> list[str]:
    """Rejected values in full (they change what is published); warnings counted per rule."""
    lines = [format_finding(f) for f in report.findings if f.severity == "rejected"]
    per_rule = Counter(f.rule for f in report.findings if f.severity == "warning")
    if per_rule:
        counted = ", ".join(f"{n} {rule}" for rule, n in sorted(per_rule.items()))
        lines.append(f"{report.file}: warnings: {counted} (details: phase validate {report.file})")
    return lines


def describe(result: BuildResult, paths: SitePaths | None = None) -> list[str]:
    """Lines for the CLI: what was validated, rendered and published."""
    lines = [line for r in result.reports if r.has_findings for line in _brief(r)]
    c = result.counts
    lines.append(
        f"validated {len(result.reports)} results file(s): {c['rejected']} rejected value(s), "
        f"{c['warning']} warning(s), no blocking findings"
    )
    frozen = {(p.parent.name, p.name) for p in result.frozen}
    for note in result.notes:
        states = []
        for state in result.states.get(note.slug, []):
            number, what = state.split(" ", 1)
            if what == "new":
                what = "published now" if (note.slug, number) in frozen else "not yet published"
            states.append(f"{number} ({what})")
        kind = " [generated]" if note.kind == "generated" else ""
        lines.append(f"note {note.slug}{kind}: " + ", ".join(states))
    lines += result.lines
    for path in result.frozen:
        shown = path.relative_to(paths.root) if paths and path.is_relative_to(paths.root) else path
        lines.append(f"froze {shown} (commit it: it is the published record)")
    published = {d.path for d in result.datasets}
    for r in result.reports:
        if Path(r.file) not in published:
            lines.append(f"skipped {r.file}: no finished runs yet")
    return lines


__all__ = [
    "ArchiveError",
    "BlockedError",
    "BuildResult",
    "NoteError",
    "SitePaths",
    "build_docs",
    "build_site",
    "describe",
    "publish",
    "results_files",
    "serve",
    "serving",
]
