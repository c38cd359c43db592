"""A note's pages, version by version: served from the archive once published, rendered
otherwise, and new versions frozen into the archive (by the caller, once the build succeeded).

    vN/index.md   the archived page bytes, then the errata about vN (note_tail)
    index.md      the latest version's archived `latest.md` bytes (or its fresh rendering for
                  a draft), then the versions list and every erratum (note_tail)

A version is published (frozen) when it is built for the first time and is freezable: not a
draft, not an incomplete campaign, not a quick preview, not a smoke test (a quick campaign or
one on phase's test model, wherever its file lies), its results named explicitly (no glob)
and present. An archived version is checked before it is served: the results it was published
with must be the ones the note lists for it, byte for byte (sha256).

`NoteKind` is the page kind: every note's pages, and the notes in the navigation.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from phase.analysis.purpose import smoke_reason
from phase.publish.archive.store import (
    Archive,
    ArchivedResults,
    ArchivedSource,
    ArchiveError,
    FrozenVersion,
    make_manifest,
    sha256_bytes,
)
from phase.publish.data.datasets import Dataset
from phase.publish.notes.page import Page
from phase.publish.notes.render import note_tail, render_version
from phase.publish.notes.source import NoteSource
from phase.publish.pages.base import BuildInputs, NavItem, PageKind, Rendered
from phase.validate import RuleSettings


@dataclass
class NotePages:
    note: NoteSource
    pages: list[Page] = field(default_factory=list)
    to_freeze: list[FrozenVersion] = field(default_factory=list)
    states: list[str] = field(default_factory=list)  # per version, for the build's report
    notices: list[str] = field(default_factory=list)


def _check_published(archive: Archive, note: NoteSource, frozen: FrozenVersion,
                     datasets: list[Dataset]) -> None:
    m = frozen.manifest
    where = archive.version_dir(m.note, m.version) / "manifest.json"
    recorded = [r.name for r in m.results]
    names = [d.name for d in datasets]
    if names != recorded:
        raise ArchiveError(
            f"{note.path}: version {m.version} was published with {', '.join(recorded)} "
            f"({where}) but now lists {', '.join(names) or 'no results'}; a published version "
            "cannot change: add a new version"
        )
    for ds, rec in zip(datasets, m.results, strict=True):
        if ds.sha256 != rec.sha256:
            raise ArchiveError(
                f"{ds.path}: sha256 {ds.sha256[:16]}… differs from {rec.sha256[:16]}… recorded "
                f"when note {m.note} v{m.version} was published ({where}); results files are "
                "never edited: restore it (e.g. `git checkout -- <file>`)"
            )


def _freeze(note: NoteSource, number: int, page: Page, latest: Page, datasets: list[Dataset],
            templates_dir: Path, settings: RuleSettings) -> FrozenVersion:
    version = note.meta.versions[number - 1]
    prefix = f"notes/{note.slug}/v{number}/"
    assets = {rel.removeprefix(prefix): data for rel, data in page.assets.items()}
    source = ArchivedSource(kind=note.kind, file=note.source_file or note.path.name,
                            sha256=sha256_bytes(note.path.read_bytes()))
    return make_manifest(
        note=note.slug, version=number, title=note.meta.title, date=version.date,
        source=source,
        results=[ArchivedResults(name=d.name, sha256=d.sha256, size_bytes=d.size_bytes)
                 for d in datasets],
        templates_dir=templates_dir, rule_settings=settings.as_dict(),
        page=page.text.encode(), latest=latest.text.encode(), assets=assets,
    )


def _served(frozen: FrozenVersion, slug: str, number: int) -> dict[str, bytes]:
    return {f"notes/{slug}/v{number}/{name}": data for name, data in frozen.assets.items()}


def smoke_tests(datasets: list[Dataset]) -> list[str]:
    """`file: why` for each of `datasets` that is a smoke test, never published."""
    return [f"{d.name}: {why}" for d in datasets if (why := smoke_reason(d.header))]


def freezable(note: NoteSource, number: int, datasets: list[Dataset]) -> bool:
    version = note.meta.versions[number - 1]
    return (note.freezable(number) and not version.globs and bool(datasets)
            and not smoke_tests(datasets))


def note_pages(
    env: jinja2.Environment,
    note: NoteSource,
    by_version: list[list[Dataset]],
    archive: Archive,
    *,
    templates_dir: Path,
    settings: RuleSettings,
    freeze: bool = True,
) -> NotePages:
    """Every page of one note (see the module doc); with `freeze`, `to_freeze` holds what this
    build publishes, which the caller writes into the archive only once the whole build
    succeeded (without, a new version's latest-page form is rendered only where it is shown)."""
    out = NotePages(note)
    count = len(note.meta.versions)
    archived = archive.versions(note.slug)
    beyond = [n for n in archived if n > count]
    if beyond:
        raise ArchiveError(
            f"{archive.version_dir(note.slug, beyond[0])} is published but {note.path} lists "
            f"{count} version(s); a published version is never withdrawn (correct it with an "
            "erratum)"
        )
    for number in range(1, count + 1):
        datasets = by_version[number - 1]
        latest = number == count
        if number in archived:
            frozen = archive.load(note.slug, number)
            _check_published(archive, note, frozen, datasets)
            page_text, latest_text = frozen.page.decode(), frozen.latest.decode()
            assets = _served(frozen, note.slug, number)
            out.states.append(f"v{number} published")
            if latest and frozen.manifest.source.sha256 != sha256_bytes(note.path.read_bytes()):
                out.notices.append(
                    f"note {note.slug}: its source changed since v{number} was published; the "
                    f"change shows only in a new version (add version {number + 1}) or as an "
                    "erratum")
        else:
            publishing = freezable(note, number, datasets)
            page = render_version(env, note, number, by_version, latest_page=False)
            latest_page = (render_version(env, note, number, by_version, latest_page=True)
                           if latest or (publishing and freeze) else page)
            page_text, latest_text, assets = page.text, latest_page.text, page.assets
            if publishing:
                if freeze:
                    out.to_freeze.append(_freeze(note, number, page, latest_page, datasets,
                                                 templates_dir, settings))
                out.states.append(f"v{number} new")
            else:
                out.states.append(f"v{number} " + ("preview" if note.preview else "draft"))
                out.notices += [f"note {note.slug}: v{number} is not published: {smoke}"
                                for smoke in smoke_tests(datasets)]
        base = f"notes/{note.slug}"
        out.pages.append(Page(f"{base}/v{number}/index.md",
                              page_text + note_tail(env, note, number), assets))
        if latest:
            out.pages.append(Page(f"{base}/index.md", latest_text + note_tail(env, note, None)))
    return out


class NoteKind(PageKind):
    """Every note's pages (authored and generated), under notes/<slug>/."""

    name = "notes"
    dirs = ("notes",)

    def render(self, build: BuildInputs) -> Rendered:
        out = Rendered()
        for note, by_version in zip(build.notes, build.versions, strict=True):
            built = note_pages(build.env, note, by_version, build.archive,
                               templates_dir=build.templates_dir, settings=build.settings,
                               freeze=build.freeze)
            out.pages += built.pages
            out.to_freeze += built.to_freeze
            out.states[note.slug] = built.states
            out.lines += built.notices
        return out

    def nav(self, notes: list[NoteSource]) -> list[NavItem]:
        if not notes:
            return []
        # Newest first, as on the home page: by the latest version's date. Titles are escaped
        # here because mkdocs' theme templates do not escape nav titles.
        ordered = sorted(notes, key=lambda n: (n.latest.date, n.meta.date, n.slug), reverse=True)
        return [{"Notes": [{html.escape(n.meta.title): f"notes/{n.slug}/index.md"}
                           for n in ordered]}]
