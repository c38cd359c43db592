"""One bench row model (phase.analysis.bench_rows): bench writes rows with it, the Benchmarks
page reads them back with it, and both judge "noisy" by the same spread and threshold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.common import Section
from bench.report import machine_info, terminal_table, write
from phase.analysis.bench_rows import NOISY, BenchRow
from phase.publish.numbers.bench import load_bench
from phase.publish.pages.bench import machine_line, table_rows

REPO = Path(__file__).resolve().parent.parent
# The keys of a row in a bench results file, in the order bench has always written them.
ROW_KEYS = ["section", "item", "phase", "reference", "reference_name", "unit", "ratio",
            "target", "passed", "detail", "samples", "breakdown", "noise"]


def test_every_committed_bench_file_loads_with_its_written_noise() -> None:
    files = load_bench(REPO / "bench" / "results")
    assert len(files) >= 10
    for results in files:
        raw = json.loads(results.path.read_bytes())
        written = [r for s in raw["sections"] for r in s["rows"]]
        assert [r.noise for r in results.rows] == [r["noise"] for r in written], results.name
        # What bench computes from the samples as written is what it stored beside them.
        for row in written:
            rebuilt = BenchRow(row["section"], row["item"], row["phase"], row["reference"],
                               row["reference_name"], row["unit"], samples=row["samples"])
            assert rebuilt.noise == row["noise"], (results.name, row["item"])


def _section() -> Section:
    section = Section("plain")
    # Counts stay ints in the file; one repeat landed 20% away from the others.
    section.rows.append(BenchRow(
        "plain", "plain tg32", 30.0, 31.0, "llama-bench", "tok/s", 30.0 / 31.0, ">= 0.95x",
        True, "detail", {"phase": [30.0, 36.0, 30.0], "drafted": [98, 98, 98]},
        {"target ms": [1.5, 1.6]}))
    section.rows.append(BenchRow("plain", "quiet", 2.0, None, "none", "s",
                                 samples={"phase": [2.0, 2.05]}))
    return section


def test_a_row_bench_writes_reads_back_the_same(tmp_path: Path) -> None:
    section = _section()
    data = {"created": "2026-12-03T00:00:00+00:00",
            "machine": {"host": "box", "cpu_model": "CPU", "physical_cores": 2,
                        "logical_cpus": 2, "threads_used": 2, "llama_cpp_python": "0.3.36",
                        "native_build": None},
            "config": {"target": "t", "draft": "d", "tokens": 32, "repeats": 3,
                       "quick": True},
            "sections": [section.as_dict()]}
    json_path, _ = write(tmp_path, data, [section])
    row = json.loads(json_path.read_text())["sections"][0]["rows"][0]
    assert list(row) == ROW_KEYS
    assert row["samples"]["drafted"] == [98, 98, 98]  # not rewritten as floats
    assert row["noise"] == (36.0 - 30.0) / 30.0 > NOISY

    (read,) = load_bench(tmp_path)
    first, quiet = read.rows
    assert (first.phase, first.passed, first.n, first.noise) == (30.0, True, 3, row["noise"])
    assert quiet.noise is not None and quiet.noise < NOISY
    # Both ends call the first row a noisy pass and the second one no verdict at all.
    assert "PASS (noisy)" in terminal_table([section])
    verdicts = [cells["cells"][6] for cells in table_rows(read)]
    assert verdicts == ["pass (noisy)", "info"]
    # A second run the same day on the same host is a record of its own: the first stays.
    before = json_path.read_bytes()
    again, again_md = write(tmp_path, data, [section])
    assert (again.name, again_md.name) == (json_path.stem + "-2.json", json_path.stem + "-2.md")
    assert json_path.read_bytes() == before


def test_noise_is_left_as_written() -> None:
    row = BenchRow("s", "i", 1.0, 1.0, "r", "x", samples={"phase": [1.0, 2.0]}, noise=0.05)
    assert row.noise == 0.05
    assert BenchRow("s", "i", 1.0, 1.0, "r", "x", samples={"phase": [1.0, 2.0]}).noise == 2 / 3
    assert BenchRow("s", "i", 1.0, 1.0, "r", "x", samples={"phase": [True, 1.0]}).noise is None


@pytest.mark.parametrize("build, tools, says", [
    (None, None, ["native llama.cpp: not used in this run"]),
    # A run of tool sections only (tg-bandwidth, sampling-native) once said "not used".
    (None, "0.3.36-999c4299a5155a53",
     ["llama.cpp tools built from its sdist: 0.3.36-999c4299a5155a53 (version-source hash)"]),
    ("version: 1 (commit a|b)", "0.3.36-x",
     ["native llama.cpp from its sdist: version: 1 (commit a\\|b)", "tools built from its "
      "sdist: 0.3.36-x"]),
])
def test_the_header_names_the_native_llama_cpp_a_run_used(tmp_path: Path, build: str | None,
                                                          tools: str | None,
                                                          says: list[str]) -> None:
    section = _section()
    machine = {**machine_info(2, build, tools), "host": "box"}
    data = {"created": "2026-12-03T00:00:00+00:00", "machine": machine,
            "config": {"target": "t", "draft": "d", "tokens": 32, "repeats": 3, "quick": True},
            "sections": [section.as_dict()]}
    json_path, md_path = write(tmp_path, data, [section])
    header = md_path.read_text().splitlines()[3]
    assert all(part in header for part in says), header
    assert ("not used" in header) == (build is None and tools is None)
    assert json.loads(json_path.read_text())["machine"]["native_tools"] == tools
    (read,) = load_bench(tmp_path)
    assert (tools is not None) == ("llama.cpp tools" in machine_line(read))

