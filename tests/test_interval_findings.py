"""Figures with intervals, everywhere a number is shown: summaries hold the median of the
undisturbed runs and a bootstrap 95% interval, the results table, its downloads, the charts'
whiskers and the terminal summary show it, and a generated finding states a ratio to plain
decoding only where its interval excludes 1.0 ("not resolved" otherwise).

The campaign below has two prompts. On "code" draft-4 is faster than plain decoding in every
repeat by the same margin: resolved. On "prose" it is faster in one repeat and slower in
another: its interval includes 1.0, so no finding may state its ratio.
"""

from __future__ import annotations

import html
import io
import json
from pathlib import Path
from typing import Any

import pytest
from factories import (
    campaign_runs,
    make_results,
    make_sensor,
    make_summary,
    replaced,
    speculate,
    write_results,
)
from rich.console import Console
from test_generated import _paths
from test_publish_inputs import parse_tables

from phase.analysis import summarize
from phase.analysis.formatting import ratio, span, times
from phase.campaign import ui
from phase.publish.charts.energy import build_chart
from phase.publish.charts.strategy import build_strategy_chart
from phase.publish.data.datasets import Dataset, load_dataset
from phase.publish.numbers.downloads import results_frame
from phase.publish.numbers.headline import best_by_prompt, headline
from phase.publish.numbers.tables import build_table
from phase.publish.site.build import build_docs
from phase.results import SummaryRow, load, migrate
from phase.validate import RuleSettings, validate_results

PLAIN_S = 2.0
# Draft-4's decode window per prompt and repeat: on code 1.25 s in every round (1.6x plain's
# speed), on prose 1.9, 2.1 and 2.0 s (faster, slower, the same).
DRAFT_S = {"code": (1.25, 1.25, 1.25), "prose": (1.9, 2.1, 2.0)}


def _results(prompts: tuple[str, ...] = ("code", "prose"), **changes: Any):
    def decode_s(slot: Any) -> float:
        drift = 1 + 0.01 * slot.repeat  # one round slower than the other: pairing cancels it
        if slot.strategy == "plain":
            return PLAIN_S * drift
        return DRAFT_S[slot.prompt][slot.repeat] * drift
    runs = campaign_runs([make_sensor()], prompts=prompts, strategies=("plain", "draft-4"),
                         repeats=3, decode_s=decode_s)
    runs = [speculate(r, 0.75) if r.strategy != "plain" else r for r in runs]
    return make_results(runs, prompts=prompts, strategies=("plain", "draft-4"), id="intervals",
                        experiment="speculative", **changes)


def _dataset(tmp_path: Path, results: Any = None) -> Dataset:
    path = write_results(results or _results(), tmp_path / "speculative-intervals.json")
    _, ds = load_dataset(path, RuleSettings())
    assert ds is not None
    return ds


def _row(ds: Dataset, prompt: str, strategy: str = "draft-4") -> SummaryRow:
    return next(r for r in ds.summary.rows if (r.prompt, r.strategy) == (prompt, strategy))


def test_summary_rows_hold_medians_and_paired_intervals(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    code, prose = _row(ds, "code"), _row(ds, "prose")
    # Paired by repeat: the rounds' 1% drift cancels, so on code every ratio is 1.6 exactly.
    speed = code.intervals["speed_vs_plain"]
    assert speed.paired and speed.n == 3
    assert code.speed_vs_plain == pytest.approx(1.6)
    assert speed.low == pytest.approx(1.6) and speed.high == pytest.approx(1.6)
    # Prose: ratios 2.0/1.9, 2.0/2.1, 1.0: the median is 1.0 and the interval spans 1.0.
    found = prose.intervals["speed_vs_plain"]
    assert found.low < 1.0 < found.high
    assert prose.speed_vs_plain == pytest.approx(1.0)
    # The tokens/s interval of a condition lies within its runs' range, around the median.
    runs = [r.tokens_per_s for r in ds.raw.runs if (r.prompt, r.strategy) == ("prose", "draft-4")]
    tps = prose.intervals["tokens_per_s"]
    assert min(runs) <= tps.low <= prose.tokens_per_s <= tps.high <= max(runs)
    assert prose.tokens_per_s == sorted(runs)[1]
    assert "median of repeats" in ds.summary.source


def test_one_slow_run_does_not_move_the_median(tmp_path: Path) -> None:
    """The motivating failure: one run at a tenth of its repeats' speed pulled a mean down."""
    results = _results(prompts=("code",))
    slow = max(results.runs, key=lambda r: r.order)  # the last run: nothing runs after it
    runs = [replaced(r, decode_s=r.decode_s * 10, tokens_per_s=r.tokens_per_s / 10,
                     ended_unix_s=r.ended_unix_s + r.decode_s * 9)
            if r.id == slow.id else r for r in results.runs]
    ds = _dataset(tmp_path, replaced(results, runs=runs))
    condition = _row(ds, "code", slow.strategy)
    speeds = sorted(r.tokens_per_s for r in results.runs
                    if (r.prompt, r.strategy) == ("code", slow.strategy))
    assert condition.tokens_per_s == pytest.approx(speeds[1])  # the median of the three
    assert _row(ds, "code").speed_vs_plain == pytest.approx(1.6)


def test_a_finding_states_a_ratio_only_where_its_interval_excludes_one(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    best = {b.prompt: b for b in best_by_prompt(ds.name, ds.summary.rows)}
    code, prose = best["code"], best["prose"]
    assert code.speed_resolved and code.beats_plain
    assert code.speed_phrase == "1.60 times plain decoding's 7.9 (95% interval 1.60–1.60)"
    assert not prose.speed_resolved and not prose.beats_plain
    low, high = prose.speed_interval.low, prose.speed_interval.high
    assert prose.speed_phrase == ("not resolved from plain decoding's 7.9: the 95% interval of "
                                  f"the ratio, {span(low, high, ratio)}, includes 1")
    assert "times" not in prose.speed_phrase
    # The headline picks the fastest resolved strategy and gives its interval.
    assert headline([ds]) == ("Fastest: draft-4 on code at 1.60× plain decoding's speed (95% "
                              "interval 1.60×–1.60×) and 0.62× its chip energy per token (95% "
                              "interval 0.62×–0.62×)")
    # With only the unresolved prompt, the headline states no ratio.
    (tmp_path / "prose").mkdir()
    alone = _dataset(tmp_path / "prose", _results(prompts=("prose",)))
    line = headline([alone])
    assert line is not None and line.startswith(
        "Nothing was resolved faster than plain decoding; the fastest, draft-4 on prose, was "
        "not resolved from its speed: the 95% interval of the ratio")
    assert "×" not in line.split("energy")[0]


@pytest.mark.slow  # renders every page of a campaign (no mkdocs build)
def test_generated_note_says_not_resolved_and_its_table_carries_intervals(
        tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    write_results(_results(), paths.results_dir / "speculative-intervals.json")
    build_docs(paths)
    slug = next(p.name for p in (paths.docs_dir / "notes").iterdir() if p.is_dir())
    page = (paths.docs_dir / f"notes/{slug}/index.md").read_text()
    text = html.unescape(page)  # the prose escapes Markdown's characters as entities
    assert ("On the code prompt the fastest strategy other than plain decoding was draft-4, at "
            "12.7 tokens/s: 1.60 times plain decoding's 7.9 (95% interval 1.60–1.60).") in text
    prose = text.split("On the prose prompt", 1)[1].split("\n", 1)[0]
    assert "not resolved from plain decoding's 7.9" in prose and " times " not in prose
    rows = parse_tables(page)["speculative-intervals.json"]
    cell = rows[("prose", "draft-4")].cells["speed_vs_plain"]
    assert float(cell.low) < 1.0 < float(cell.high)
    assert cell.interval == span(float(cell.low), float(cell.high), ratio)
    assert cell.text == "1.00"


def test_table_downloads_and_charts_carry_the_interval(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    prose = _row(ds, "prose")
    table = build_table(ds, "../")
    cell = next(r for r in table.rows if (r.prompt, r.strategy) == ("prose", "draft-4")) \
        .cells["speed_vs_plain"]
    found = prose.intervals["speed_vs_plain"]
    assert (cell.low, cell.high) == (found.low, found.high)
    assert cell.interval == span(found.low, found.high, ratio) == "0.95–1.05"
    frame = results_frame(table)
    record = frame[(frame.prompt == "prose") & (frame.strategy == "draft-4")].iloc[0]
    assert record["speed vs plain low"] == found.low and record["tokens/s high"] == \
        prose.intervals["tokens_per_s"].high
    # The speed chart's whiskers are the interval, and its caption says so.
    chart = build_strategy_chart(ds, "speed_vs_acceptance")
    text = json.dumps(chart.spec)
    assert '"speed_low"' in text and '"y2": {"field": "speed_high"' in text
    points = _records(chart.spec, "prose")
    assert any(p["speed_low"] == found.low and p["speed_high"] == found.high for p in points)
    assert "bootstrap 95% interval" in chart.caption and "not resolved" in chart.caption
    energy = build_chart(ds.summary, "ratio_vs_acceptance")
    assert "ratio_vs_plain_low" in json.dumps(energy.spec) and "95% interval" in energy.caption


def _records(spec: Any, prompt: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(spec, dict):
        if isinstance(spec.get("values"), list):
            out += [v for v in spec["values"] if isinstance(v, dict) and v.get("prompt") == prompt]
        for v in spec.values():
            out += _records(v, prompt)
    elif isinstance(spec, list):
        for v in spec:
            out += _records(v, prompt)
    return out


def test_terminal_summary_prints_each_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(ui, "console", Console(file=out, width=200, color_system=None))
    results = _results()
    ui.print_summary(results)
    text = out.getvalue()
    summary = summarize(results, validate_results(results, "f.json"), "f.json")
    prose = next(r for r in summary.rows if (r.prompt, r.strategy) == ("prose", "draft-4"))
    found = prose.intervals["speed_vs_plain"]
    lines = text.splitlines()
    table = next(i for i, line in enumerate(lines) if "prompt: prose" in line)
    at = next(i for i in range(table, len(lines)) if "draft-4" in lines[i])
    # The median on the row's line, its interval on the line under it.
    assert times(prose.speed_vs_plain) in lines[at]
    assert span(found.low, found.high, times) in lines[at + 1]
    assert "bootstrap 95% interval" in text and "not resolved" in text


def test_schema_7_summaries_read_without_intervals(tmp_path: Path) -> None:
    old = make_summary().model_dump(mode="json", exclude={"rows": {0: {
        "speed_vs_plain", "cpu_vs_plain", "intervals"}}})
    old["schema_version"] = 7
    assert migrate(json.loads(json.dumps(old)))["schema_version"] == 12
    path = tmp_path / "summary-old.json"
    path.write_text(json.dumps(old))
    summary = load(path)
    assert all(r.intervals == {} and r.speed_vs_plain is None for r in summary.rows)
    row = dict(old["rows"][0], intervals={"tokens_per_s": {"low": 3.0, "high": 2.0, "n": 3}})
    with pytest.raises(ValueError, match="above high"):
        SummaryRow(**row)
