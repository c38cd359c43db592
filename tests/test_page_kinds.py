"""Adding a page kind is adding a file: a kind defined here, handed to the real build, gets its
pages, downloads and navigation entry into the site, in the repository layout too (its
directory owned and swapped in beside the hand-written pages), and may write nowhere else."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest
from test_publish_inputs import make_inputs

from phase.publish.notes.page import Page
from phase.publish.notes.source import NoteSource
from phase.publish.pages import PAGE_KINDS
from phase.publish.pages.base import BuildInputs, NavItem, PageKind, Rendered
from phase.publish.site.build import SitePaths, build_docs, build_site
from phase.publish.site.outdirs import MARKER

REPO = Path(__file__).resolve().parent.parent


class ToyKind(PageKind):
    """One page listing every note with how many results files each version shows, linked to
    the note (mkdocs --strict checks the link), and the same as a CSV download."""

    name = "toy"
    dirs = ("toy",)

    def render(self, build: BuildInputs) -> Rendered:
        rows = [(note.slug, number, len(files))
                for note, by_version in zip(build.notes, build.versions, strict=True)
                for number, files in enumerate(by_version, start=1)]
        lines = ["# Toy", ""] + [f"- [{slug}](../notes/{slug}/index.md) v{number}: {n} file(s)"
                                 for slug, number, n in rows]
        table = "slug,version,files\n" + "".join(f"{s},{v},{n}\n" for s, v, n in rows)
        return Rendered([Page("toy/index.md", "\n".join(lines) + "\n",
                              {"toy/versions.csv": table.encode()})])

    def nav(self, notes: list[NoteSource]) -> list[NavItem]:
        return [{"Toy": "toy/index.md"}]


class StrayKind(ToyKind):
    """Writes into a directory it does not own."""

    name = "stray"

    def render(self, build: BuildInputs) -> Rendered:
        return Rendered(files={"raw/stray.txt": "not mine"})


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _repository_layout(tmp_path: Path) -> SitePaths:
    """Hand-written pages and generated ones in one docs dir, as in the repository."""
    inputs = make_inputs(tmp_path / "in", versions=2, repo_notes=False)
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "docs", docs, ignore=shutil.ignore_patterns(
        "notes", "raw", "hosts", "bench", "vendor"))
    return SitePaths.default(REPO, results_dir=inputs.results_dir, notes_dir=inputs.notes_dir,
                             docs_src=docs, docs_dir=docs, site_dir=tmp_path / "site",
                             published_dir=tmp_path / "pub")


@pytest.mark.slow  # a whole site: mkdocs build
def test_a_new_page_kind_is_built_into_the_site(tmp_path: Path) -> None:
    paths = _repository_layout(tmp_path)
    hand_written = _tree(paths.docs_dir)
    result = build_site(paths, kinds=[*PAGE_KINDS, ToyKind()])

    assert "toy/index.md" in result.pages
    # Its inputs are the build's: the fixture note's two versions, one and two files.
    table = list(csv.reader(io.StringIO((paths.docs_dir / "toy/versions.csv").read_text())))
    assert table == [["slug", "version", "files"], ["fixture-versions", "1", "1"],
                     ["fixture-versions", "2", "2"]]
    # Its directory is owned like the other generated ones, beside the hand-written pages.
    assert (paths.docs_dir / "toy" / MARKER).is_file()
    assert {k: v for k, v in _tree(paths.docs_dir).items() if k in hand_written} == hand_written
    # mkdocs built it, its link resolved, and the navigation lists it after the other kinds.
    page = (paths.site_dir / "toy/index.html").read_text(encoding="utf-8")
    assert 'href="../notes/fixture-versions/index.html"' in page
    assert (paths.site_dir / "toy/versions.csv").read_bytes() == (
        paths.docs_dir / "toy/versions.csv").read_bytes()
    home = (paths.site_dir / "index.html").read_text(encoding="utf-8")
    assert home.index('href="bench/index.html"') < home.index('href="toy/index.html"')


def test_the_default_build_has_no_toy_page(tmp_path: Path) -> None:
    paths = _repository_layout(tmp_path)
    build_docs(paths)
    assert not (paths.docs_dir / "toy").exists()
    assert (paths.docs_dir / "bench/index.md").is_file()


@pytest.mark.slow
def test_a_kind_writing_outside_its_dirs_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    paths = _repository_layout(tmp_path)
    build_docs(paths)
    before = _tree(paths.docs_dir)
    with pytest.raises(ValueError, match=r"page kind 'stray' wrote raw/stray.txt, outside"):
        build_docs(paths, kinds=[*PAGE_KINDS, StrayKind()])
    assert _tree(paths.docs_dir) == before
