"""What a page kind is: one interface for every kind of generated page on the site.

A page kind (a note's pages, the data pages, the cross-host pages, the Benchmarks page, the
home page's notes list) is a `PageKind`: a name, the directories under the docs dir it writes,
`render(build)` from the build's inputs to the pages and files it makes, and the entries it
adds to the site's navigation. The build (site/docs.py) renders every kind in
`phase.publish.pages.PAGE_KINDS` and writes what each returns; it knows no kind by name, so
adding a page kind is adding a module with one `PageKind` subclass and listing it there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import jinja2

from phase.publish.archive.store import Archive, FrozenVersion
from phase.publish.data.cache import DatasetCache
from phase.publish.data.datasets import Dataset
from phase.publish.notes.page import Page
from phase.publish.notes.source import NoteSource
from phase.publish.numbers.bench import BenchResults
from phase.validate import RuleSettings

# One entry of mkdocs' nav: {title: page} or {title: [entries]}.
NavItem = dict[str, Any]


@dataclass(frozen=True)
class BuildInputs:
    """Everything a page kind may read, gathered once per build: results files already
    validated, notes already resolved to their versions' files, the archive, the cache."""

    env: jinja2.Environment  # the templates, with the bench results and repository root set
    settings: RuleSettings
    templates_dir: Path
    archive: Archive
    cache: DatasetCache
    notes: list[NoteSource]  # authored, then generated
    versions: list[list[list[Dataset]]]  # per note, per version: the results files it shows
    datasets: dict[Path, Dataset]  # every results file with finished runs, by path
    cited_by: dict[Path, list[NoteSource]]  # a results file -> the authored notes citing it
    bench: list[BenchResults]  # bench/results/, by name (notes cite them, one page shows them)
    freeze: bool  # whether new note versions are returned for the archive
    # Whether a cross-host table may show campaigns whose builds differ (phase.publish.pages.
    # builds), whatever the notes say.
    allow_mixed_builds: bool = False
    # A campaign's file name -> the confirmation campaign of its headline, if any (the
    # build's one phase.publish.data.confirmations.attach of `datasets`).
    confirmations: dict[str, Dataset] = field(default_factory=dict)

    @cached_property
    def used_by(self) -> dict[Path, list[tuple[str, str, int]]]:
        """A results file -> (title, slug, version) of every note version that shows it."""
        out: dict[Path, list[tuple[str, str, int]]] = {}
        for note, by_version in zip(self.notes, self.versions, strict=True):
            for number, files in enumerate(by_version, start=1):
                for ds in files:
                    out.setdefault(ds.path, []).append((note.meta.title, note.slug, number))
        return out

    @cached_property
    def published(self) -> list[Dataset]:
        """The results files that get a data page: every one but a derived summary no note
        shows (its raw file's page offers it already)."""
        return [ds for path, ds in self.datasets.items()
                if not ds.derived_summary or path in self.used_by]


@dataclass
class Rendered:
    """What one page kind made, by path under the docs dir."""

    pages: list[Page] = field(default_factory=list)  # mkdocs pages, each with its own files
    files: dict[str, str | bytes] = field(default_factory=dict)  # files that are not pages
    to_freeze: list[FrozenVersion] = field(default_factory=list)  # new note versions
    states: dict[str, list[str]] = field(default_factory=dict)  # note slug -> per version
    lines: list[str] = field(default_factory=list)  # what to tell the user


class PageKind(ABC):
    """One kind of page. `dirs` are the directories under the docs dir it writes into, and
    nothing else: in the repository layout the build owns exactly those under docs/ (with
    the hand-written pages beside them) and swaps them in whole."""

    name: ClassVar[str]
    dirs: ClassVar[tuple[str, ...]]

    @abstractmethod
    def render(self, build: BuildInputs) -> Rendered:
        """Every page and file of this kind for one build (written by the caller)."""

    def nav(self, notes: list[NoteSource]) -> list[NavItem]:
        """This kind's entries in the site's navigation, in order; none by default (its pages
        are reached by links)."""
        return []

    def owns(self, rel: str) -> bool:
        """Whether `rel` (a path under the docs dir) lies in one of this kind's dirs."""
        return any(Path(rel).is_relative_to(d) for d in self.dirs)

