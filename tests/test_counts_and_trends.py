"""Counts behind rates and trends that respect their parts (issue 44, item 5), without a model
or a site build: the accepted/drafted counts a page shows are the runs' own, summed; a trend
over temperature is per prompt, with an aggregate only where every prompt goes the same way;
a page says each table note once, and a long reason once as a numbered note."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from phase.analysis.counts import Counts, rate_with_counts, row_acceptance_counts
from phase.analysis.figures import FIGURES, STATISTICS, statistics_caption
from phase.analysis.trends import direction, trend
from phase.publish.data.datasets import Dataset, load_dataset
from phase.publish.numbers.pagenotes import LONG_REASON, PageNotes
from phase.publish.numbers.tables import TABLE_FIGURES, build_table
from phase.publish.numbers.temperature import changes_from_greedy, temperature_rows, trends
from phase.validate import RuleSettings

REPO = Path(__file__).resolve().parent.parent
SAMPLING = REPO / "results" / "speculative_sampling-x86_64-2c-2026-12-03.json"
CPU = REPO / "results" / "speculative-x86_64-2c-2026-11-30-2.json"


@pytest.fixture(scope="module")
def sampling() -> Dataset:
    _, ds = load_dataset(SAMPLING, RuleSettings())
    assert ds is not None
    return ds


def _raw_runs(path: Path) -> dict[str, dict]:
    """The file's runs as plain JSON, read apart from phase's own reader."""
    return {r["id"]: r for r in json.loads(path.read_text())["runs"]}


def test_counts_are_the_rows_runs_summed(sampling: Dataset) -> None:
    runs = _raw_runs(SAMPLING)
    checked = 0
    for row in sampling.summary.rows:
        counts = row_acceptance_counts(sampling.raw, row)
        assert counts is not None
        assert counts.kept == sum(runs[i]["accepted"] for i in row.run_ids)
        assert counts.tried == sum(runs[i]["drafted"] for i in row.run_ids)
        # Only undisturbed runs stand behind a row.
        assert not any(runs[i]["disturbed"] for i in row.run_ids)
        checked += counts.tried > 0
    assert checked > 0


def test_a_rate_is_written_with_its_counts() -> None:
    assert rate_with_counts(0.5, Counts(4, 8)) == "50% (4/8)"
    assert rate_with_counts(1.0, Counts(2, 2)) == "100% (2/2)"
    assert rate_with_counts(0.5, None) == "50%"  # a transcribed summary: no runs to count
    assert rate_with_counts(None, Counts(0, 0)) == "—"
    assert Counts(0, 0).rate is None


def test_the_results_table_shows_counts_and_names_each_statistic(sampling: Dataset) -> None:
    table = build_table(sampling, "../../")
    shown = [(row, row.cells["acceptance"]) for row in table.rows
             if row.cells["acceptance"].value is not None]
    assert shown
    for _, cell in shown:
        assert cell.counts is not None
        assert cell.text.endswith(f"({cell.counts.kept}/{cell.counts.tried})"), cell.text
    caption = table.notes[0]
    assert caption == statistics_caption([n for n in TABLE_FIGURES
                                          if FIGURES[n].key in {c.key for c in table.columns}])
    for column in table.columns:
        name = next(n for n in TABLE_FIGURES if FIGURES[n].key == column.key)
        assert f"{FIGURES[name].label}: {STATISTICS[name]}" in caption


def test_direction_compares_the_highest_level_with_the_lowest() -> None:
    assert direction([0.4, 0.9, 0.5]) == "rises"
    assert direction([0.5, 0.1, 0.4]) == "falls"
    assert direction([0.5, 0.9, 0.5]) == "flat"
    assert direction([None, 0.9, 0.5]) is None
    assert direction([0.5]) is None


def test_an_aggregate_only_where_every_part_agrees() -> None:
    agree = trend({"code": [0.5, 0.6], "prose": [0.2, 0.7]})
    assert agree.direction == "rises" and agree.withheld is None
    split = trend({"code": [0.5, 0.6], "prose": [0.7, 0.2]})
    assert split.direction is None
    assert "disagree" in split.withheld and "code rises" in split.withheld \
        and "prose falls" in split.withheld
    lone = trend({"code": [None, 0.6], "edit": [0.44, 1.0], "prose": [None, None]})
    assert lone.direction is None and "only edit" in lone.withheld
    gap = trend({"code": [0.5, 0.6], "edit": [0.4, 1.0], "prose": [None, 0.9]})
    assert gap.direction is None and "prose" in gap.withheld


def test_the_temperature_table_is_per_prompt_with_aggregates_only_where_prompts_agree(
        sampling: Dataset) -> None:
    rows = temperature_rows(sampling)
    keys = [(r.strategy, r.prompt, r.temperature) for r in rows]
    assert len(keys) == len(set(keys)), "one row per strategy, prompt and temperature"
    assert len({r.prompt for r in rows}) > 1 and "plain" not in {r.strategy for r in rows}
    found = trends(rows)
    assert found
    for t in found:
        mine = [r for r in rows if r.strategy == t.strategy]
        temps = sorted({r.temperature for r in mine})
        by_prompt = {}
        for prompt in dict.fromkeys(r.prompt for r in mine):
            at = {r.temperature: getattr(r, t.figure) for r in mine if r.prompt == prompt}
            lo, hi = at.get(temps[0]), at.get(temps[-1])
            by_prompt[prompt] = (None if lo is None or hi is None
                                 else (hi > lo) - (hi < lo))
        signs = set(by_prompt.values())
        agrees = None not in signs and len(signs) == 1 and len(by_prompt) >= 2
        assert t.trend.agrees == agrees, (t.strategy, t.figure, by_prompt, t.trend)
        if agrees:
            for i, temp in enumerate(temps):
                values = [getattr(r, t.figure) for r in mine if r.temperature == temp]
                assert t.across[i] == statistics.median(v for v in values if v is not None)
        else:
            assert t.across == [] and t.trend.withheld.startswith("withheld")
    for change in changes_from_greedy(rows):
        base = next(r for r in rows if (r.strategy, r.prompt, r.temperature)
                    == (change.strategy, change.prompt, 0.0))
        here = next(r for r in rows if (r.strategy, r.prompt, r.temperature)
                    == (change.strategy, change.prompt, change.temperature))
        if base.acceptance is not None and here.acceptance is not None:
            assert change.acceptance_change == pytest.approx(
                100 * (here.acceptance - base.acceptance))


def test_a_page_says_each_note_once_and_numbers_long_reasons() -> None:
    notes = PageNotes()
    long = "x" * LONG_REASON
    n = notes.cite(long)
    assert notes.cite(long) == n
    first = notes.once(["Chip energy from sensor a.", "Each figure is the median."])
    assert [t.text for t in first] == [long, "Chip energy from sensor a.",
                                       "Each figure is the median."]
    assert first[0].number == n and first[0].anchor == f"phase-note-{n}"
    second = notes.once(["Each figure is the median.", "Chip energy from sensor b."])
    assert [t.text for t in second] == ["Chip energy from sensor b."]


def test_a_long_reason_is_a_numbered_note_not_a_title_in_every_cell() -> None:
    _, ds = load_dataset(CPU, RuleSettings())
    assert ds is not None
    notes = PageNotes()
    table = build_table(ds, "../../", notes)
    reasons = {r.chip_mj_per_token_reason for r in ds.summary.rows}
    assert all(r is not None and len(r) >= LONG_REASON for r in reasons)
    # No row has chip energy: no chip cell repeats the reason (the column is not drawn); the
    # table's one line about it cites the numbered notes that give the reasons, written once.
    assert table.rows and all("chip" not in row.cells for row in table.rows)
    written = [t for t in table.said if t.number is not None and t.text in reasons]
    assert {t.text for t in written} == reasons
    (line,) = [t.text for t in table.said if t.text.startswith("Chip energy not available")]
    assert line.endswith("; ".join(f"note {t.number}" for t in written) + ".")
    # A second table on the same page cites the notes without writing them again.
    again = build_table(ds, "../../", notes)
    assert not [t for t in again.said if t.number is not None]
    assert not again.said


def test_the_results_download_carries_the_counts(sampling: Dataset) -> None:
    from phase.publish.numbers.downloads import results_frame

    table = build_table(sampling, "../../")
    frame = results_frame(table)
    runs = _raw_runs(SAMPLING)
    by_condition = {(r.prompt, r.strategy, tuple(r.levels)): r for r in table.rows}
    assert len(frame) == len(by_condition)
    for record, row in zip(frame.to_dict("records"), table.rows, strict=True):
        cell = row.cells["acceptance"]
        if cell.value is None:
            continue
        ids = [link.title.removeprefix("run ") for link in row.links]
        assert record["accepted tokens"] == sum(runs[i]["accepted"] for i in ids)
        assert record["drafted tokens"] == sum(runs[i]["drafted"] for i in ids)


def test_an_aggregate_acceptance_carries_every_prompts_counts_summed() -> None:
    from phase.publish.numbers.temperature import TemperatureRow
    from phase.publish.numbers.temperature import trends as trends_of

    def row(prompt: str, t: float, kept: int, tried: int) -> TemperatureRow:
        return TemperatureRow("draft-4", prompt, t, 3, kept / tried, Counts(kept, tried),
                              None, None)

    rows = [row("code", 0.0, 5, 10), row("code", 1.0, 8, 10),
            row("prose", 0.0, 2, 10), row("prose", 1.0, 6, 12)]
    [acceptance, _] = trends_of(rows)
    assert acceptance.trend.direction == "rises"
    assert acceptance.across == [statistics.median([0.5, 0.2]), statistics.median([0.8, 0.5])]
    assert acceptance.across_counts == [Counts(7, 20), Counts(14, 22)]
    assert acceptance.ends["prose"] == (Counts(2, 10), Counts(6, 12))


def test_a_transcribed_summary_says_its_rates_have_no_counts() -> None:
    _, ds = load_dataset(REPO / "results" / "summary-speculative-7b.json", RuleSettings())
    assert ds is not None and ds.raw is None
    table = build_table(ds, "../../")
    shown = [row.cells["acceptance"] for row in table.rows
             if row.cells["acceptance"].value is not None]
    assert shown and all(c.counts is None and "(" not in c.text for c in shown)
    assert any("without the accepted/drafted counts" in line for line in table.notes)
