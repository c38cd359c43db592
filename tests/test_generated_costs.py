"""A campaign with a cost profile gets the cost model on its generated note (templates/
experiments/speculative.md.j2): the cost curve, predicted vs measured, break-even and auto's
choices; a campaign without one gets none of it. Inputs from tests/test_publish_costs.py's
fixture (chosen curves and traces, not measurements)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from factories import replaced, write_results
from test_generated import _paths
from test_publish_costs import costs_results

from phase.publish.site.build import build_site
from phase.results import ResultsFile

SECTION = "## Why: the cost model"


def _note_page(tmp_path: Path, results: ResultsFile) -> str:
    paths = _paths(tmp_path)
    write_results(results, paths.results_dir / "speculative-costs.json")
    built = build_site(paths)
    [note] = built.notes
    return (paths.docs_dir / f"notes/{note.slug}/index.md").read_text(encoding="utf-8")


@pytest.mark.slow  # a whole site: mkdocs build
def test_a_campaign_with_a_profile_shows_the_cost_model(tmp_path: Path) -> None:
    page = _note_page(tmp_path, costs_results())
    assert SECTION in page
    for kind in ("cost_curve", "cost_prediction", "break_even", "best_k", "auto_choices"):
        assert f'data-kind="{kind}"' in page
    # computed from the file: the fixture's ngram runs on the markup prompt took twice what
    # the profile predicts, the rest what it says
    assert "5 of 6 conditions predicted within 10%" in page
    assert "expected tokens per unit time" in page


@pytest.mark.slow  # a whole site: mkdocs build
def test_without_auto_runs_there_is_no_choices_table(tmp_path: Path) -> None:
    full = costs_results()
    # Without auto the schedule has fewer slots: the remaining runs take its places in order.
    kept = sorted((r for r in full.runs if r.strategy != "auto"), key=lambda r: r.order)
    results = replaced(full, runs=[replaced(r, order=i) for i, r in enumerate(kept)],
                       config=replaced(full.config, strategies=["plain", "ngram"]))
    page = _note_page(tmp_path, results)
    assert SECTION in page and 'data-kind="cost_prediction"' in page
    assert 'data-kind="auto_choices"' not in page


@pytest.mark.slow  # a whole site: mkdocs build
def test_a_campaign_without_a_profile_has_no_cost_section(tmp_path: Path) -> None:
    page = _note_page(tmp_path, replaced(costs_results(), profile=None))
    assert SECTION not in page
    assert 'data-kind="cost_curve"' not in page


@pytest.mark.slow
def test_the_cpu_note_shows_the_cost_model_from_version_2_only(tmp_path: Path) -> None:
    from test_publish_inputs import REPO, note_results, site_paths

    from phase.publish.site.build import build_docs

    results, notes = tmp_path / "results", tmp_path / "notes"
    results.mkdir()
    notes.mkdir()
    # Every version's campaign: v1's, v2 to v4's and the latest's.
    for name in {"speculative-x86_64-2c-2026-11-30.json", "speculative-x86_64-2c-2026-11-30-2.json",
                 *note_results("2026-11-speculative-decoding-cpu.md")}:
        shutil.copy(REPO / "results" / name, results / name)
    shutil.copy(REPO / "phase/notes/2026-11-speculative-decoding-cpu.md", notes)
    paths = site_paths(tmp_path, type("I", (), {"results_dir": results, "notes_dir": notes})())
    build_docs(paths)
    pages = paths.docs_dir / "notes/speculative-decoding-cpu"
    latest, v1 = (pages / "index.md").read_text(), (pages / "v1/index.md").read_text()
    (v2_file,) = note_results("2026-11-speculative-decoding-cpu.md")
    assert SECTION in latest and 'data-kind="cost_prediction"' in latest
    assert f'data-kind="auto_choices" data-dataset="{v2_file}"' in latest
    # v1's campaign predates profiling and auto: its page has no cost-model section
    assert SECTION not in v1 and "data-kind=\"cost_curve\"" not in v1
