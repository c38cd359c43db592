"""The results contract: round trips, precise rejections, the JSON Schema, crash safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from factories import (
    make_results,
    make_run,
    make_sensor,
    make_summary,
    make_summary_row,
    make_trace,
    replaced,
    write_results,
)

from phase.results import (
    SCHEMA_VERSION,
    CampaignWriter,
    PrimaryEnergy,
    ResultsError,
    ResultsFile,
    Step,
    json_schema_text,
    load,
    load_raw,
    migrate,
)

REPO = Path(__file__).resolve().parent.parent


def test_round_trip_is_lossless(tmp_path: Path) -> None:
    original = make_results(prompts=["a", "b"], strategies=["plain", "draft-4"], repeats=2)
    path = write_results(original, tmp_path / "r.json")
    again = load_raw(path)
    assert again == original
    assert write_results(again, tmp_path / "r2.json").read_text() == path.read_text()


def _mutated(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    data = json.loads(make_results().model_dump_json())
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    return path


def test_truncated_file_names_file_and_position(tmp_path: Path) -> None:
    good = write_results(make_results(), tmp_path / "ok.json").read_text()
    path = tmp_path / "cut.json"
    path.write_text(good[: len(good) // 2])
    with pytest.raises(ResultsError) as err:
        load(path)
    message = str(err.value)
    assert str(path) in message and "not valid JSON at line" in message


def test_wrong_schema_version_is_named(tmp_path: Path) -> None:
    path = _mutated(tmp_path, lambda d: d.update(schema_version=99))
    with pytest.raises(ResultsError, match=r"\$\.schema_version: 99 is newer"):
        load(path)


def _as_v1(data: dict) -> dict:  # type: ignore[type-arg]
    """A current file's JSON written the way schema version 1 named things."""
    data["schema_version"] = 1
    for run in data.get("runs", []):
        for step in run["trace"]:
            step["draft_ms"] = step.pop("propose_ms")
        for trace in run["samples"]:
            trace["value"] = trace.pop("values")
    for row in data.get("rows", []):
        row["ratio_vs_plain"] = row.pop("energy_ratio_vs_plain")
    return data


def test_version_1_files_read_as_the_current_schema(tmp_path: Path) -> None:
    base = make_results()
    runs = list(base.runs)
    runs[0] = replaced(
        runs[0],
        trace=[Step(proposed=2, accepted=1, propose_ms=0.5, verify_ms=3.0)],
        samples=[make_trace(base.sensors[0].name, [1.0, 1.5])],
    )
    original = replaced(base, runs=runs)
    v1 = _as_v1(json.loads(original.model_dump_json()))
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(v1))
    before = path.read_bytes()
    assert load_raw(path) == original
    assert path.read_bytes() == before  # read, never rewritten
    summary = make_summary(rows=[make_summary_row(energy_ratio_vs_plain=0.8)])
    v1_summary = tmp_path / "v1-summary.json"
    v1_summary.write_text(json.dumps(_as_v1(json.loads(summary.model_dump_json()))))
    assert load(v1_summary) == summary


def test_version_2_files_read_unchanged_as_the_current_version() -> None:
    # A campaign written as version 2 (the H200 device run): each migration moves the number.
    path = REPO / "tests/fixtures/results/h200-campaign-512.json"
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == 2
    loaded = load_raw(path)
    assert loaded.schema_version == SCHEMA_VERSION == 17
    assert not loaded.config.ngram_adaptive  # before version 4, ngram had a fixed length
    dumped = json.loads(loaded.model_dump_json(exclude_unset=True))
    dumped["schema_version"] = 2
    # The one addition, derived by the 8 -> 9 step from the NVML sensor's name.
    assert dumped["primary_energy"].pop("covers") == ["gpu", "gpu-memory", "board"]
    assert dumped == raw


@pytest.mark.parametrize(("sensors", "covers"), [
    ([("ina3221:VDD_GPU_SOC", "jetson-ina3221"), ("ina3221:VDD_CPU_CV", "jetson-ina3221")],
     ["cpu", "gpu", "cv", "soc"]),
    ([("ina3221:VDD_CPU_GPU_CV", "jetson-ina3221")], ["cpu", "gpu", "cv"]),
    ([("rapl:package-0", "rapl"), ("rapl:package-1", "rapl")], ["cpu", "uncore"]),
    ([("nvml:GPU-4f5a2b71:energy", "nvml"), ("rapl:package-0", "rapl")],
     ["cpu", "uncore", "gpu", "gpu-memory", "board"]),
    ([("apple:cpu", "apple")], ["cpu"]),
    ([("meter:wall", "meter")], ["unknown"]),
    ([("ina3221:VDD_CPU_GPU_CV", "jetson-ina3221"), ("ina3221:MYSTERY", "jetson-ina3221")],
     ["unknown"]),
])
def test_version_8_primary_energy_gets_what_it_covers_from_the_sensor_names(
    tmp_path: Path, sensors: list[tuple[str, str]], covers: list[str]
) -> None:
    infos = [make_sensor(n, backend=b) for n, b in sensors]
    results = make_results(sensors=infos, primary_energy=PrimaryEnergy(
        sensors=[n for n, _ in sensors], device="cuda", reason="r", chosen_by="auto"))
    data = json.loads(results.model_dump_json())
    data["schema_version"] = 8
    del data["primary_energy"]["covers"]
    path = tmp_path / "v8.json"
    path.write_text(json.dumps(data))
    loaded = load_raw(path)
    assert loaded.primary_energy is not None and loaded.primary_energy.covers == covers
    # A version 8 file without primary_energy, or with a malformed one, is left to the schema.
    del data["primary_energy"]
    assert "primary_energy" not in migrate(json.loads(json.dumps(data)))
    data["primary_energy"] = {"sensors": "rapl:package-0"}
    with pytest.raises(ResultsError, match="primary_energy"):
        path.write_text(json.dumps(data))
        load_raw(path)


def test_a_version_9_covers_outside_the_vocabulary_is_refused(tmp_path: Path) -> None:
    results = make_results(sensors=[make_sensor("rapl:package-0")], primary_energy=PrimaryEnergy(
        sensors=["rapl:package-0"], device="cpu", reason="r", chosen_by="auto"))
    data = json.loads(results.model_dump_json())
    assert data["primary_energy"]["covers"] == ["unknown"]  # not given: not known
    data["primary_energy"]["covers"] = ["cpu", "npu"]
    path = tmp_path / "v9.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsError, match=r"primary_energy\.covers"):
        load_raw(path)


def test_a_newer_file_is_refused_with_upgrade_advice(tmp_path: Path) -> None:
    path = _mutated(tmp_path, lambda d: d.update(schema_version=SCHEMA_VERSION + 1))
    with pytest.raises(ResultsError, match=r"newer than this phase understands .*upgrade phase"):
        load(path)


# The committed files not of schema version 1, with the version they were written as.
WRITTEN_AS = {"speculative-x86_64-2c-2026-11-30-2.json": 3,
              "memory_bound-x86_64-2c-2026-12-03.json": 11,
              "speculative_sampling-x86_64-2c-2026-12-03.json": 11,
              "speculative_sampling-x86_64-2c-2026-12-03-confirm.json": 12,
              "serving-x86_64-2c-2026-12-06.json": 14,
              "serving-x86_64-2c-2026-12-06-2.json": 14,
              "serving-x86_64-2c-2026-12-07.json": 15,
              "serving-x86_64-2c-2026-12-07-2.json": 15,
              "serving-x86_64-2c-2026-12-07-3.json": 16,
              "serving-x86_64-2c-2026-12-07-3-confirm.json": 16,
              "speculative-x86_64-2c-2026-12-07.json": 15,
              "speculative-x86_64-2c-2026-12-07-confirm.json": 16}


def test_committed_results_files_still_read() -> None:
    files = sorted(p for p in (REPO / "results").glob("*.json") if p.name != "schema.json")
    assert files
    for path in files:
        written = json.loads(path.read_text())["schema_version"]
        # Committed as written: each file keeps the schema version its campaign wrote.
        assert written == WRITTEN_AS.get(path.name, 1), path.name
        assert load(path).schema_version == SCHEMA_VERSION


def test_nan_is_rejected_with_its_path(tmp_path: Path) -> None:
    text = write_results(make_results(), tmp_path / "ok.json").read_text()
    path = tmp_path / "nan.json"
    # Hand-edit the first run's tokens/s into a NaN, as a careless script might.
    path.write_text(text.replace('"tokens_per_s": 16.0', '"tokens_per_s": NaN', 1))
    assert "NaN" in path.read_text()
    with pytest.raises(ResultsError, match="NaN"):
        load(path)


def test_nan_in_python_object_is_rejected() -> None:
    with pytest.raises(ValueError, match="finite"):
        make_run(tokens_per_s=float("nan"))


def test_negative_token_count_is_named(tmp_path: Path) -> None:
    path = _mutated(tmp_path, lambda d: d["runs"][1].update(tokens=-3))
    with pytest.raises(ResultsError, match=r"\$\.runs\[1\]\.tokens: Input should be greater"):
        load(path)


def test_unknown_field_is_named(tmp_path: Path) -> None:
    path = _mutated(tmp_path, lambda d: d["runs"][0].update(joules=1.0))
    with pytest.raises(ResultsError, match=r"\$\.runs\[0\]\.joules: Extra inputs"):
        load(path)


def test_missing_value_needs_a_reason(tmp_path: Path) -> None:
    def drop_reason(d: dict) -> None:  # type: ignore[type-arg]
        d["runs"][0]["energy"][0].update(energy_j=None, energy_reason=None)

    with pytest.raises(ResultsError, match=r"energy is null, so energy_reason must say why"):
        load(_mutated(tmp_path, drop_reason))


def test_committed_json_schema_matches_the_models() -> None:
    committed = (REPO / "results" / "schema.json").read_text()
    assert committed == json_schema_text(), (
        "results/schema.json is stale: run `phase schema --write results/schema.json`"
    )


def test_complete_campaign_is_immutable(tmp_path: Path) -> None:
    path = write_results(make_results(), tmp_path / "done.json")
    before = path.read_bytes()
    with pytest.raises(ResultsError, match=r"immutable|already complete"):
        CampaignWriter.resume(path)
    assert path.read_bytes() == before


WRITER_SCRIPT = textwrap.dedent(
    """
    import os, sys, signal
    sys.path.insert(0, {tests!r})
    from factories import make_results, campaign_runs
    from phase.results import CampaignWriter
    runs = campaign_runs(repeats=5)
    header = make_results(runs=[], status="running", repeats=5)
    writer = CampaignWriter({path!r}, header)
    for i, run in enumerate(runs):
        writer.add_run(run)
        if i == 2:
            print("three-saved", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_finished_runs_survive_a_killed_process(tmp_path: Path) -> None:
    path = tmp_path / "campaign.json"
    script = WRITER_SCRIPT.format(tests=str(REPO / "tests"), path=str(path))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL
    assert "three-saved" in proc.stdout
    results = load_raw(path)
    assert isinstance(results, ResultsFile)
    assert results.status == "running"
    assert [r.repeat for r in results.runs] == [0, 1, 2]
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    # And the interrupted campaign can be continued.
    writer = CampaignWriter.resume(path)
    writer.add_run(replaced(results.runs[0], id="extra", repeat=3))
    writer.finish()
    assert len(load_raw(path).runs) == 4


def test_a_profiled_pass_cannot_compute_more_logits_rows_than_it_has_tokens() -> None:
    from pydantic import ValidationError

    from phase.results import PassCost

    ok = PassCost(tokens=2, logits=0, ms=1.0, block_ms=[1.0], block_passes=[1])
    assert ok.logits == 0
    with pytest.raises(ValidationError, match="logits is 3, more rows than the pass's 2"):
        PassCost(tokens=2, logits=3, ms=1.0, block_ms=[1.0], block_passes=[1])
