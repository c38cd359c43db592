"""Frozen versions for real: a published version is served from published/ byte for byte,
whatever happens later to the note text, the templates, the rules; its inputs are checked;
corrections are errata outside the frozen bytes; the repository's archive matches its data."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from factories import replaced, write_results
from test_publish_inputs import (
    CPU_FILE,
    GPU_FILE,
    REPO,
    gpu_results,
    make_inputs,
    parse_tables,
    site_paths,
    versioned_note,
)

from phase.cli import main
from phase.publish.archive.store import Archive, ArchiveError
from phase.publish.site.build import BuildResult, SitePaths, build_docs, build_site
from phase.validate import RuleSettings

NOTE = "2026-01-fixture-versions.md"
SLUG = "fixture-versions"


def _article(html: str) -> str:
    """The page's content (theme chrome such as the nav changes as notes are added)."""
    return re.search(r"<article .*?</article>", html, re.S).group(0)


def _paths(base: Path) -> SitePaths:
    """Everything a build reads and writes, under one base directory (inputs, templates too)."""
    inputs = base / "in"
    return SitePaths.default(REPO, results_dir=inputs / "results", notes_dir=inputs / "notes",
                             templates_dir=base / "templates", docs_dir=base / "docs",
                             site_dir=base / "site", published_dir=base / "published")


def _setup(tmp_path: Path) -> SitePaths:
    """One-version fixture note, with templates copied so a test may change them."""
    make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    shutil.copytree(REPO / "templates", tmp_path / "templates")
    return _paths(tmp_path)


@dataclass(frozen=True)
class FirstBuild:
    base: Path
    result: BuildResult


@pytest.fixture(scope="module")
def first_build(tmp_path_factory: pytest.TempPathFactory) -> FirstBuild:
    """The one-version fixture set up and built once for the module (v1 published): the
    starting point of most tests here, which each change a copy of it."""
    base = tmp_path_factory.mktemp("first-build")
    return FirstBuild(base, build_site(_setup(base)))


Built = tuple[SitePaths, BuildResult]


@pytest.fixture
def built(first_build: FirstBuild, tmp_path: Path) -> Built:
    """This test's own copy of the first build (inputs, templates, docs, site, archive): what
    _setup + build_site would give, for the price of a copy. The BuildResult is the first
    build's (its paths name the module's directories, not the copy)."""
    shutil.copytree(first_build.base, tmp_path, symlinks=True, dirs_exist_ok=True)
    return _paths(tmp_path), first_build.result


def _frozen(result, slug: str = SLUG) -> list[str]:
    """The versions of one note a build published (the fixture's uncited campaign becomes a
    generated note of its own)."""
    return [p.name for p in result.frozen if p.parent.name == slug]


def _v1(paths: SitePaths) -> tuple[bytes, str]:
    md = (paths.docs_dir / f"notes/{SLUG}/v1/index.md").read_bytes()
    html = (paths.site_dir / f"notes/{SLUG}/v1/index.html").read_text()
    return md, _article(html)


@pytest.mark.slow  # a whole site: mkdocs build
def test_text_template_and_rule_changes_leave_v1_byte_identical(built: Built) -> None:
    paths, first = built
    assert _frozen(first) == ["v1"]
    archived = Archive(paths.published_dir).load(SLUG, 1)
    v1_md, v1_article = _v1(paths)
    assert v1_md == archived.page  # served as archived (no errata yet)
    assert "phase-unstable" in v1_md.decode()  # code × ngram spreads 18%: over 5%

    # Everything a page depends on changes: the note's text, a template, a rule threshold;
    # and the author adds version 2.
    note = paths.notes_dir / NOTE
    note.write_text(versioned_note(2).replace("Some prose about", "Rewritten prose about"))
    table = paths.templates_dir / "results_table.html.j2"
    table.write_text(table.read_text() + "\n<p>TEMPLATE CHANGED</p>\n")
    second = build_site(paths, RuleSettings(variance_max=0.5))

    assert _frozen(second) == ["v2"]
    assert _v1(paths) == (v1_md, v1_article)
    v2 = (paths.docs_dir / f"notes/{SLUG}/v2/index.md").read_text()
    assert "Rewritten prose about" in v2 and "TEMPLATE CHANGED" in v2
    assert "Rewritten prose" not in v1_md.decode() and "TEMPLATE CHANGED" not in v1_md.decode()
    rows = parse_tables(v2)[GPU_FILE]
    assert rows[("code", "ngram")].cls == ""  # not unstable under the new threshold
    latest = (paths.docs_dir / f"notes/{SLUG}/index.md").read_text()
    assert "Version 2 (latest)" in latest and "Rewritten prose about" in latest
    manifest = Archive(paths.published_dir).manifest(SLUG, 2)
    assert manifest.rule_settings["variance_max"] == 0.5
    assert Archive(paths.published_dir).manifest(SLUG, 1).rule_settings["variance_max"] == 0.05


@pytest.mark.slow  # a whole site: mkdocs build
def test_the_manifest_records_every_input(built: Built) -> None:
    paths, _ = built
    m = Archive(paths.published_dir).manifest(SLUG, 1)
    results = paths.results_dir / GPU_FILE
    from phase.publish.archive.store import sha256_bytes

    assert [(r.name, r.sha256) for r in m.results] == [(GPU_FILE, sha256_bytes(
        results.read_bytes()))]
    assert m.source.file == NOTE and m.source.kind == "authored"
    assert m.source.sha256 == sha256_bytes((paths.notes_dir / NOTE).read_bytes())
    assert m.templates["note.md.j2"] == sha256_bytes(
        (paths.templates_dir / "note.md.j2").read_bytes())
    assert m.rule_settings == RuleSettings().as_dict()
    assert set(m.files) >= {"index.md", "latest.md"}
    assert any(f.startswith("assets/") and f.endswith(".png") for f in m.files)


@pytest.mark.slow  # a whole site: mkdocs build
def test_a_changed_results_file_refuses_the_build(built: Built) -> None:
    paths, _ = built
    docs = {p: p.read_bytes() for p in paths.docs_dir.rglob("*") if p.is_file()}
    # The same campaign rewritten (a different id): no longer what v1 was published from.
    write_results(replaced(gpu_results(), id="fixture-gpu-edited"), paths.results_dir / GPU_FILE)
    result = CliRunner().invoke(main, [
        "site", "--results-dir", str(paths.results_dir), "--notes-dir", str(paths.notes_dir),
        "--published-dir", str(paths.published_dir), "--docs-dir", str(paths.docs_dir),
        "--site-dir", str(paths.site_dir)])
    assert result.exit_code == 1, result.output
    assert f"{GPU_FILE}: sha256" in result.output
    assert "recorded when note fixture-versions v1 was published" in result.output
    assert "Traceback" not in result.output
    assert {p: p.read_bytes() for p in paths.docs_dir.rglob("*") if p.is_file()} == docs


@pytest.mark.slow  # a whole site: mkdocs build
def test_an_edited_archive_or_a_withdrawn_version_is_refused(tmp_path: Path) -> None:
    paths = _setup(tmp_path)
    inputs_note = paths.notes_dir / NOTE
    inputs_note.write_text(versioned_note(2))
    build_site(paths)
    page = paths.published_dir / SLUG / "v1" / "index.md"
    original = page.read_bytes()
    page.write_bytes(original.replace(b"Some prose", b"Better prose"))
    with pytest.raises(ArchiveError, match=r"v1/index\.md was changed after it was published"):
        build_site(paths)
    page.write_bytes(original)
    inputs_note.write_text(versioned_note(1))
    with pytest.raises(ArchiveError, match=r"v2 is published but .* lists 1 version"):
        build_site(paths)
    # Version 1 pointed at another file: a published version's results cannot change.
    inputs_note.write_text(versioned_note(2).replace(f"results: [{GPU_FILE}]",
                                                     f"results: [{CPU_FILE}]", 1))
    with pytest.raises(ArchiveError, match=rf"version 1 was published with {GPU_FILE}"):
        build_site(paths)


@pytest.mark.slow  # a whole site: mkdocs build
def test_errata_show_on_the_version_page_outside_the_frozen_bytes(built: Built) -> None:
    paths, _ = built
    archived = Archive(paths.published_dir).load(SLUG, 1)
    note = paths.notes_dir / NOTE
    note.write_text(note.read_text().replace(
        "errata: []", "errata:\n  - {date: 2026-03-01, version: 1, text: The board column "
        "overstates energy.}"))
    result = build_site(paths)
    assert _frozen(result) == []  # an erratum is no new version
    page = (paths.docs_dir / f"notes/{SLUG}/v1/index.md").read_bytes()
    assert page.startswith(archived.page)
    tail = page[len(archived.page):].decode()
    assert "## Errata" in tail and "The board column overstates energy." in tail
    latest = (paths.docs_dir / f"notes/{SLUG}/index.md").read_text()
    assert "affects v1:</strong> The board column overstates energy." in latest
    assert Archive(paths.published_dir).load(SLUG, 1) == archived
    assert any("its source changed since v1 was published" in line for line in result.lines)


@pytest.mark.slow  # a whole site: mkdocs build
def test_drafts_and_globs_are_not_published(tmp_path: Path) -> None:
    paths = _setup(tmp_path)
    note = paths.notes_dir / NOTE
    note.write_text(versioned_note(1).replace(f"results: [{GPU_FILE}]",
                                              'results: ["speculative-fixture-*.json"]'))
    result = build_site(paths)
    assert _frozen(result) == [] and result.states[SLUG] == ["v1 draft"]
    note.write_text(versioned_note(1).replace("changes: First version.",
                                              "changes: First version.\n    draft: true"))
    result = build_site(paths)
    assert _frozen(result) == [] and result.states[SLUG] == ["v1 draft"]
    assert not (paths.published_dir / SLUG).exists()


@pytest.mark.slow
def test_build_docs_publishes_nothing_and_phase_publish_does(tmp_path: Path) -> None:
    paths = _setup(tmp_path)
    result = build_docs(paths)
    assert result.frozen == [] and result.to_freeze == [] and result.states[SLUG] == ["v1 new"]
    assert not paths.published_dir.exists()
    args = ["--results-dir", str(paths.results_dir), "--notes-dir", str(paths.notes_dir),
            "--published-dir", str(paths.published_dir)]
    runner = CliRunner()
    published = runner.invoke(main, ["publish", SLUG, *args])
    assert published.exit_code == 0, published.output
    assert published.stdout.strip() == str(paths.published_dir / SLUG / "v1")
    assert (paths.published_dir / SLUG / "v1" / "manifest.json").is_file()
    again = runner.invoke(main, ["publish", SLUG, *args])
    assert again.exit_code == 0 and "nothing new to publish" in again.output
    unknown = runner.invoke(main, ["publish", "no-such-note", *args])
    assert unknown.exit_code == 2 and "no note 'no-such-note'" in unknown.output


@pytest.mark.slow
def test_the_repository_archive_serves_the_committed_notes(tmp_path: Path) -> None:
    """published/ holds v1 of both repository notes (frozen before the notes' content work),
    both notes' v2 and the CPU note's v3, v4 and v5; the committed results still match them, so
    nothing is re-published and each published version is served byte for byte."""
    archive = tmp_path / "published"
    shutil.copytree(REPO / "published", archive)
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=True)
    paths = site_paths(tmp_path, inputs, published=archive)
    result = build_docs(paths)
    assert result.states["speculative-decoding"] == ["v1 published", "v2 published"]
    assert result.states["speculative-decoding-cpu"] == ["v1 published", "v2 published",
                                                           "v3 published", "v4 published",
                                                           "v5 published"]
    for slug, newest in (("speculative-decoding", 2), ("speculative-decoding-cpu", 5)):
        for number in range(1, newest + 1):
            frozen = Archive(archive).load(slug, number)
            page = paths.docs_dir / f"notes/{slug}/v{number}/index.md"
            assert page.read_bytes().startswith(frozen.page)
            manifest = json.loads((archive / slug / f"v{number}" / "manifest.json").read_text())
            for entry in manifest["results"]:
                assert (REPO / "results" / entry["name"]).is_file()
        latest = (paths.docs_dir / f"notes/{slug}/index.md").read_bytes()
        frozen = Archive(archive).load(slug, newest)
        assert latest.startswith(frozen.latest) and b"## Versions" in latest[len(frozen.latest):]
    assert result.states["fixture-versions"] == ["v1 new"]
