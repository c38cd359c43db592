"""Rendering: tables equal the raw runs' medians with their intervals (and the seed's published
figures), rejected values are struck through, missing energy says why, data is escaped,
versions stay frozen."""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner
from factories import replaced, write_results
from test_publish_inputs import (
    CPU_FILE,
    GPU_FILE,
    REPO,
    SEED_SUMMARY,
    XSS_OUTPUT,
    XSS_PROMPT,
    cpu_results,
    gpu_results,
    landed_runs,
    make_inputs,
    note_results,
    parse_tables,
    site_paths,
    versioned_note,
)

from phase.cli import main
from phase.publish.markup.anchors import run_anchor
from phase.publish.notes.source import NoteError, parse_note
from phase.publish.site.build import BlockedError, build_docs
from phase.results import SummaryFile, load, load_raw
from phase.validate import validate_results

# The seed note's table as published (prompt, strategy, tokens/s, accepted, chip mJ/tok, vs
# plain), typed in again from shared/seed/ independently of results/summary-speculative-7b.json.
SEED_TABLE = """
code plain 62.0 — 362.5 1.00
code draft-2 90.9 78% 383.5 1.06
code draft-4 107.0 68% 302.0 0.83
code draft-8 81.8 51% 379.9 1.05
code draft-16 45.3 31% 778.8 2.15
code ngram 59.7 4% 390.4 1.08
prose plain 62.1 — 360.4 1.00
prose draft-2 78.8 60% 447.5 1.24
prose draft-4 81.4 45% 397.7 1.10
prose draft-8 52.1 28% 611.1 1.70
prose draft-16 24.6 14% 1422.1 3.95
prose ngram 60.8 — 366.9 1.02
edit plain 61.0 — 368.0 1.00
edit draft-2 102.7 98% 339.3 0.92
edit draft-4 137.8 99% 234.6 0.64
edit draft-8 137.0 97% 228.3 0.62
edit draft-16 116.4 94% 297.9 0.81
edit ngram 290.2 100% 119.5 0.32
"""


def _page(built_site, rel: str) -> str:
    return (built_site.paths.docs_dir / rel).read_text(encoding="utf-8")


def test_table_numbers_are_the_medians_of_the_raw_runs(built_site) -> None:
    results = gpu_results()
    report = validate_results(results, GPU_FILE)
    note = built_site.paths.docs_dir / "notes/fixture-versions/v1/index.md"
    rows = parse_tables(_page(built_site, "notes/fixture-versions/v1/index.md"))[GPU_FILE]
    conditions = {(r.prompt, r.strategy) for r in results.runs}
    assert set(rows) == conditions
    for (prompt, strategy), row in rows.items():
        runs = [r for r in results.runs if (r.prompt, r.strategy) == (prompt, strategy)]
        cells = row.cells
        speeds = [r.tokens_per_s for r in runs]
        assert float(cells["tokens_per_s"].value) == pytest.approx(
            statistics.median(speeds), rel=1e-5)  # data-value keeps 6 digits
        assert cells["tokens_per_s"].text == f"{statistics.median(speeds):.1f}"
        # Its order-statistic 95% interval, within the runs' range around the median, from six
        # runs; with fewer, none (no honest 95% interval of a median exists).
        if len(runs) < 6:
            assert cells["tokens_per_s"].low is None and not cells["tokens_per_s"].interval
        else:
            low, high = float(cells["tokens_per_s"].low), float(cells["tokens_per_s"].high)
            assert min(speeds) <= low <= statistics.median(speeds) <= high <= max(speeds)
            assert cells["tokens_per_s"].interval == f"{low:.1f}–{high:.1f}"
        assert cells["n"].text == str(len(runs))
        chip = [w.energy_j / r.tokens * 1000 for r in runs for w in r.energy
                if w.sensor == "gpu" and report.rejection_of(r.id, "gpu") is None]
        assert float(cells["chip"].value) == pytest.approx(statistics.median(chip), rel=1e-5)
        cpu = statistics.median(r.cpu_s / r.tokens * 1000 for r in runs)
        assert float(cells["cpu"].value) == pytest.approx(cpu, rel=1e-5)
        if strategy != "plain":
            accepted = statistics.median(r.acceptance for r in runs)
            assert float(cells["acceptance"].value) == pytest.approx(accepted, rel=1e-5)
            assert cells["speed_vs_plain"].low is not None
        # Each row links once, to the raw-data page's list of exactly its own runs.
        assert len(row.links) == 1
        assert row.links[0].startswith("../../../raw/speculative-fixture-gpu.html#")
        assert landed_runs(built_site.paths.docs_dir, note, row.links) == [
            run_anchor(r.id) for r in sorted(runs, key=lambda r: r.order)]
    # The planted 0 J chip reading is left out of its condition's median, and marked.
    partial = rows[(XSS_PROMPT, "draft-4")].cells["chip"]
    assert partial.text.endswith("*") and "2 of 3" in partial.title
    # Ratio vs plain is chip energy over plain's for the same prompt, run by run within a
    # repeat: the median of those ratios, its interval around it.
    by_repeat = {}
    for r in results.runs:
        if r.prompt == "code" and r.strategy in ("plain", "draft-4"):
            w = next(w for w in r.energy if w.sensor == "gpu")
            by_repeat.setdefault(r.repeat, {})[r.strategy] = w.energy_j
    cell = rows[("code", "draft-4")].cells["ratio"]
    assert float(cell.value) == pytest.approx(statistics.median(
        v["draft-4"] / v["plain"] for v in by_repeat.values()))
    assert float(cell.low) <= float(cell.value) <= float(cell.high)


def test_transcribed_note_table_equals_the_published_figures(built_site) -> None:
    page = _page(built_site, "notes/speculative-decoding/index.md")
    rows = parse_tables(page)[SEED_SUMMARY]
    expected = [line.split() for line in SEED_TABLE.strip().splitlines()]
    assert list(rows) == [(p, s) for p, s, *_ in expected]
    for prompt, strategy, speed, accepted, chip, ratio in expected:
        cells = rows[(prompt, strategy)].cells
        shown = [cells[k].text for k in ("tokens_per_s", "acceptance", "chip", "ratio")]
        assert shown == [speed, accepted, chip, ratio], (prompt, strategy)
        assert cells["n"].text == "3"
    # Marked summary-only, with its source, and no raw runs in this repository.
    summary = load(built_site.inputs.results_dir / SEED_SUMMARY)
    assert isinstance(summary, SummaryFile)
    assert summary.summary_only and summary.raw_files == [] and summary.raw_runs_note
    assert "not in this repository" in summary.raw_runs_note
    assert rows[("prose", "ngram")].cells["acceptance"].title.startswith("the published table")


def test_rejected_values_are_struck_through_with_their_reason(built_site) -> None:
    page = _page(built_site, "notes/fixture-versions/v1/index.md")
    rows = parse_tables(page)[GPU_FILE]
    # One of code x draft-2's three board readings is rejected: the cell is the median of the
    # other two, marked, and its title says what was left out and why.
    board = rows[("code", "draft-2")].cells["board"]
    assert board.text.endswith("*") and "2 of 3" in board.title
    assert not rows[("code", "plain")].cells["board"].struck
    # The findings list repeats each rejected reading struck through, next to the rule's reason.
    assert page.count('<tr class="phase-finding phase-rejected">') == 2
    assert "<del>40.5 J (2531.2 mJ/token)</del>" in page
    assert "the energy counter did not change during the run" in page
    # The unstable condition is marked in its row, with the variance finding as the reason.
    unstable = rows[("code", "ngram")]
    assert unstable.cls == "phase-unstable"
    # The badge carries no title (it was the finding's text, in every unstable row): one note
    # under the table says what it means and links to the findings on the data page, and the
    # finding itself, with its spread, is listed there (and here, a list this short).
    assert '<span class="phase-badge">unstable</span>' in page and 'title="unstable' not in page
    table = page.split(f'data-dataset="{GPU_FILE}"', 1)[1].split("</div>", 1)[0]
    (href,) = re.findall(r'<p class="phase-table-note phase-unstable-note">[^<]*<a '
                         r'class="phase-raw-link" href="([^"]+)">', table)
    assert href == f"../../../raw/{Path(GPU_FILE).stem}.html#findings"
    raw = (built_site.paths.site_dir / f"raw/{Path(GPU_FILE).stem}.html").read_text()
    assert 'id="findings"' in raw and "unstable: chip energy per token spreads 18.2%" in raw
    assert "unstable: chip energy per token spreads 18.2%" in page
    assert all(r.cls == "" for k, r in rows.items() if k != ("code", "ngram"))
    assert "output differs from plain decoding from token 7" in page


def test_missing_energy_says_why_instead_of_plotting_zeros(built_site) -> None:
    # The CPU-host note, built from the campaign this repository measured without a sensor:
    # every chip cell and the note say why, in the words the results file records.
    (measured,) = note_results("2026-11-speculative-decoding-cpu.md")
    raw = load_raw(REPO / "results" / measured)
    why = raw.primary_energy_reason
    assert why is not None and "no sensor measures the CPU" in why
    page = _page(built_site, "notes/speculative-decoding-cpu/index.md")
    rows = parse_tables(page)[measured]
    assert len(rows) == len({(r.prompt, r.strategy) for r in raw.runs})
    # No row has chip energy: its columns are not drawn (a dash in every row), and the table
    # says why once, citing the page's numbered note with the reason the file records.
    notes = {n: html.unescape(text) for n, text in re.findall(
        r'<p class="phase-table-note" id="phase-note-(\d+)"><sup>\d+</sup> ([^<]*)</p>', page)}
    cited = re.findall(rf'data-dataset="{re.escape(measured)}".*?</div>', page, re.S)[0]
    for row in rows.values():
        assert "chip" not in row.cells and "ratio" not in row.cells
        assert "board" not in row.cells  # no board sensor, no board column
        assert row.cells["cpu"].value is not None
    assert "chip mJ/token" not in cited.split("</table>")[0]
    said = re.findall(r"Chip energy not available, so its columns \(chip mJ/token, energy vs "
                      r"plain\) are left out: note (\d+)\.", cited)
    assert len(said) == 1 and why in notes[said[0]]
    assert html.unescape(page).count(why) == 1  # said once on the page
    # The energy charts of the CPU file are replaced by a sentence; tokens/s vs k is drawn.
    missing = page.split(f'data-dataset="{measured}"')
    assert sum('class="phase-chart-missing" data-kind="energy_vs_speed"' in part[-200:]
               for part in missing) == 1
    assert "Not drawn: it needs chip energy, which is missing" in page
    assert f'data-kind="per_k" data-dataset="{measured}"' in page
    assert "The energy panel is left out: chip energy is missing" in page


def test_data_from_results_files_is_escaped(built_site) -> None:
    docs = built_site.paths.docs_dir
    site = built_site.paths.site_dir
    generated = [*docs.glob("notes/**/*.md"), *docs.glob("raw/*.md")]
    built = [*site.glob("notes/**/*.html"), *site.glob("raw/*.html")]
    for path in generated + built:
        text = path.read_text(encoding="utf-8")
        assert "<script>alert(" not in text, path
    note = (docs / "notes/fixture-versions/v1/index.md").read_text()
    assert "&lt;script&gt;alert(&#39;prompt&#39;)&lt;/script&gt;" in note
    assert "\\u003cscript\\u003ealert" in note  # inside the inline chart spec
    raw = (site / "raw/speculative-fixture-gpu.html").read_text()
    assert "before &lt;script&gt;alert(&#39;output&#39;)&lt;/script&gt; after" in raw
    # A run id with markup in it still gets a working, clean anchor.
    xss_run = next(r.id for r in gpu_results().runs if r.output_text == XSS_OUTPUT)
    assert f'id="{run_anchor(xss_run)}"' in raw
    assert "<" not in run_anchor(xss_run) and "'" not in run_anchor(xss_run)


def test_raw_data_page_lists_every_run_and_offers_the_file(built_site) -> None:
    docs = built_site.paths.docs_dir
    source = built_site.inputs.results_dir / GPU_FILE
    page = (docs / "raw/speculative-fixture-gpu.md").read_text()
    for run in gpu_results().runs:
        assert page.count(f'id="{run_anchor(run.id)}"') == 1
    copy = docs / "raw" / GPU_FILE
    assert copy.read_bytes() == source.read_bytes()
    assert hashlib.sha256(source.read_bytes()).hexdigest() in page
    assert f'href="{GPU_FILE}" download' in page
    # Its derived summary is offered next to it.
    assert 'href="summary-speculative-fixture-gpu.json" download' in page


def test_build_derives_summaries_in_memory_and_writes_nothing_into_results(
    tmp_path: Path,
) -> None:
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    paths = site_paths(tmp_path, inputs)
    before = _tree(inputs.results_dir)
    build_docs(paths)
    assert _tree(inputs.results_dir) == before  # results/ is input only
    # The derived summary is a download next to its raw file in the docs dir, and it reads
    # back as a valid summary file.
    summary = load(paths.docs_dir / "raw" / "summary-speculative-fixture-gpu.json")
    assert isinstance(summary, SummaryFile)
    assert not summary.summary_only and summary.raw_files == [GPU_FILE]
    assert summary.chip_sensor == "gpu" and summary.board_sensor == "board"
    assert [(r.prompt, r.strategy) for r in summary.rows] == [
        (p, s) for p in ("code", XSS_PROMPT) for s in ("plain", "draft-2", "draft-4", "ngram")
    ]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


@pytest.mark.slow
def test_adding_a_version_leaves_the_frozen_page_byte_identical(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    cpu = inputs.results_dir / CPU_FILE
    held = tmp_path / CPU_FILE
    shutil.move(cpu, held)  # v1 is published before the CPU campaign exists
    paths = site_paths(tmp_path, inputs)
    build_docs(paths)
    v1_dir = paths.docs_dir / "notes/fixture-versions/v1"
    before = _tree(v1_dir)
    assert "index.md" in before and any(name.endswith(".png") for name in before)
    v1_text = before["index.md"].decode()
    assert "This is the first version." in v1_text

    # Publish v2: a new results file and a new version in the note's front matter.
    shutil.move(held, cpu)
    note = inputs.notes_dir / "2026-01-fixture-versions.md"
    note.write_text(versioned_note(2))
    build_docs(paths)
    assert _tree(v1_dir) == before
    v2 = (paths.docs_dir / "notes/fixture-versions/v2/index.md").read_text()
    latest = (paths.docs_dir / "notes/fixture-versions/index.md").read_text()
    assert "Version 2 (latest)" in latest and "Version 2, 2026-02-01" in v2
    assert "<td>speculative-fixture-cpu.json</td><td>results file</td><td>—</td>" in v2
    assert "Adds the CPU-host campaign." in v2
    assert 'href="v1/index.html">v1</a>' in latest and 'href="v2/index.html">v2</a>' in latest
    assert "v2" not in v1_text and "Version 2" not in v1_text
    # The same inputs give the same bytes: rendering is deterministic.
    snapshot = _tree(paths.docs_dir / "notes")
    build_docs(paths)
    assert _tree(paths.docs_dir / "notes") == snapshot


def test_note_without_results_yet_still_builds(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    # The CPU-host note as it stood before its first campaign: a draft whose results entry is
    # a pattern that matches nothing yet.
    source = (REPO / "phase/notes/2026-11-speculative-decoding-cpu.md").read_text()
    source = re.sub(r"(?ms)^  - version: 2\n.*?(?=^errata:)", "", source)  # v1 alone
    source = re.sub(r"(?ms)^errata:.*?(?=^---$)", "errata: []\n", source)  # none yet
    draft = r'\1results: ["speculative-*.json"]\n\1draft: true'
    source = re.sub(r"(?m)^(\s+)results: \[.*\]$", draft, source, count=1)
    (notes / "2026-11-speculative-decoding-cpu.md").write_text(source)
    results = tmp_path / "results"
    results.mkdir()
    paths = site_paths(tmp_path, type("I", (), {"results_dir": results, "notes_dir": notes})())
    build_docs(paths)
    page = (paths.docs_dir / "notes/speculative-decoding-cpu/index.md").read_text()
    assert '!!! note "No results yet"' in page
    assert "speculative-&#42;.json" in page  # the pattern, shown literally
    assert "make measure" in page


def test_blocking_findings_refuse_to_publish(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    broken = inputs.results_dir / "speculative-broken.json"
    text = (inputs.results_dir / GPU_FILE).read_text()
    broken.write_text(text[: len(text) // 2])  # a truncated file
    paths = site_paths(tmp_path, inputs)
    with pytest.raises(BlockedError) as info:
        build_docs(paths)
    assert [Path(r.file).name for r in info.value.reports] == ["speculative-broken.json"]
    assert not (paths.docs_dir / "notes").exists()
    result = CliRunner().invoke(main, [
        "site", "--results-dir", str(inputs.results_dir), "--notes-dir", str(inputs.notes_dir),
        "--docs-dir", str(paths.docs_dir), "--site-dir", str(paths.site_dir),
    ])
    assert result.exit_code == 1
    assert "speculative-broken.json" in result.output and "not valid JSON" in result.output
    assert not paths.site_dir.exists()


@pytest.mark.slow
def test_build_command_renders_into_the_given_dirs(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    docs = tmp_path / "docs"
    result = CliRunner().invoke(main, [
        "build", "--results-dir", str(inputs.results_dir), "--notes-dir", str(inputs.notes_dir),
        "--docs-dir", str(docs),
    ])
    assert result.exit_code == 0, result.output
    assert "note fixture-versions: v1" in result.output
    # The project's published/ holds a generated note whose campaign this results dir lacks:
    # it is left out (nothing is frozen from another results dir), and the build says so.
    assert "its campaigns are not in this results directory; not rendered" in result.output
    assert (docs / "notes/fixture-versions/v1/index.md").is_file()
    assert (docs / "raw/speculative-fixture-cpu.md").is_file()
    assert (docs / "index.md").read_text() == (REPO / "docs/index.md").read_text()


def test_note_sources_are_checked(tmp_path: Path) -> None:
    good = (REPO / "phase/notes/2026-10-speculative-decoding.md").read_text()
    bad = tmp_path / "2026-10-bad.md"
    bad.write_text(good.replace("finding: >-", "findings: >-"))
    with pytest.raises(NoteError, match=r"2026-10-bad\.md: .*finding"):
        parse_note(bad)
    wrong_month = tmp_path / "2026-09-early.md"
    wrong_month.write_text(good)
    with pytest.raises(NoteError, match="does not match the file name's month"):
        parse_note(wrong_month)
    missing = tmp_path / "in"
    inputs = make_inputs(missing, versions=1, repo_notes=False)
    note = inputs.notes_dir / "2026-01-fixture-versions.md"
    note.write_text(note.read_text().replace(GPU_FILE, "speculative-nope.json"))
    with pytest.raises(NoteError, match=r"speculative-nope\.json, which is not in"):
        build_docs(site_paths(tmp_path, inputs))


def test_transcribed_summary_is_valid_and_complete() -> None:
    path = REPO / "results" / SEED_SUMMARY
    data = json.loads(path.read_text())
    assert data["kind"] == "summary" and data["summary_only"] is True
    report = validate_results(load(path), str(path))
    assert report.findings == []
    assert {r["prompt"] for r in data["rows"]} == {"code", "prose", "edit"}
    assert len(data["rows"]) == 18
    assert cpu_results().runs  # the fixture builders stay importable for other modules


@pytest.mark.slow
def test_a_campaign_without_finished_runs_is_skipped_not_fatal(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    started = replaced(gpu_results(), runs=[], status="running", id="fixture-started")
    write_results(started, inputs.results_dir / "speculative-started.json")
    paths = site_paths(tmp_path, inputs)
    result = build_docs(paths)
    assert "speculative-started.json" not in {d.name for d in result.datasets}
    assert not (paths.docs_dir / "raw/speculative-started.md").exists()
    assert (paths.docs_dir / "raw/speculative-fixture-gpu.md").is_file()
