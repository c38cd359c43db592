"""The serving study's note, built by `phase build` (the CLI, the real templates: a serving
campaign's note is the default note with the serving section placed in it) and by mkdocs from a
synthetic serving results file (tests/serving_factories.py): the crossover per strategy by its
rule with intervals, the throughput and energy-per-request charts (energy "not measured" with
the reason where no sensor), the latency table, every row linked to runs that exist on the
data page, and data-derived text escaped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from factories import write_results
from serving_factories import serving_campaign

from phase.cli import main
from phase.publish.markup.anchors import run_anchor
from phase.publish.site.build import SitePaths, build_site
from phase.serving.windows import NO_SENSOR

REPO = Path(__file__).resolve().parent.parent
POOL = "<i>pool</i>"  # a pool name written as markup: the page must show it as text


def _build(tmp_path: Path, power_w: float | None,
           strategies: tuple[str, ...] = ("plain", "draft-4")) -> tuple[str, str]:
    results = tmp_path / "results"
    results.mkdir()
    (tmp_path / "notes").mkdir()
    campaign = serving_campaign(speedup=lambda s, c: 1.5 if c <= 2 else 0.6, cv=0.03,
                                power_w=power_w, pool=POOL, strategies=strategies)
    write_results(campaign, results / "serving-a.json")
    out = CliRunner().invoke(main, [
        "build", "--results-dir", str(results), "--notes-dir", str(tmp_path / "notes"),
        "--docs-dir", str(tmp_path / "docs"), "--published-dir", str(tmp_path / "published")])
    assert out.exit_code == 0, out.output
    [page] = (tmp_path / "docs" / "notes").glob("serving-*/index.md")
    return page.read_text(), (tmp_path / "docs" / "raw" / "serving-a.md").read_text()


def _table(page: str, kind: str) -> str:
    found = re.search(rf'<div class="phase-table phase-cost-table" data-kind="{kind}".*?</div>',
                      page, re.S)
    assert found, f"no {kind} table"
    return found.group(0)


def test_serving_note_states_the_crossover_with_charts_and_latencies(tmp_path: Path) -> None:
    page, raw = _build(tmp_path, power_w=10.0)
    # The section comes before the results: the answer ahead of the tables.
    assert page.index("\n## Speculation under load\n") < page.index("\n## Results\n")
    assert "from which concurrency on does it stop? Rule: per strategy" in page
    # The crossover sentence, by the rule, with the ratios' intervals.
    sentence = next(line for line in page.splitlines() if line.startswith("- draft-4 on "))
    assert "from concurrency 4 on (the crossover)" in sentence
    assert re.search(r"1: 1\.\d\d× \(95% interval 1\.\d\d×–1\.\d\d×\)", sentence)
    crossover = _table(page, "crossover")
    assert "from concurrency 4 on (the crossover)" in crossover
    # Both charts drawn, with their data.
    assert 'data-kind="throughput_vs_concurrency"' in page
    assert 'class="phase-chart" id="chart-2-energy_per_request_vs_concurrency"' in page \
        or re.search(r'class="phase-chart" id="[^"]*energy_per_request_vs_concurrency"', page)
    # The latency table: every percentile of the four latencies, per strategy and level.
    # (two tables of two latencies each, so that each fits the page's column)
    for kind, names in (("latency", ("TTFT", "TPOT")), ("latency-2", ("ITL", "E2E"))):
        latency = _table(page, kind)
        for name in names:
            for q in ("p50", "p90", "p99"):
                assert f"<th>{name} {q}</th>" in latency
        assert latency.count("<tr><td>") == 2 * 4  # plain and draft-4 at 1, 2, 4, 8
    # Every run a row links to is listed on the data page.
    runs = set(re.findall(r'href="\.\./\.\./raw/serving-a\.html#(run-[^"]+)"', page))
    assert len(runs) == 2 * 4 * 3 and all(f'id="{h}"' in raw for h in runs)
    assert f'#{run_anchor("r0-" + POOL + "-draft-4-concurrency=4")}"' in _table(
        page, "serving-ratios")
    # Data-derived text (the pool's name) is escaped wherever it shows.
    assert POOL not in page
    assert "&lt;i&gt;pool&lt;/i&gt;" in crossover


@pytest.mark.parametrize("power_w", [None])
def test_serving_note_without_a_sensor_says_energy_is_not_measured(
        tmp_path: Path, power_w: float | None) -> None:
    page, _ = _build(tmp_path, power_w=power_w, strategies=("plain", "draft-4", "auto"))
    assert f"Not drawn: energy was not measured: {NO_SENSOR}." in page  # the chart, not drawn
    assert 'data-kind="energy_per_request_vs_concurrency"' in page
    assert f"not measured: {NO_SENSOR}" in _table(page, "crossover")
    # No number stands in for the missing energy.
    ratios = _table(page, "serving-ratios")
    assert ratios.count("—") >= 2 * 2 * 4  # both windows, every level of draft-4 and auto
    # auto against the better of plain and draft-4 at each level, held to the floor.
    floor = _table(page, "auto-floor")
    assert "<th>at least 0.98×</th>" in floor and floor.count("<tr><td>") == 4
    assert "<td>draft-4</td>" in floor and "<td>plain</td>" in floor


@pytest.mark.slow  # a whole site: mkdocs build
def test_serving_note_through_mkdocs(tmp_path: Path) -> None:
    for d in ("results", "notes"):
        (tmp_path / "in" / d).mkdir(parents=True)
    write_results(serving_campaign(speedup=lambda s, c: 1.5 if c <= 2 else 0.6, cv=0.03,
                                   pool=POOL), tmp_path / "in/results/serving-a.json")
    paths = SitePaths.default(REPO, results_dir=tmp_path / "in/results",
                              notes_dir=tmp_path / "in/notes", docs_dir=tmp_path / "docs",
                              site_dir=tmp_path / "site", published_dir=tmp_path / "published")
    built = build_site(paths)
    [note] = built.notes
    html = (paths.site_dir / "notes" / note.slug / "index.html").read_text()
    assert 'id="speculation-under-load"' in html
    assert "from concurrency 4 on (the crossover)" in html
    assert 'data-kind="throughput_vs_concurrency"' in html and 'data-kind="latency"' in html
    # The pool's markup is text on the built page, never an element.
    assert "<i>pool</i>" not in html and "&lt;i&gt;pool&lt;/i&gt;" in html


def test_the_page_counts_the_requests_that_equal_plain_decoding() -> None:
    """The count of requests equal to plain single-request decoding, per strategy and
    concurrency, is computed from the requests: one request marked different moves it."""
    from phase.publish.notes.serving_section import equality_text

    campaign = serving_campaign(levels=(1, 2), repeats=2, requests=4)
    text = equality_text(campaign)
    total = sum(len(r.serving.requests) for r in campaign.runs if r.serving is not None)
    assert f": {total} of {total} (" in text
    assert "plain at 1: 8 of 8, at 2: 8 of 8" in text
    # One draft-4 request at concurrency 2 differs: only its own cell and the total move.
    run = next(r for r in campaign.runs if r.strategy == "draft-4" and r.serving is not None
               and r.serving.concurrency == 2)
    assert run.serving is not None
    run.serving.requests[0] = run.serving.requests[0].model_copy(update={"matches_plain": False})
    text = equality_text(campaign)
    assert f": {total - 1} of {total} (" in text
    assert "draft-4 at 1: 8 of 8, at 2: 7 of 8" in text
    assert "near ties" in text


def test_the_page_splits_differing_requests_into_near_ties_and_the_rest() -> None:
    """With the evidence recorded, the differing requests are counted by their gaps: both
    below near_tie_gap is a near tie, anything else is not; without it, the page says the
    gaps were not recorded."""
    from phase.publish.notes.serving_section import equality_text

    campaign = serving_campaign(levels=(1, 2), repeats=1, requests=4)
    text = equality_text(campaign)
    assert "Of those that differ, 0 do so at a near tie" in text and "0 otherwise" in text
    runs = [r for r in campaign.runs if r.serving is not None]
    for run, (gap_verify, gap_reference) in zip(runs, [(0.1, 0.2), (0.1, 0.7), (0.3, 0.4)],
                                                strict=False):
        assert run.serving is not None
        run.serving.requests[1] = run.serving.requests[1].model_copy(update={
            "matches_plain": False, "first_divergence": 0,
            "divergence_gap_verify": gap_verify, "divergence_gap_reference": gap_reference})
    text = equality_text(campaign, near_tie_gap=0.5)
    assert "Of those that differ, 2 do so at a near tie" in text and "and 1 otherwise" in text
    assert "within 0.5 of each other" in text
    run = runs[3]
    assert run.serving is not None
    run.serving.requests[0] = run.serving.requests[0].model_copy(update={"matches_plain": False})
    text = equality_text(campaign)
    assert "1 differ without the two most likely tokens' logit gaps recorded" in text
