"""`phase profile` and the profile a campaign records, with auto among its strategies, on
the real test model (the quick plan: SmolLM2-135M as target and draft)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from short_prompts import measure_command

from phase.cli import main
from phase.results import CostProfile, load_raw
from phase.validate import validate_file

# serial: its auto runs are judged against a profile timed minutes earlier; a neighbour
# test loading the other core in between changes the host's pace.
pytestmark = [pytest.mark.model, pytest.mark.serial]

# --no-disturbance: these tests check the profile's figures and auto's choices, not the
# judging of foreign load (tests/test_profile_disturbance.py does that); judging here only
# re-runs profile blocks when a neighbour test loads the other core, which costs minutes.
QUICK = ["--quick", "--no-sensor", "--prompts", "code", "--tokens", "8", "--repeats", "1",
         "--cooldown", "0", "--idle-window", "0", "--no-disturbance"]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def measure(*args: str) -> Result:
    """`phase measure speculative ARGS`, with the short test prompts (tests/short_prompts.py)."""
    return CliRunner().invoke(measure_command(), list(args))


def test_campaign_records_its_profile_and_auto_decisions(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    result = measure(*QUICK, "--strategies", "plain,ngram,auto", "-o", str(out))
    assert result.exit_code == 0, result.output
    results = load_raw(out)
    profile = results.profile
    assert profile is not None
    [point] = profile.points  # one prompt: one fill, its prompt plus half the tokens
    assert point.prompt == "code"
    assert point.kv_tokens == results.runs[0].prompt_tokens + 4
    assert [c.tokens for c in point.target] == list(range(1, 18))
    assert point.draft and profile.draft_reason is None  # auto may draft: the draft is loaded
    assert profile.energy_reason and "sensors disabled" in profile.energy_reason
    assert results.config.auto_objective == "time"
    [auto] = [r for r in results.runs if r.strategy == "auto"]
    assert auto.k == 16 and auto.matches_plain
    assert all(s.proposer in ("none", "ngram", "draft") for s in auto.trace)
    assert all(s.proposer is None for r in results.runs if r.strategy != "auto"
               for s in r.trace)
    report = validate_file(out)
    assert not report.blocking


def test_no_profile_campaign_and_auto_needs_the_profile(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    result = measure(*QUICK, "--strategies", "plain", "--no-profile", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert load_raw(out).profile is None
    refused = tmp_path / "never.json"
    result = measure(*QUICK, "--strategies", "auto", "--no-profile", "-o", str(refused))
    assert result.exit_code == 2 and "drop --no-profile" in result.output
    assert not refused.exists()


def test_energy_objective_without_a_sensor_is_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "never.json"
    result = measure(*QUICK, "--strategies", "auto", "--objective", "energy", "-o", str(out))
    assert result.exit_code == 2
    assert "--objective energy needs an energy sensor" in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_profile_command_prints_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "profile.json"
    args = ["profile", "speculative", "--quick", "--no-sensor", "--prompts", "code",
            "--tokens", "8", "--blocks", "1", "--min-block", "0", "--no-disturbance",
            "-o", str(out)]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert "target ms" in result.stdout and "n-gram lookup" in result.stdout
    profile = CostProfile.model_validate(json.loads(out.read_text()))
    assert [c.tokens for c in profile.points[0].target] == list(range(1, 18))
    assert profile.blocks == 1 and profile.energy_reason
    # --no-disturbance: no threshold recorded, no block's load read or judged (a judged
    # profile records both thresholds and every block's load: test_profile_disturbance.py).
    assert profile.disturbed_load is None and profile.slow_floor is None
    costs = [c for p in profile.points for c in [*p.target, *p.draft]]
    assert costs and all(not c.block_load and not c.block_disturbed for c in costs)
    again = invoke(*args)
    assert again.exit_code == 2 and "already exists" in again.output


def test_profile_command_bad_input(tmp_path: Path) -> None:
    result = invoke("profile", "speculative", "--quick", "--prompts", "poetry", "--no-sensor")
    assert result.exit_code == 2 and "poetry" in result.output
    result = invoke("profile", "nonexistent-experiment")
    assert result.exit_code == 2 and "unknown experiment" in result.output


@pytest.mark.serial  # joules per ms: the writer thread's pace against the passes' time
def test_energy_per_pass_from_a_counter_and_auto_minimising_energy(tmp_path: Path) -> None:
    """The real RAPL backend on a sysfs-shaped tree whose counter a thread advances at about
    10 W: every profiled block is a sampler window, so each pass gets joules, and auto can
    decide by energy."""
    zone = tmp_path / "powercap" / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    counter = zone / "energy_uj"
    counter.write_text("1000000\n")
    stop = threading.Event()

    def advance_in_place() -> None:  # 50 mJ every 5 ms, written in place as the kernel does
        value = 1_000_000
        while not stop.wait(0.005):
            value += 50_000
            with counter.open("r+") as fh:
                fh.write(f"{value:>15d}\n")

    writer = threading.Thread(target=advance_in_place, daemon=True)
    writer.start()
    try:
        out = tmp_path / "e.json"
        result = measure("--quick", "--rapl-root", str(tmp_path / "powercap"),
                         "--hwmon-root", str(tmp_path / "none"), *QUICK[2:],
                         "--strategies", "plain,auto", "--objective", "energy", "-o", str(out))
    finally:
        stop.set()
        writer.join()
    assert result.exit_code == 0, result.output
    results = load_raw(out)
    profile = results.profile
    assert profile is not None and profile.energy_reason is None
    sensor = results.sensors[0].name
    for cost in profile.points[0].target:
        joules = cost.energy_j[sensor]
        # About 10 mJ per ms of pass; the writer thread's pace on a busy CPU varies.
        assert 1e-3 < joules / cost.ms < 0.1
    assert results.config.auto_objective == "energy"
    [auto] = [r for r in results.runs if r.strategy == "auto"]
    assert auto.matches_plain and all(s.expected_gain is not None for s in auto.trace)
    # The metered profile and auto's decisions from it pass their rules (the runs' short
    # windows are test_validate_campaign.py's subject, not this one's).
    report = validate_file(out)
    assert [(f.rule, f.message) for f in report.findings if f.rule in ("profile", "decisions")
            and f.severity != "warning"] == []
