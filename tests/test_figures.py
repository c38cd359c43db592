"""The figure registry (phase.analysis.figures) is the one definition of each figure: every
name a table, chart, note figure call, download or the terminal summary uses resolves there,
each shows the registry's value in the registry's words and format, and "vs plain" and spread
are computed one way wherever they appear."""

from __future__ import annotations

import io
import statistics
from pathlib import Path
from typing import Any

import pytest
from factories import make_results, write_results
from rich.console import Console

from phase.analysis import (
    BENCH_SPREAD,
    FIGURES,
    RUN_SPREAD,
    RunView,
    plain_row,
    row_value,
    run_value,
    spread,
    vs_plain,
)
from phase.analysis.bench_rows import samples_spread
from phase.analysis.formatting import DASH, count, fmt, pct, pct1, ratio, times
from phase.campaign import ui
from phase.publish.charts.energy import build_chart
from phase.publish.charts.strategy import build_strategy_chart
from phase.publish.data.datasets import Dataset, load_dataset
from phase.publish.notes import figures as note_figures
from phase.publish.numbers import changes, spreads, steps, tables
from phase.publish.numbers.downloads import results_frame
from phase.publish.numbers.steps import spread_of
from phase.publish.pages import crosshost
from phase.results import ResultsFile
from phase.validate import RuleSettings

# Plain decoding's decode window per prompt, and the draft's: speed vs plain is 1.6 on "a" and
# 2.0 on "b", so a ratio taken against the wrong prompt's plain row shows.
PLAIN_S = {"a": 2.0, "b": 2.5}
DRAFT_S = 1.25


def _results(draft_on_a: float = DRAFT_S) -> ResultsFile:
    def decode_s(slot: Any) -> float:
        base = (PLAIN_S[slot.prompt] if slot.strategy == "plain"
                else draft_on_a if slot.prompt == "a" else DRAFT_S)
        return base * (1 + 0.01 * slot.repeat)  # repeats 1% apart: a spread, not unstable
    return make_results(prompts=("a", "b"), strategies=("plain", "draft-4"), repeats=3,
                        decode_s=decode_s)


@pytest.fixture
def ds(tmp_path: Path) -> Dataset:
    _, loaded = load_dataset(write_results(_results(), tmp_path / "fixture.json"),
                             RuleSettings())
    assert loaded is not None
    return loaded


def _runs_mean(raw: ResultsFile, prompt: str, strategy: str, of: Any) -> float:
    return statistics.fmean(of(r) for r in raw.runs
                            if r.prompt == prompt and r.strategy == strategy)


def test_every_name_the_consumers_use_resolves_in_the_registry() -> None:
    conditions = {n for n, f in FIGURES.items() if f.kind == "condition"}
    assert set(tables.TABLE_FIGURES) <= conditions
    assert set(changes.METRICS) <= conditions
    assert set(note_figures.METRICS) <= conditions
    assert set(crosshost.SHOWN) <= conditions
    assert set(ui.SHOWN) <= conditions
    assert set(spreads.PER_RUN) <= conditions
    assert all(FIGURES[n].kind == "step" for n in steps.STEP_FIGURES)
    # Column keys are what pages and downloads name (data-key, CSV headers): each one a figure's.
    keys = {f.key: f for f in FIGURES.values()}
    for key, column in tables.COLUMNS.items():
        assert (column.label, column.title) == (keys[key].label, keys[key].description)
    for key, label, title in crosshost.COLUMNS:
        assert (label, title) == (keys[key].label, keys[key].host_title)
    assert ui.COLUMNS[1:-1] == tuple(FIGURES[n].short for n in ui.SHOWN)


def test_vs_plain_forms_pair_up_and_per_run_ratios_have_a_per_run_base() -> None:
    for f in FIGURES.values():
        if f.vs_plain is not None:
            assert FIGURES[f.vs_plain].ratio_of == f.name
        if f.ratio_of is not None:
            assert FIGURES[f.ratio_of].vs_plain == f.name
            assert f.show is ratio and f.unit == "× plain"
            if f.per_run:
                assert FIGURES[f.ratio_of].of_run is not None, f.name
        elif f.per_run:
            assert f.of_run is not None, f.name
        assert (f.of_row is not None) == (f.kind == "condition"), f.name


def test_vs_plain_from_the_registry_is_what_every_table_shows(ds: Dataset) -> None:
    raw = ds.raw
    assert raw is not None
    table = {(r.prompt, r.strategy): r for r in tables.build_table(ds, "../").rows}
    host_rows = {(r.strategy, t.prompt): r for page in crosshost.build_pages([ds])
                 for t in page.tables for r in t.rows}
    calls = note_figures.Figures("fixture", [ds], [], "../")
    for prompt in PLAIN_S:
        speed = (_runs_mean(raw, prompt, "draft-4", lambda r: r.tokens_per_s)
                 / _runs_mean(raw, prompt, "plain", lambda r: r.tokens_per_s))
        assert speed == pytest.approx(PLAIN_S[prompt] / DRAFT_S, rel=1e-3)
        row = next(r for r in ds.summary.rows if (r.prompt, r.strategy) == (prompt, "draft-4"))
        assert row_value("speed_vs_plain", ds.summary.rows, row) == pytest.approx(speed)
        cell = table[(prompt, "draft-4")].cells["speed_vs_plain"]
        assert cell.value == pytest.approx(speed) and cell.text == ratio(speed)
        assert host_rows[("draft-4", prompt)].cells["speed_vs_plain"].value == cell.value
        assert f">{ratio(speed)}</span>" in str(calls.value(prompt, "draft-4", "speed_vs_plain"))
        # The chip energy ratio too: the summary computed it with the same function.
        chip = table[(prompt, "draft-4")].cells["ratio"]
        assert chip.value == pytest.approx(DRAFT_S / PLAIN_S[prompt], rel=1e-3)
        # Per run: each run's tokens/s over plain's mean, whose mean is the ratio of the means
        # here (repeats differ alike on both sides).
        per_run = spreads.condition_spreads(ds)[(prompt, "draft-4", ())].figures["speed_vs_plain"]
        assert per_run.n == 3 and per_run.mean == pytest.approx(speed, rel=1e-3)


def test_a_vs_plain_figure_without_plain_is_missing_not_zero(ds: Dataset) -> None:
    # A row that stores no ratio (a transcribed summary) without plain's row beside it.
    rows = [r.model_copy(update={"speed_vs_plain": None})
            for r in ds.summary.rows if r.strategy != "plain"]
    assert plain_row(rows, "a") is None
    assert row_value("speed_vs_plain", rows, rows[0]) is None
    assert vs_plain(3.0, 0.0) is None and vs_plain(None, 2.0) is None
    assert vs_plain(0.0, 2.0) == 0.0
    raw = ds.raw
    assert raw is not None
    assert run_value("speed_vs_plain", RunView(raw.runs[0]), None) is None


def test_changes_table_labels_and_writes_figures_as_the_registry_says(
        tmp_path: Path, ds: Dataset) -> None:
    (tmp_path / "b").mkdir()
    _, after = load_dataset(write_results(_results(DRAFT_S / 2), tmp_path / "b" / "fixture.json"),
                            RuleSettings())
    assert after is not None
    found = {c.metric: c for c in changes.compare([ds], [after])
             if c.item.endswith("a × draft-4")}
    vs = found[FIGURES["speed_vs_plain"].label]
    assert vs.before == ratio(PLAIN_S["a"] / DRAFT_S) and vs.after == ratio(2 * PLAIN_S["a"]
                                                                           / DRAFT_S)
    assert vs.change == "+100.0%"
    assert found[FIGURES["tokens_per_s"].label].after.count(".") == 1  # fmt: one decimal


def test_downloads_head_each_column_with_its_registry_label(ds: Dataset) -> None:
    frame = results_frame(tables.build_table(ds, "../"))
    shown = [FIGURES[n].label for n in tables.TABLE_FIGURES
             if FIGURES[n].key in tables.build_table(ds, "../").rows[0].cells]
    # Each figure's column, then the ends of its 95% interval where the table shows one.
    headed = [c for c in frame.columns[2:] if not c.endswith((" low", " high"))]
    assert headed[:len(shown)] == shown
    assert {"speed vs plain low", "speed vs plain high"} <= set(frame.columns)
    columns = list(frame.columns)
    assert columns[columns.index("speed vs plain") + 1:columns.index("speed vs plain") + 3] == \
        ["speed vs plain low", "speed vs plain high"]
    # A median's interval needs six runs: with fewer in every row, its columns are absent.
    has_median_interval = any("tokens_per_s" in r.intervals for r in ds.summary.rows)
    assert ("tokens/s low" in columns) is has_median_interval


def _tooltips(spec: Any) -> list[dict[str, Any]]:
    if isinstance(spec, dict):
        found = [t for t in spec.get("tooltip", []) if isinstance(t, dict)] \
            if isinstance(spec.get("tooltip"), list) else []
        return found + [t for v in spec.values() for t in _tooltips(v)]
    if isinstance(spec, list):
        return [t for v in spec for t in _tooltips(v)]
    return []


def test_chart_tooltips_use_the_registry_labels_and_formats(ds: Dataset) -> None:
    by_label = {(f.label, f.vega_format) for f in FIGURES.values()}
    energy = build_chart(ds.summary, "energy_vs_speed").spec
    costs = build_strategy_chart(ds, "cost_per_token").spec
    assert energy is not None and costs is not None
    quantities = [t for t in _tooltips(energy) if t.get("type") == "quantitative"
                  and t.get("format") and "95% interval" not in t.get("title", "")]
    assert {(t["title"], t["format"]) for t in quantities} <= by_label
    assert {t["title"] for t in quantities} >= {"tokens/s", "chip mJ/token", "energy vs plain"}
    medians = {t["title"] for t in _tooltips(costs) if t.get("title", "").endswith(" (median)")}
    assert medians == {f"{FIGURES[n].axis} (median)"
                       for n in ("cpu_ms_per_token", "chip_mj_per_token")}


def test_the_terminal_summary_shows_registry_figures(
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(ui, "console", Console(file=out, width=200, color_system=None))
    results = _results()
    ui.print_summary(results)
    text = out.getvalue()
    for name in ui.SHOWN:
        assert FIGURES[name].short in text
    line = next(line for line in text.splitlines() if "draft-4" in line)  # prompt a's table
    assert times(PLAIN_S["a"] / DRAFT_S) in line


def test_an_80_column_summary_names_every_factor_level_in_full(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A factor study's conditions are told apart on a narrow terminal: each level in a
    table title, the strategy column holding the strategy alone (it was cut to "concurre…")."""
    from phase.results import load_raw

    out = io.StringIO()
    monkeypatch.setattr(ui, "console", Console(file=out, width=80, color_system=None))
    results = load_raw(Path(__file__).resolve().parent.parent / "results"
                       / "serving-x86_64-2c-2026-12-07-3.json")
    ui.print_summary(results)
    text = out.getvalue()
    titles = [line.strip() for line in text.splitlines() if line.startswith("prompt: ")]
    assert titles == [f"prompt: humaneval-16 · concurrency={c}" for c in (1, 2, 4, 8)]
    labels = [line.split("│")[1].strip() for line in text.splitlines()
              if line.startswith("│") and line.split("│")[1].strip()]
    assert labels and all("…" not in label for label in labels)
    assert {label.rstrip(" *") for label in labels} == set(results.config.strategies)
    assert max(len(line) for line in text.splitlines()) <= 80


def test_formatters_write_none_as_a_dash_and_zero_as_a_number() -> None:
    for show in (fmt, pct, pct1, ratio, times, count):
        assert show(None) == DASH
    assert [fmt(0), pct(0), pct1(0), ratio(0), times(0), count(0)] == \
        ["0.0", "0%", "0.0%", "0.00", "0.00×", "0"]
    assert [fmt(12.345), fmt(1.23456, 3), pct(0.734), pct1(0.04567), ratio(1.234),
            times(1.5), count(3)] == ["12.3", "1.235", "73%", "4.6%", "1.23", "1.50×", "3"]


@pytest.mark.parametrize("name", [n for n, f in FIGURES.items() if f.vega_format])
def test_a_charts_vega_format_writes_what_the_formatter_writes(name: str) -> None:
    # Python's format mini-language and d3-format agree on ".1f", ".2f", ".0%", ".1%".
    fig = FIGURES[name]
    for value in (0.0, 0.0456, 0.5, 1.2345, 123.456):
        assert format(value, fig.vega_format) == fig.show(value)


def test_run_spread_is_about_the_mean_and_bench_spread_about_the_median() -> None:
    skewed = [1.0, 2.0, 6.0]  # mean 3, median 2
    assert spread(skewed) == spread(skewed, RUN_SPREAD) == pytest.approx(5 / 3)
    assert spread(skewed, BENCH_SPREAD) == pytest.approx(2.5)
    assert samples_spread([*skewed, True, "x"]) == pytest.approx(2.5)  # bench's rows
    assert spread_of(skewed) is not None and spread_of(skewed).relative == spread(skewed)
    for centre in (RUN_SPREAD, BENCH_SPREAD):
        assert spread([4.0], centre) is None
        assert spread([0.0, 0.0], centre) is None
        assert spread([-3.0, -1.0], centre) is None
