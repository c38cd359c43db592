"""What the notes show: charts that answer the question (or say why not), per-step costs from
the trace, CSV and JSON of every table with sha256, the changes table's metrics, the
benchmarks page, assumed sensor values, and the 2026-10 note's restored content."""

from __future__ import annotations

import hashlib
import io
import json
import re
import statistics
from pathlib import Path

import pandas as pd
import pytest
from factories import make_sensor, replaced, write_results
from test_publish_inputs import (
    GPU_FILE,
    REPO,
    SEED_SUMMARY,
    gpu_results,
    landed_runs,
    note_results,
    parse_tables,
)

from phase.publish.charts.strategy import KINDS as STRATEGY_KINDS
from phase.publish.data.datasets import load_dataset
from phase.publish.markup.anchors import run_anchor
from phase.publish.numbers.changes import compare
from phase.publish.numbers.provenance import sensor_text
from phase.publish.numbers.steps import step_costs
from phase.validate import RuleSettings

CPU_NOTE = "notes/speculative-decoding-cpu/index.md"
SEED_NOTE = "notes/speculative-decoding/index.md"
ALL_KINDS = (*STRATEGY_KINDS, "energy_vs_speed", "ratio_vs_acceptance", "per_k")


def _docs(built_site, rel: str) -> str:
    return (built_site.paths.docs_dir / rel).read_text(encoding="utf-8")


def _charts(page: str) -> dict[tuple[str, str], str]:
    """(kind, dataset) -> "drawn" or the sentence that explains why it is not."""
    out = {}
    for kind, dataset in re.findall(r'<div class="phase-chart" id="[^"]+" data-kind="([^"]+)" '
                                    r'data-dataset="([^"]+)">', page):
        out[(kind, dataset)] = "drawn"
    for kind, dataset, why in re.findall(
            r'<div class="phase-chart-missing" data-kind="([^"]+)" data-dataset="([^"]+)">\n'
            r"<p><strong>[^<]+</strong> · [^:]+: (Not drawn: [^<]+)</p>", page):
        out[(kind, dataset)] = why
    return out


def test_every_chart_of_every_note_is_drawn_or_explained(built_site) -> None:
    for rel in (CPU_NOTE, SEED_NOTE, "notes/fixture-versions/index.md"):
        page = _docs(built_site, rel)
        datasets = set(re.findall(r'<div class="phase-table" data-dataset="([^"]+)"', page))
        charts = _charts(page)
        # Every kind for every dataset (a note may draw more: the cost model's charts).
        assert {(k, d) for k in ALL_KINDS for d in datasets} <= set(charts), rel


def test_cpu_note_charts_answer_its_question(built_site) -> None:
    (measured,) = note_results("2026-11-speculative-decoding-cpu.md")
    charts = _charts(_docs(built_site, CPU_NOTE))
    for kind in ("cost_per_token", "speed_vs_acceptance", "time_per_token", "step_cost",
                 "per_k"):
        assert charts[(kind, measured)] == "drawn", kind
    assert charts[("energy_vs_speed", measured)].startswith(
        "Not drawn: it needs chip energy, which is missing (")


def test_transcribed_study_draws_what_its_figures_allow(built_site) -> None:
    charts = _charts(_docs(built_site, SEED_NOTE))
    for kind in ("cost_per_token", "speed_vs_acceptance", "energy_vs_speed",
                 "ratio_vs_acceptance", "per_k"):
        assert charts[(kind, SEED_SUMMARY)] == "drawn", kind
    for kind in ("time_per_token", "step_cost"):
        assert "raw runs of this file are not in this repository" in charts[(kind, SEED_SUMMARY)]


def _spec(page: str, kind: str, dataset: str) -> dict:
    at = page.index(f'data-kind="{kind}" data-dataset="{dataset}"')
    text = page[at:].split('<script type="application/json" class="phase-chart-spec">', 1)[1]
    return json.loads(text.split("</script>", 1)[0])


def _values(spec: dict) -> list[dict]:
    """Every inline data record of a (possibly layered, concatenated, faceted) spec."""
    out = []
    if isinstance(spec, dict):
        if isinstance(spec.get("data"), dict) and "values" in spec["data"]:
            out += spec["data"]["values"]
        for value in spec.values():
            out += _values(value)
    elif isinstance(spec, list):
        for item in spec:
            out += _values(item)
    return out


def test_cost_chart_shows_each_conditions_median_and_interval(built_site) -> None:
    from phase.results import load

    (measured,) = note_results("2026-11-speculative-decoding-cpu.md")
    raw = load(REPO / "results" / measured)
    records = {(r["prompt"], r["strategy"]): r
               for r in _values(_spec(_docs(built_site, CPU_NOTE), "cost_per_token", measured))}
    assert len(records) == len({(r.prompt, r.strategy) for r in raw.runs})
    for (prompt, strategy), r in records.items():
        cpu = [run.cpu_s / run.tokens * 1000 for run in raw.runs
               if (run.prompt, run.strategy) == (prompt, strategy)]
        assert r["cpu"] == pytest.approx(statistics.median(cpu), rel=1e-5)  # 6 digits
        # Whiskers: the median's order-statistic 95% interval, within the runs' range, from
        # six runs; none with fewer.
        if len(cpu) >= 6:
            # The spec keeps 6 significant digits, so an end may round past its run.
            low, high = min(cpu) * (1 - 1e-5), max(cpu) * (1 + 1e-5)
            assert low <= r["cpu_low"] <= r["cpu"] <= r["cpu_high"] <= high
        else:
            assert r.get("cpu_low") is None and r.get("cpu_high") is None  # null: left out
        assert r["n"] == len(cpu)


def test_step_costs_add_up_to_the_runs_decode_time() -> None:
    from phase.results import load

    (measured,) = note_results("2026-11-speculative-decoding-cpu.md")
    path = REPO / "results" / measured
    _, ds = load_dataset(path, RuleSettings())
    assert ds is not None
    raw = load(path)
    costs = {(c.prompt, c.strategy): c for c in step_costs(ds)}
    assert len(costs) == len({(r.prompt, r.strategy) for r in raw.runs})
    for (prompt, strategy), c in costs.items():
        runs = [r for r in raw.runs if (r.prompt, r.strategy) == (prompt, strategy)]
        per_token = [sum(s.propose_ms + s.verify_ms for s in r.trace) / r.tokens for r in runs]
        total = c.propose_ms_per_token.mean + c.verify_ms_per_token.mean
        assert total == pytest.approx(statistics.fmean(per_token))
        # The trace's time is the decode window's, less the loop's own bookkeeping.
        decode = statistics.fmean(r.decode_s * 1000 / r.tokens for r in runs)
        assert 0.9 * decode < total <= decode
        proposed = sum(s.proposed for r in runs for s in r.trace)
        if strategy == "plain":
            assert c.propose_ms_per_drafted is None and c.plain_ms_per_token is not None
        elif proposed:
            assert c.propose_ms_per_drafted is not None and c.tokens_per_verify is not None
        else:  # a proposer that found nothing to propose (n-gram on code: no verbatim match)
            assert c.propose_ms_per_drafted is None


def _downloads(text: str) -> list[tuple[str, str, str]]:
    return re.findall(r'<a class="phase-table-download" href="([^"]+)" download '
                      r'data-sha256="([0-9a-f]{64})">(CSV|JSON)</a>', text)


@pytest.mark.parametrize("rel", [CPU_NOTE, SEED_NOTE, "notes/fixture-versions/v2/index.md",
                                 "raw/speculative-fixture-gpu.md", "raw/summary-speculative-7b.md",
                                 "bench/index.md"])
def test_every_table_offers_csv_and_json_with_sha256(built_site, rel: str) -> None:
    docs = built_site.paths.docs_dir
    text = _docs(built_site, rel)
    blocks = re.split(r'(?=<div class="phase-(?:table|findings|runs-table|bench-table)[" ])',
                      text)
    tables = sum(1 for b in blocks[1:] if "<table>" in b.split("</div>", 1)[0])
    found = _downloads(text)
    assert tables and len(found) == 2 * tables, (rel, tables, found)
    for href, sha, fmt in found:
        data = ((docs / rel).parent / href).read_bytes()
        assert hashlib.sha256(data).hexdigest() == sha
        frame = pd.read_csv(io.BytesIO(data)) if fmt == "CSV" else pd.read_json(io.BytesIO(data))
        assert len(frame) > 0, href


def test_results_csv_holds_the_tables_exact_values(built_site) -> None:
    page = _docs(built_site, "notes/fixture-versions/v1/index.md")
    rows = parse_tables(page)[GPU_FILE]
    (csv_href, _, _), (json_href, _, _) = _downloads(
        page.split(f'data-dataset="{GPU_FILE}"', 1)[1])[:2]
    base = built_site.paths.docs_dir / "notes/fixture-versions/v1"
    frame = pd.read_csv(base / csv_href)
    same = pd.read_json(base / json_href)
    assert list(zip(frame["prompt"], frame["strategy"], strict=True)) == list(rows)
    for (_, csv_row), (_, json_row), row in zip(frame.iterrows(), same.iterrows(), rows.values(),
                                                strict=True):
        # data-value keeps 6 significant digits; the downloads, every digit
        assert csv_row["tokens/s"] == pytest.approx(float(row.cells["tokens_per_s"].value),
                                                    rel=1e-5)
        assert json_row["CPU ms/token"] == pytest.approx(float(row.cells["cpu"].value),
                                                         rel=1e-5)
        # The CSV names the very runs the row's one link lands on (listed on the data page).
        assert [run_anchor(i) for i in csv_row["runs"].split()] == landed_runs(
            built_site.paths.docs_dir, base / "index.md", row.links)


def test_runs_csv_lists_every_run_with_its_energy(built_site) -> None:
    frame = pd.read_csv(built_site.paths.docs_dir / "raw/speculative-fixture-gpu-runs.csv")
    results = gpu_results()
    assert list(frame["id"]) == [r.id for r in sorted(results.runs, key=lambda r: r.order)]
    first = min(results.runs, key=lambda r: r.order)
    assert frame.loc[0, "gpu_energy_j"] == pytest.approx(first.energy[0].energy_j)
    assert frame.loc[0, "output_sha256"] == first.output_sha256


def _dataset(tmp_path: Path, results, name: str):
    path = write_results(results, tmp_path / name)
    _, ds = load_dataset(path, RuleSettings())
    assert ds is not None
    return ds


def test_changes_table_covers_every_metric_the_note_reports(tmp_dirs: Path) -> None:
    before = gpu_results()
    slower = replaced(before, runs=[replaced(r, cpu_s=r.cpu_s * 2) if r.strategy == "draft-2"
                                    else r for r in before.runs])
    changes = compare([_dataset(tmp_dirs / "a", before, GPU_FILE)],
                      [_dataset(tmp_dirs / "b", slower, GPU_FILE)])
    changed = {(c.item.split(": ", 1)[1], c.metric) for c in changes}
    assert ("code × draft-2", "CPU ms/token") in changed
    assert ("code × draft-2", "CPU vs plain") in changed
    assert all(metric in ("CPU ms/token", "CPU vs plain") for _, metric in changed)
    row = next(c for c in changes if c.item.endswith("code × draft-2") and
               c.metric == "CPU ms/token")
    assert row.change == "+100.0%"


@pytest.fixture
def tmp_dirs(tmp_path: Path) -> Path:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    return tmp_path


def test_changes_table_sees_speed_and_spread(tmp_dirs: Path) -> None:
    before = gpu_results()
    # Two of plain's three runs on code slower (their steps still fit in their decode, each
    # run ends that much later): a median and the paired ratios move only when most runs do.
    slowed = {r.id for r in before.runs
              if (r.prompt, r.strategy) == ("code", "plain") and r.repeat in (0, 1)}
    slower = replaced(before, runs=[replaced(r, tokens_per_s=r.tokens_per_s / 1.5,
                                             decode_s=r.decode_s * 1.5,
                                             ended_unix_s=r.ended_unix_s + r.decode_s * 0.5)
                                    if r.id in slowed else r for r in before.runs])
    changes = compare([_dataset(tmp_dirs / "a", before, GPU_FILE)],
                      [_dataset(tmp_dirs / "b", slower, GPU_FILE)])
    metrics = {c.metric for c in changes if "code × " in c.item}
    assert {"tokens/s", "speed vs plain", "tokens/s spread"} <= metrics


def test_bench_page_lists_every_row_with_downloads(built_site) -> None:
    page = _docs(built_site, "bench/index.md")
    data = json.loads((REPO / "bench/results/2026-11-30-vm.json").read_text())
    rows = [r for s in data["sections"] for r in s["rows"]]
    section = page.split('data-dataset="2026-11-30-vm.json"', 1)[1].split("</table>", 1)[0]
    assert section.count("<tr id=") == len(rows)
    raw = (REPO / "bench/results/2026-11-30-vm.json").read_bytes()
    assert hashlib.sha256(raw).hexdigest() in page
    assert (built_site.paths.docs_dir / "bench/2026-11-30-vm.json").read_bytes() == raw
    assert "<td>plain tg128</td><td>39.4 tok/s</td><td>39.9 tok/s</td><td>llama-bench</td>" in page


def test_assumed_sensor_values_are_shown_as_assumed() -> None:
    base = make_sensor("board", scope="board", kind="power", smoothing_s=1.0)
    sensor = base.model_copy(update={"assumed": ["smoothing_s", "max_power_w"]})
    text = sensor_text(sensor)
    assert "smoothing 1 s (assumed, not read from the device)" in text
    assert "max power unknown (assumed" in text or "W (assumed" in text
    # Without the field (files from before it existed) nothing is marked.
    assert "assumed" not in sensor_text(base)


def test_seed_note_v2_restores_the_lost_section(built_site) -> None:
    latest = _docs(built_site, SEED_NOTE)
    section = latest.split("## What to take from this", 1)[1].split("\n## ", 1)[0]
    items = re.findall(r"^- \*\*(.+?)\*\*", section, re.M)
    assert len(items) == 4
    assert "per task" in items[2] and "measurement's error" in items[3]
    assert "memory-bound decoding" in latest and "arithmetic" in latest
    # The edit task's input is published next to the page, with its sha256.
    source = (REPO / "experiments/speculative_edit_input.py").read_bytes()
    assert hashlib.sha256(source).hexdigest() in latest
    copy = built_site.paths.docs_dir / "notes/speculative-decoding/v2/sources"
    assert (copy / "speculative_edit_input.py").read_bytes() == source
    # v1 keeps what it said; its erratum says what it lacked.
    v1 = _docs(built_site, "notes/speculative-decoding/v1/index.md")
    assert "## What to take from this" not in v1  # (its erratum, below the page, names it)
    assert "affects v1" in latest and "Version 1&#39;s transcription left out" in latest


def test_seed_note_reproduce_box_runs_the_7b_setup_or_nothing(built_site) -> None:
    page = _docs(built_site, SEED_NOTE)
    box = page.split('class="admonition example phase-reproduce"', 1)[1].split("</div>", 1)[0]
    commands = [line for line in box.split("&#10;") if line and not line.lstrip().startswith("#")]
    assert any("--target PATH/TO/7B-Q4_0.gguf --draft PATH/TO/0.5B.gguf" in c for c in commands)
    assert not any("experiments/speculative.py results/speculative-7b.json" in c
                   for c in commands)
