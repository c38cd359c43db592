"""A smoke test is never the record: a quick campaign says what it is, is never frozen
wherever its file lies, and a build from some other results directory does not write into the
project's own archive unless told to."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from factories import make_config, make_model, make_results, write_results

from phase.analysis.purpose import smoke_reason
from phase.cli import main
from phase.models.sources import EMBEDDED, TEST_MODEL
from phase.publish.archive.store import Archive
from phase.publish.site.build import build_site
from phase.publish.site.paths import SitePaths
from phase.results import ResultsFile

REPO = Path(__file__).resolve().parent.parent
TEST_SHA = EMBEDDED[TEST_MODEL].sha256
STUDY_SHA = EMBEDDED["qwen2.5-coder-1.5b"].sha256


def _results(purpose: str | None, sha256: str) -> ResultsFile:
    return make_results(config=make_config(purpose=purpose),
                        models=[make_model(sha256=sha256, test_model=sha256 == TEST_SHA)])


@pytest.mark.parametrize(("purpose", "sha256", "smoke"), [
    ("smoke", STUDY_SHA, True),   # --quick, whatever its models
    ("study", TEST_SHA, False),   # a deliberate campaign on the test model says so
    (None, TEST_SHA, True),       # before schema 6: the test model gives it away
    (None, STUDY_SHA, False),
])
def test_smoke_reason(purpose: str | None, sha256: str, smoke: bool) -> None:
    assert (smoke_reason(_results(purpose, sha256)) is not None) is smoke


def _paths(tmp_path: Path, results_dir: Path, published: Path, *, root: Path = REPO,
           foreign: bool = False) -> SitePaths:
    notes = tmp_path / "notes"
    notes.mkdir(exist_ok=True)
    paths = SitePaths.default(root=root, results_dir=results_dir, notes_dir=notes,
                              templates_dir=REPO / "templates", docs_src=REPO / "docs",
                              docs_dir=tmp_path / "docs", site_dir=tmp_path / "site",
                              mkdocs_yml=REPO / "mkdocs.yml", published_dir=published,
                              bench_dir=tmp_path / "no-bench")
    return SitePaths(**{**paths.__dict__, "archive_foreign": foreign})


@pytest.mark.slow
def test_a_quick_campaign_in_results_is_never_frozen(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    write_results(_results("smoke", STUDY_SHA), results / "fixture-smoke.json")
    published = tmp_path / "published"
    built = build_site(_paths(tmp_path, results, published))
    assert built.frozen == [] and not published.exists()
    said = "\n".join(built.lines)
    assert "fixture-smoke.json: its plan was a smoke test" in said and "not published" in said


@pytest.mark.slow
def test_a_foreign_results_dir_does_not_write_the_project_archive(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "results").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    write_results(_results("study", STUDY_SHA), elsewhere / "fixture-study.json")
    archive = project / "published"

    built = build_site(_paths(tmp_path, elsewhere, archive, root=project))
    assert built.frozen == [] and not archive.exists()
    assert any(line.startswith("not frozen:") and "--into-project-archive" in line
               for line in built.lines)

    told = build_site(_paths(tmp_path, elsewhere, archive, root=project, foreign=True))
    assert len(told.frozen) == 1 and Archive(archive).versions(told.frozen[0].parent.name)


def test_cli_names_the_override() -> None:
    help_text = CliRunner().invoke(main, ["site", "--help"]).output
    assert "--into-project-archive" in help_text


@pytest.mark.model
def test_quick_campaign_records_its_purpose_and_test_model(tmp_path: Path) -> None:
    out = tmp_path / "quick.json"
    result = CliRunner().invoke(main, [
        "measure", "speculative", "--quick", "--no-sensor", "--prompts", "code",
        "--strategies", "plain", "--tokens", "4", "--repeats", "1", "--no-profile",
        "-o", str(out)])
    assert result.exit_code == 0, result.output
    from phase.results import load

    done = load(out)
    assert isinstance(done, ResultsFile)
    assert done.config.purpose == "smoke"
    assert [m.test_model for m in done.models] == [True] * len(done.models)
    assert smoke_reason(done) is not None
