"""The disturbance calibration (bench/disturbance_bench.py): what its record concludes from
its measurements, and the section itself at a tiny size on the real test model with a real
hog (the full calibration is for a quiet machine: `python -m bench.run --only disturbance`).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench import disturbance_bench
from bench.common import Context
from phase.campaign.disturbance import LoadProbe


def test_the_record_derives_the_floor_and_the_load_threshold() -> None:
    quiet = [100.0, 98.0, 102.0, 90.0]
    by_duty: dict[float, list[dict[str, float | None]]] = {
        0.05: [{"tokens_per_s": 97.0, "foreign_load": 0.03}] * 3,
        0.25: [{"tokens_per_s": 60.0, "foreign_load": 0.12}] * 3,
        1.0: [{"tokens_per_s": 30.0, "foreign_load": 0.48}] * 3,
    }
    record = disturbance_bench.calibrate(quiet, by_duty)
    # The slowest quiet repeat, 90, against the others' median, 100.
    assert record["noise_floor"] == pytest.approx(0.9)
    assert record["suggested_slow_vs_condition"] == pytest.approx(0.85)
    slowdowns = {r["duty"]: r["slowdown"] for r in record["slowdown_by_duty"]}
    assert slowdowns[0.25] == pytest.approx(60.0 / 99.0)
    # 5% duty is within the quiet noise; 25% is not, and reads as 12% load.
    assert record["suggested_disturbed_load"] == pytest.approx(0.12)
    assert disturbance_bench.noise_floor([1.0, 2.0]) is None


# serial: it keeps a core busy, which another worker's timed test would feel.
@pytest.mark.serial
def test_the_hog_keeps_its_duty_of_one_core() -> None:
    probe = LoadProbe()
    if probe.reason is not None:
        pytest.skip(probe.reason)
    hog = disturbance_bench.start_hog(1.0)
    try:
        time.sleep(0.2)
        before = probe.read()
        time.sleep(0.5)
        load, _ = probe.foreign_load(before, probe.read())
    finally:
        disturbance_bench.stop_hog(hog)
    # A whole core's worth of the machine's; whatever else runs here only adds to it.
    assert load is not None and load >= 0.8 / probe.n_cores


# serial: it loads the whole machine with busy processes, and times a decode.
@pytest.mark.serial
@pytest.mark.model
def test_the_section_runs_at_a_tiny_size(test_model_path: Path, tmp_path: Path) -> None:
    ctx = Context(
        repeats=3, tokens=8, spec_tokens=8, threads=1, n_ctx=512,
        target_name="smollm2-135m", draft_name="smollm2-135m",
        target_path=test_model_path, draft_path=test_model_path, ks=(2,), quick=True,
        native_bin=None, native_problem="not needed", workdir=tmp_path, site_counts=(1,),
        sampler_hz=(20.0,),
    )
    section = disturbance_bench.run(ctx)
    record = section.info["calibration"]
    assert len(record["quiet_tokens_per_s"]) == 3 and record["noise_floor"] is not None
    assert [r["duty"] for r in record["slowdown_by_duty"]] == list(
        disturbance_bench.QUICK_DUTIES)
    assert [r.item for r in section.rows] == [
        f"plain decode, hog at {d:.0%} of one core" for d in disturbance_bench.QUICK_DUTIES]
    full = record["slowdown_by_duty"][-1]
    assert all(len(r["tokens_per_s"]) == 3 for r in record["slowdown_by_duty"])
    assert full["foreign_load"] is None or full["foreign_load"] > 0.0
