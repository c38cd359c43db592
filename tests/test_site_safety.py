"""Output directories: phase deletes only what it made, builds swap in only on success, the
results directory is input only, relative paths mean the same for phase and mkdocs, titles
and long texts from data are safe on the page."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from factories import replaced, write_results
from test_publish_inputs import (
    GPU_FILE,
    REPO,
    Inputs,
    gpu_results,
    make_inputs,
    site_paths,
    snapshot,
    versioned_note,
)

from phase.base.errors import PhaseError
from phase.cli import main
from phase.publish.pages.raw import SHOWN_CHARS
from phase.publish.site.build import BlockedError, NoteError, SitePaths, build_docs, build_site
from phase.publish.site.outdirs import MARKER, STAGING_PREFIX, OutputDirError
from phase.publish.site.paths import GENERATED


def _leftovers(*dirs: Path) -> list[Path]:
    return [p for d in dirs if d.is_dir() for p in d.rglob(f"{STAGING_PREFIX}*")]


def _cli(*args: str) -> object:
    return CliRunner().invoke(main, list(args))


def _dirs(inputs, published: Path) -> list[str]:
    return ["--results-dir", str(inputs.results_dir), "--notes-dir", str(inputs.notes_dir),
            "--published-dir", str(published)]


def test_site_dir_pointing_at_the_results_loses_nothing(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    (inputs.results_dir / "schema.json").write_text("{}")
    before = snapshot(inputs.results_dir)
    result = _cli("site", *_dirs(inputs, tmp_path / "pub"), "--docs-dir", str(tmp_path / "d"),
                  "--site-dir", str(inputs.results_dir))
    assert result.exit_code == 2, result.output
    assert "--site-dir" in result.output and "overlaps the results dir" in result.output
    assert "Traceback" not in result.output
    assert snapshot(inputs.results_dir) == before
    assert not (tmp_path / "d").exists() and not (tmp_path / "pub").exists()


def test_docs_dir_holding_note_sources_is_refused(tmp_path: Path) -> None:
    # `phase build --docs-dir phase`: a directory holding notes/*.md that phase did not make.
    package = tmp_path / "phase"
    (package / "notes").mkdir(parents=True)
    (package / "notes" / "2026-01-mine.md").write_text("my note source")
    (package / "raw").mkdir()
    (package / "raw" / "keep.txt").write_text("mine")
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    before = snapshot(package)
    result = _cli("build", *_dirs(inputs, tmp_path / "pub"), "--docs-dir", str(package))
    assert result.exit_code == 2, result.output
    assert f"--docs-dir {package} is not empty and was not made by phase" in result.output
    assert snapshot(package) == before
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("flag", ["--site-dir", "--docs-dir"])
@pytest.mark.parametrize("target", ["repo", "home", "root", "symlink", "file", "foreign"])
def test_directories_phase_did_not_make_are_refused(tmp_path: Path, flag: str,
                                                     target: str) -> None:
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("years of work")
    (tmp_path / "empty").mkdir()
    os.symlink(tmp_path / "empty", tmp_path / "link")
    (tmp_path / "plain").write_text("a file")
    path = {"repo": REPO, "home": Path.home(), "root": Path("/"), "symlink": tmp_path / "link",
            "file": tmp_path / "plain", "foreign": foreign}[target]
    watched = {"foreign": foreign, "symlink": tmp_path, "file": tmp_path}.get(target)
    before = snapshot(watched) if watched else None
    other = "--docs-dir" if flag == "--site-dir" else "--site-dir"
    result = _cli("site", *_dirs(inputs, tmp_path / "pub"), flag, str(path),
                  other, str(tmp_path / "other"))
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and "nothing was touched" in result.output
    assert "Traceback" not in result.output
    if watched:
        assert snapshot(watched) == before
    assert not (tmp_path / "other").exists()
    assert _leftovers(tmp_path) == []
    assert not list(REPO.glob(f"{STAGING_PREFIX}*"))


def _one_version_site(base: Path) -> SitePaths:
    return site_paths(base, Inputs(base / "in" / "results", base / "in" / "notes"))


@pytest.fixture(scope="module")
def one_version_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The one-version fixture note built once for the module (inputs, docs, site, archive),
    its site dir made empty beforehand: an empty directory has nothing to lose, and is used."""
    base = tmp_path_factory.mktemp("one-version")
    make_inputs(base / "in", versions=1, repo_notes=False)
    paths = _one_version_site(base)
    paths.site_dir.mkdir()
    build_site(paths)
    return base


@pytest.fixture
def built(one_version_site: Path,
          tmp_path: Path) -> tuple[SitePaths, dict[str, str], dict[str, str]]:
    """This test's own copy of that build (it breaks and rebuilds it), with its docs and site
    trees as they were."""
    shutil.copytree(one_version_site, tmp_path, symlinks=True, dirs_exist_ok=True)
    paths = _one_version_site(tmp_path)
    return paths, snapshot(paths.docs_dir), snapshot(paths.site_dir)


@pytest.mark.slow  # a whole site: mkdocs build
def test_a_marked_directory_is_replaced_and_an_empty_one_used(
        tmp_path: Path, built: tuple[SitePaths, dict[str, str], dict[str, str]]) -> None:
    paths, _, _ = built  # built into a site dir that was empty (one_version_site)
    assert (paths.site_dir / MARKER).is_file() and (paths.docs_dir / MARKER).is_file()
    (paths.site_dir / "stale.html").write_text("from an older build")
    build_site(paths)
    assert not (paths.site_dir / "stale.html").exists()
    assert (paths.site_dir / "index.html").is_file()
    assert _leftovers(tmp_path) == []


def _break_results(paths: SitePaths) -> None:
    text = (paths.results_dir / GPU_FILE).read_text()
    (paths.results_dir / "speculative-broken.json").write_text(text[: len(text) // 2])


def _break_template(paths: SitePaths) -> None:
    # v1 is published (served as archived); a new version 2 does not render.
    note = paths.notes_dir / "2026-01-fixture-versions.md"
    note.write_text(versioned_note(2) + "\n{{ no_such_function() }}\n")


def _break_link(paths: SitePaths) -> None:
    note = paths.notes_dir / "2026-01-fixture-versions.md"
    note.write_text(versioned_note(2) + "\nSee [the missing page](nope.md).\n")


@pytest.mark.parametrize(("breaks", "error"), [
    (_break_results, BlockedError), (_break_template, NoteError), (_break_link, PhaseError)])
@pytest.mark.slow  # a whole site: mkdocs build
def test_a_failed_build_leaves_the_previous_docs_and_site(
        tmp_path: Path, built: tuple[SitePaths, dict[str, str], dict[str, str]], breaks,
        error: type) -> None:
    paths, docs, site = built
    # A second campaign would add pages; the failure must keep them out too.
    write_results(replaced(gpu_results(), id="fixture-gpu-2"),
                  paths.results_dir / "speculative-second.json")
    breaks(paths)
    with pytest.raises(error):
        build_site(paths)
    assert snapshot(paths.docs_dir) == docs
    assert snapshot(paths.site_dir) == site
    assert not (paths.published_dir / "speculative-fixture").exists()
    assert _leftovers(tmp_path) == []


@pytest.mark.slow  # a whole site: mkdocs build
def test_generated_parts_next_to_hand_written_pages(tmp_path: Path) -> None:
    """The repository layout: docs/ holds hand-written pages; phase owns docs/notes, docs/raw
    and docs/assets/vendor, each marked, and refuses one it did not make."""
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    docs = tmp_path / "docs"
    # Only the hand-written pages: a checkout that ran `make site` also holds every generated
    # part (docs/hosts, docs/bench...), which this build would rightly rewrite.
    owned = {REPO / "docs" / part for part in GENERATED}
    shutil.copytree(REPO / "docs", docs,
                    ignore=lambda d, names: [n for n in names if Path(d) / n in owned])
    paths = SitePaths.default(REPO, results_dir=inputs.results_dir, notes_dir=inputs.notes_dir,
                              docs_src=docs, docs_dir=docs, site_dir=tmp_path / "site",
                              published_dir=tmp_path / "pub")
    hand_written = snapshot(docs)
    build_site(paths)
    for part in ("notes", "raw", "assets/vendor"):
        assert (docs / part / MARKER).is_file(), part
    assert {k: v for k, v in snapshot(docs).items() if k in hand_written} == hand_written
    assert (paths.site_dir / "about.html").is_file()
    _break_link(paths)
    generated = snapshot(docs)
    with pytest.raises(PhaseError):
        build_site(paths)
    assert snapshot(docs) == generated
    # An older build's notes/ (no marker) is refused, not deleted.
    (docs / "notes" / MARKER).unlink()
    with pytest.raises(OutputDirError, match=r"generated dir .*/docs/notes is not empty") as info:
        build_docs(paths)
    assert info.value.exit_code == 2
    assert (docs / "notes" / "fixture-versions" / "index.md").is_file()
    assert _leftovers(tmp_path) == []


def test_site_writes_nothing_under_results(built_site) -> None:
    """The run's whole site (every page kind, the committed campaigns beside the fixtures'),
    built once for every test that reads it: its results dir as it was before that build."""
    results = built_site.inputs.results_dir
    before = built_site.results_before
    assert snapshot(results) == before["tree"] and len(before["tree"]) > 5
    assert results.stat().st_mtime_ns == before["mtime_ns"]  # nothing created, even briefly
    # Derived summaries went to the build directory.
    site = built_site.paths.site_dir
    assert (site / "raw" / f"summary-{Path(GPU_FILE).stem}.json").is_file()


EVIL_TITLE = "x</title><script>alert(1)</script>"


@pytest.mark.slow  # a whole site: mkdocs build
def test_relative_dirs_and_an_escaped_title(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative --site-dir/--docs-dir are taken from the working directory by phase and by
    mkdocs alike; a note title with markup stays text inside <title> too."""
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    note = inputs.notes_dir / "2026-01-fixture-versions.md"
    note.write_text(note.read_text().replace("title: Fixture note with two versions",
                                             f"title: {json.dumps(EVIL_TITLE)}"))
    monkeypatch.chdir(tmp_path)
    result = _cli("site", "--results-dir", "in/results", "--notes-dir", "in/notes",
                  "--published-dir", "pub", "--docs-dir", "d", "--site-dir", "s")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(tmp_path / "s" / "index.html")
    assert (tmp_path / "d" / "notes" / "fixture-versions" / "index.md").is_file()
    assert (tmp_path / "pub" / "fixture-versions" / "v1" / "manifest.json").is_file()
    assert not (REPO / "s").exists() and not (REPO / "d").exists()
    pages = list((tmp_path / "s").rglob("*.html"))
    assert len(pages) > 5
    for page in pages:
        assert "<script>alert(1)" not in page.read_text(), page
    latest = (tmp_path / "s" / "notes" / "fixture-versions" / "index.html").read_text()
    assert "<title>x&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt; - phase</title>" in latest


@pytest.mark.slow
def test_a_huge_output_is_cut_on_the_page_with_a_link_to_the_file(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    results = gpu_results()
    huge = "x" * (50 * 1024 * 1024)
    runs = [replaced(results.runs[0], output_text=huge), *results.runs[1:]]
    write_results(replaced(results, runs=runs), inputs.results_dir / GPU_FILE)
    paths = site_paths(tmp_path, inputs)
    build_docs(paths)
    page = paths.docs_dir / "raw" / (Path(GPU_FILE).stem + ".md")
    text = page.read_text()
    assert len(text) < 1_000_000
    omitted = len(huge) - SHOWN_CHARS
    assert f"… {omitted:,} more characters of this output are not shown here" in text
    assert f'<a href="{GPU_FILE}" download>{GPU_FILE}</a>' in text
    # The file itself is offered whole.
    assert (paths.docs_dir / "raw" / GPU_FILE).stat().st_size > len(huge)
