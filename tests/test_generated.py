"""Every campaign becomes a note: grouping by experiment and host class, versions in date
order (earlier ones frozen), drafts for incomplete campaigns, authored notes first, quick
previews only on request, and the home page listing every note with a computed headline."""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from factories import replaced, shifted, write_results
from test_publish_inputs import (
    REPO,
    cpu_results,
    landed_runs,
    make_inputs,
    parse_tables,
    repo_raw_files,
    site_paths,
)

from phase.analysis import summarize
from phase.analysis.formatting import span, times
from phase.cli import main
from phase.publish.archive.store import Archive, ArchiveError
from phase.publish.markup.anchors import run_anchor
from phase.publish.numbers.outcomes import question_of
from phase.publish.site.build import SitePaths, build_docs, build_site
from phase.results import ResultsFile
from phase.validate import validate_results

HOST = "x86_64-4c"
SLUG = "speculative-x86-64-4c"


def campaign(name: str, day: int, host: str = HOST, slower: float = 1.0, **changes) -> \
        ResultsFile:
    base = cpu_results()
    # A slower run also ends later: prefill and decode must fit between its edges.
    runs = [replaced(r, decode_s=r.decode_s * slower,
                     tokens_per_s=r.tokens / (r.decode_s * slower),
                     ended_unix_s=r.ended_unix_s + r.decode_s * (slower - 1))
            for r in base.runs]
    created = datetime(2026, 3, day, 12, tzinfo=UTC)
    moved = replaced(base, id=name, runs=runs, created=created,
                     provenance=replaced(base.provenance, host_class=host), **changes)
    # Its runs are measured after it was created, as the clocks rule requires.
    return shifted(moved, (created - base.created).total_seconds())


def interrupted(name: str, day: int, finished: int) -> ResultsFile:
    full = campaign(name, day)
    return replaced(full, status="interrupted", runs=full.runs[:finished])


def _paths(tmp_path: Path) -> SitePaths:
    for d in ("results", "notes"):
        (tmp_path / "in" / d).mkdir(parents=True, exist_ok=True)
    return SitePaths.default(REPO, results_dir=tmp_path / "in/results",
                             notes_dir=tmp_path / "in/notes", docs_dir=tmp_path / "docs",
                             site_dir=tmp_path / "site", published_dir=tmp_path / "published")


def _write(paths: SitePaths, name: str, results: ResultsFile) -> Path:
    return write_results(results, paths.results_dir / f"{name}.json")


def _home(paths: SitePaths) -> str:
    return (paths.docs_dir / "notes/_list.md").read_text()


@pytest.mark.slow  # a whole site: mkdocs build
def test_campaigns_become_one_versioned_note_per_host_class(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    _write(paths, "speculative-a", campaign("speculative-a", 1))
    first = build_site(paths)
    assert [n.slug for n in first.notes] == [SLUG]
    assert first.states[SLUG] == ["v1 new"] and [p.name for p in first.frozen] == ["v1"]
    note = first.notes[0]
    # Its title is the outcome of the question experiments/speculative.py declares.
    question = question_of("speculative")
    assert question is not None
    raw = campaign("speculative-a", 1)
    rows = summarize(raw, validate_results(raw, "speculative-a.json"), "speculative-a.json").rows
    outcome = question.answer(raw, rows)
    assert note.meta.title == outcome.title and HOST in outcome.title
    page = (paths.docs_dir / f"notes/{SLUG}/index.md").read_text()
    # The results table links every row once, to the list of its raw runs on the data page.
    rows = parse_tables(page)["speculative-a.json"]
    assert len(rows) == 8
    runs = [r for r in campaign("speculative-a", 1).runs if (r.prompt, r.strategy) ==
            ("code", "draft-4")]
    links = rows[("code", "draft-4")].links
    assert len(links) == 1 and links[0].startswith("../../raw/speculative-a.html#")
    assert landed_runs(paths.docs_dir, paths.docs_dir / f"notes/{SLUG}/index.md", links) == [
        run_anchor(r.id) for r in sorted(runs, key=lambda r: r.order)]
    # Prose computed from the data by the experiment's rule: per prompt, the strategies
    # resolved faster than plain, each ratio (the median of the per-repeat ratios) stated
    # with its interval.
    vs = rows[("code", "draft-4")].cells["speed_vs_plain"]
    shown = span(float(vs.low), float(vs.high), times)
    assert f"draft-4 {float(vs.value):.2f}× &#40;95% interval {shown}&#41;" in page
    assert f"Verdict: **{outcome.verdict}**." in page
    assert "Energy per token is not known for any of them: no chip-level energy sensor" in page
    assert "\n    - rapl: energy&#95;uj is readable by root only\n" in page
    v1 = (paths.docs_dir / f"notes/{SLUG}/v1/index.md").read_bytes()

    _write(paths, "speculative-b", campaign("speculative-b", 2, slower=1.25))
    _write(paths, "speculative-gpu", campaign("speculative-gpu", 3, host="h200"))
    second = build_site(paths)
    assert second.states[SLUG] == ["v1 published", "v2 new"]
    # The new version is titled by its own outcome; the frozen v1 keeps its page.
    raw_b = campaign("speculative-b", 2, slower=1.25)
    rows_b = summarize(raw_b, validate_results(raw_b, "speculative-b.json"),
                       "speculative-b.json").rows
    [note] = [n for n in second.notes if n.slug == SLUG]
    assert note.meta.title == question.answer(raw_b, rows_b).title
    assert (paths.docs_dir / f"notes/{SLUG}/v1/index.md").read_bytes() == v1
    v2 = (paths.docs_dir / f"notes/{SLUG}/v2/index.md").read_text()
    assert "<td>speculative-b.json</td><td>results file</td><td>speculative-a.json</td>" in v2
    assert "-20.0%" in v2  # 1.25 times slower: tokens/s down by a fifth, row by row
    assert Archive(paths.published_dir).versions("speculative-h200") == [1]
    # The home page: every note, newest first, host class, date, computed headline.
    home = _home(paths)
    assert home.index("speculative-h200") < home.index(SLUG)
    assert "<td>2026-03-02</td>" in home and f"<td>{HOST}</td>" in home
    # The headline names the condition the selection rule chose and says that no fresh runs
    # have confirmed it; the selection's own 1.67x is labelled as what chose it.
    assert ("Unconfirmed: draft-4 on code was chosen as the highest speed ratio to plain "
            "decoding among the campaign&#39;s conditions (of 6; 1.67× plain decoding&#39;s "
            "speed in the runs that chose it, which are not its evidence)") in home
    assert "to confirm it: phase confirm speculative-b.json" in home
    # A published version keeps its data: without its campaign in the archive's own results
    # dir the build refuses, naming the version and the file.
    (paths.results_dir / "speculative-a.json").rename(tmp_path / "speculative-a.json")
    with pytest.raises(ArchiveError, match=rf"published/{SLUG}/v1 was published from "
                       r"speculative-a\.json, which is not a campaign.*restore it"):
        build_docs(paths)


@pytest.mark.slow  # a whole site: mkdocs build
def test_an_incomplete_campaign_is_a_draft_without_headline(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    _write(paths, "speculative-cut", interrupted("speculative-cut", 1, finished=5))
    result = build_site(paths)
    assert result.states[SLUG] == ["v1 draft"] and result.frozen == []
    page = (paths.docs_dir / f"notes/{SLUG}/index.md").read_text()
    assert '!!! warning "Incomplete campaign: a draft"' in page
    assert "5 of 24 planned runs finished (status interrupted)" in page
    assert "## What the numbers say" not in page
    home = _home(paths)
    assert "No headline: Draft: incomplete campaign (5 of 24 runs finished" in home
    assert "Fastest" not in home
    assert any(line.startswith("draft: speculative-cut.json is incomplete (5 of 24 runs")
               for line in result.lines)

    # A complete campaign later: v1. The interrupted one, older, is only a data page.
    _write(paths, "speculative-done", campaign("speculative-done", 2))
    _write(paths, "speculative-cut-again", interrupted("speculative-cut-again", 3, finished=2))
    result = build_site(paths)
    assert result.states[SLUG] == ["v1 new", "v2 draft"]
    assert [p.name for p in result.frozen] == ["v1"]
    v2 = (paths.docs_dir / f"notes/{SLUG}/v2/index.md").read_text()
    assert "Not compared with version 1: this version's campaign is incomplete." in v2
    assert "speculative-cut.json: incomplete and superseded" in " ".join(result.lines)
    assert (paths.docs_dir / "raw/speculative-cut.md").is_file()
    home = _home(paths)
    assert "Unconfirmed: draft-4 on code" in home  # v1's headline, not the draft's
    assert "phase confirm speculative-done.json" in home


@pytest.mark.slow
def test_authored_notes_keep_their_campaigns_and_can_take_a_note_over(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", versions=2, repo_notes=True)
    # The repository's archive: its notes' published versions are served as frozen, so that
    # each of the three builds renders only the notes this test is about.
    archive = tmp_path / "published"
    shutil.copytree(REPO / "published", archive)
    # The made-up campaign below, on the fixtures' unrecorded build and models, stands beside
    # the committed ones on the cross-host table: asked for (phase.publish.pages.builds).
    paths = replace(site_paths(tmp_path, inputs, published=archive), allow_mixed_builds=True)
    result = build_docs(paths)
    # The committed speculative campaigns (cited by the CPU-host note) and the fixture files
    # (cited by the fixture note) get no page of their own; a committed campaign no authored
    # note cites (the memory study's) gets its generated note.
    def cites(kind: str) -> set[str]:
        return {r for n in result.notes if n.kind == kind for v in n.meta.versions
                for r in v.results}

    # A confirmation campaign is in no note's versions: it is its campaign's headline evidence.
    confirmations = {p.name for p in repo_raw_files() if p.name.endswith("-confirm.json")}
    assert confirmations
    assert cites("generated") == ({p.name for p in repo_raw_files()} - cites("authored")
                                  - confirmations)
    assert not {n for n in cites("generated") if n.startswith("speculative-x86")}
    assert not [p for p in (paths.docs_dir / "notes").iterdir() if p.name.startswith(
        "speculative-x86")]
    # A new campaign on the committed campaign's host class: a generated note that points to
    # the authored one.
    write_results(campaign("speculative-new", 5, host="x86_64-2c"),
                  inputs.results_dir / "speculative-new.json")
    result = build_docs(paths)
    generated = [n for n in result.notes if n.kind == "generated"
                 and n.slug.startswith("speculative-x86")]
    assert [n.slug for n in generated] == ["speculative-x86-64-2c"]
    page = (paths.docs_dir / "notes/speculative-x86-64-2c/index.md").read_text()
    assert "are discussed in [Speculative decoding on a small CPU host" in page
    assert "(../../notes/speculative-decoding-cpu/index.md)" in page
    # An author takes the note over by writing a source with its slug.
    source = inputs.notes_dir / "2026-03-speculative-x86-64-2c.md"
    source.write_text("---\ntitle: My own note\ndate: 2026-03\nfinding: Mine.\n"
                      "reproduce: make measure\nversions:\n  - version: 1\n    date: 2026-03\n"
                      "    results: [speculative-new.json]\n---\n\nWritten by hand.\n")
    result = build_docs(paths)
    assert [n.kind for n in result.notes if n.slug == "speculative-x86-64-2c"] == ["authored"]
    page = (paths.docs_dir / "notes/speculative-x86-64-2c/index.md").read_text()
    assert "# My own note" in page and "Written by hand." in page


@pytest.mark.slow  # a whole site: mkdocs build
def test_quick_campaigns_are_previews_only_on_request(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.quick_dir.mkdir()
    write_results(campaign("speculative-quick", 4), paths.quick_dir / "speculative-quick.json")
    result = build_site(paths)
    assert result.notes == [] and not (paths.docs_dir / "raw/speculative-quick.md").exists()
    result = build_site(paths, include_quick=True)
    assert [n.slug for n in result.notes] == [f"{SLUG}-quick"]
    assert result.states[f"{SLUG}-quick"] == ["v1 preview"] and result.frozen == []
    page = (paths.docs_dir / f"notes/{SLUG}-quick/index.md").read_text()
    assert '!!! note "Quick preview"' in page and "(quick preview)" in page
    assert not paths.published_dir.exists()
    # The make target passes the flag.
    assert "$(if $(QUICK),--include-quick)" in (REPO / "Makefile").read_text()


@pytest.mark.slow  # a whole site: mkdocs build
def test_make_site_says_what_became_of_each_campaign(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    _write(paths, "speculative-a", campaign("speculative-a", 1))
    _write(paths, "speculative-cut", interrupted("speculative-cut", 2, finished=3))
    result = CliRunner().invoke(main, [
        "site", "--results-dir", str(paths.results_dir), "--notes-dir", str(paths.notes_dir),
        "--docs-dir", str(paths.docs_dir), "--site-dir", str(paths.site_dir),
        "--published-dir", str(paths.published_dir)])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert f"note {SLUG} [generated]: v1 (published now), v2 (draft)" in lines
    drafts = [line for line in lines if line.startswith("draft: ")]
    assert drafts == [f"draft: speculative-cut.json is incomplete (3 of 24 runs finished, "
                      f"status interrupted): shown as v2 of note {SLUG}, not frozen, "
                      "no headline"]
    assert any(line.startswith(f"froze {paths.published_dir / SLUG / 'v1'}") for line in lines)
    shutil.rmtree(paths.site_dir)


@pytest.mark.slow  # a whole site: mkdocs build
def test_a_published_campaign_must_stay_and_data_is_escaped(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    hostile = "<script>alert(2)</script>"
    path = _write(paths, "speculative-x", campaign("speculative-x", 1, host=hostile))
    result = build_site(paths)
    (slug,) = [n.slug for n in result.notes]
    assert slug == "speculative-script-alert-2-script"
    for page in paths.site_dir.rglob("*.html"):
        assert "<script>alert(2)" not in page.read_text(), page
    heading = next(line for line in (paths.docs_dir / f"notes/{slug}/index.md").read_text()
                   .splitlines() if line.startswith("# "))
    assert heading.startswith("# Speculative decoding") and "<script>" not in heading
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in heading
    # The campaign behind a published version is gone: the build refuses, naming it.
    path.unlink()
    result = CliRunner().invoke(main, [
        "build", "--results-dir", str(paths.results_dir), "--notes-dir", str(paths.notes_dir),
        "--docs-dir", str(paths.docs_dir), "--published-dir", str(paths.published_dir)])
    assert result.exit_code == 1, result.output
    assert f"published/{slug}/v1 was published from speculative-x.json" in result.output
