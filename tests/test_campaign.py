"""Campaigns end to end with the real test model: schedule, crash safety, resume, bad input."""

from __future__ import annotations

import json
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from observers import StopAfter
from short_prompts import SCRIPT as SHORT_SCRIPT
from short_prompts import SPECULATIVE as SHORT
from short_prompts import measure_command

from phase.base.errors import PhaseError
from phase.campaign import (
    DEFAULT_PLAN,
    EXPERIMENTS_DIR,
    Campaign,
    CampaignPlan,
    Destination,
    QuietObserver,
    SensorOptions,
    discover_sensors,
    load_experiment,
    load_prompt,
    prepare,
    schedule,
)
from phase.cli import main
from phase.models.sources import TEST_MODEL
from phase.results import load_raw
from phase.sensors import Discovery, Sensor

pytestmark = pytest.mark.model

# PROFILED: a whole quick campaign as a user runs it, its cost profile included (~40 s of CPU of
# the test model's). SMALL skips the profile: the other tests are about runs, resumes, sensors
# and exits, and the profile's own tests are in test_profile_campaign and test_auto.
# --no-disturbance: --quick judges disturbance, and a shared test machine's background load
# must not change what these tests summarise (tests/test_slowdown.py judges it).
PROFILED = ["--quick", "--no-sensor", "--prompts", "code", "--strategies", "plain,draft-2",
            "--tokens", "8", "--repeats", "2", "--cooldown", "0", "--idle-window", "0",
            "--no-disturbance"]
SMALL = [*PROFILED, "--no-profile"]


def measure(*args: str) -> Result:
    """`phase measure speculative ARGS`, with the short test prompts (tests/short_prompts.py)."""
    return CliRunner().invoke(measure_command(), list(args))


def test_schedule_covers_every_condition_in_a_fresh_order_per_repeat() -> None:
    runs = schedule(["a", "b", "c"], ["plain", "draft-2", "ngram"], 3, seed=7, shuffle=True)
    assert [r.order for r in runs] == list(range(27))
    per_repeat = [[(r.prompt, r.strategy) for r in runs if r.repeat == i] for i in range(3)]
    for block in per_repeat:
        assert sorted(block) == sorted((p, s) for p in "abc" for s in ("plain", "draft-2", "ngram"))
    assert len({tuple(b) for b in per_repeat}) == 3  # three different orders
    assert schedule(["a", "b", "c"], ["plain", "draft-2", "ngram"], 3, 7, True) == runs
    assert schedule(["a", "b", "c"], ["plain", "draft-2", "ngram"], 3, 8, True) != runs


def test_edit_prompt_includes_the_input_file() -> None:
    prompt = load_prompt(EXPERIMENTS_DIR / "prompts" / "edit.txt")
    source = (EXPERIMENTS_DIR / "speculative_edit_input.py").read_text()
    assert source.strip() in prompt.text
    assert "{{include" not in prompt.text


def test_cli_campaign_writes_a_complete_valid_file(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    result = CliRunner().invoke(main, ["measure", "speculative", *PROFILED, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith(str(out))
    results = load_raw(out)
    assert results.status == "complete"
    assert Counter((r.prompt, r.strategy) for r in results.runs) == {
        ("code", "plain"): 2, ("code", "draft-2"): 2}
    assert {m.role for m in results.models} == {"target", "draft"}
    assert results.references[0].prompt == "code"
    assert [p.source for p in results.config.prompts] == ["experiments/prompts/code.txt"]
    for run in results.runs:
        assert run.tokens == 8 and len(run.token_ids) == 8
        assert run.accepted <= run.drafted
        assert run.energy == []  # no sensors: nothing invented
    # The closing table is printed per prompt with the reason energy is missing.
    assert "prompt: code" in result.stderr and "sensors disabled" in result.stderr
    assert any(u.reason for u in results.sensors_unavailable)
    # The time stated before the runs is kept, priced by strategy from the profile, and the
    # closing summary holds the runs against it.
    stated = results.stated_duration
    assert stated is not None and stated.runs == 4 and stated.estimated_s
    assert "draft-k (and a fixed ngram-K) keeping each proposal" in stated.statement
    assert "time: about" in result.stderr
    assert "of the stated" in result.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--strategies", "plain,warp-3"], "unknown strategy 'warp-3'"),
        (["--strategies", "draft-0"], "k must be >= 1"),
        (["--prompts", "code,poetry"], "unknown prompt(s) poetry"),
        (["--tokens", "0"], "--tokens"),
        (["--target", "/nonexistent/model.gguf"], "no such model file"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path, args: list[str], needle: str) -> None:
    out = tmp_path / "never.json"
    result = measure(*SMALL, *args, "-o", str(out))
    assert result.exit_code == 2, result.output
    assert needle in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_missing_meter_file_is_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "never.json"
    with_sensors = [a for a in SMALL if a != "--no-sensor"]
    result = measure(*with_sensors, "--meter", f"{tmp_path}/wall.csv:wall:1.0", "-o", str(out))
    assert result.exit_code == 2, result.output
    assert "--meter" in result.output and "wall.csv" in result.output
    assert not out.exists()


def test_corrupt_model_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\xff" * 64)
    out = tmp_path / "never.json"
    result = measure(*SMALL, "--target", str(bad), "-o", str(out))
    assert result.exit_code == 2, result.output
    assert not out.exists()


def test_missing_directory_and_existing_output_are_refused(tmp_path: Path) -> None:
    result = measure(*SMALL, "-o", str(tmp_path / "no" / "such" / "dir.json"))
    assert result.exit_code == 2 and "does not exist" in result.output
    existing = tmp_path / "taken.json"
    existing.write_text("precious")
    result = measure(*SMALL, "-o", str(existing))
    assert result.exit_code == 2 and "--resume" in result.output
    assert existing.read_text() == "precious"




SPECULATIVE = load_experiment("speculative")
# The same campaign as SMALL, as a plan (typed: a misspelt field is a TypeError).
# The library's twin of the CLI's SMALL (which runs --quick): a smoke test, as it records.
SMALL_PLAN = replace(
    DEFAULT_PLAN, target=TEST_MODEL, draft=TEST_MODEL, prompts=("code",),
    strategies=("plain", "draft-2"), tokens=8, repeats=2, cooldown_s=0.0, idle_window_s=0.0,
    purpose="smoke", profile=False,  # as SMALL
    # As SMALL's --no-disturbance: a shared test machine's background load must not change
    # the run counts.
    disturbed_load=None, max_reruns=0, quiet_check_s=0.5,
)
NO_SENSORS = SensorOptions(use=False)


def _prepare(out: Path, plan: CampaignPlan = SMALL_PLAN, sensors: Discovery | None = None,
             observer: QuietObserver | None = None) -> Campaign:
    discovery = sensors if sensors is not None else discover_sensors(NO_SENSORS)
    return prepare(SHORT, plan, Destination(out), discovery, observer)


def test_quick_plan_and_overrides_are_typed() -> None:
    with pytest.raises(TypeError, match="tokns"):
        replace(SMALL_PLAN, tokns=9)  # type: ignore[call-arg]
    quick = SPECULATIVE.quick
    assert quick is not None and quick.target == TEST_MODEL and quick.tokens < DEFAULT_PLAN.tokens
    assert SPECULATIVE.plan.tokens == DEFAULT_PLAN.tokens  # the one default, not a copy


def test_interrupted_campaign_keeps_runs_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    campaign = _prepare(out, observer=StopAfter(2))
    with pytest.raises(KeyboardInterrupt), campaign:
        campaign.run()
    partial = load_raw(out)
    assert partial.status == "interrupted"
    assert len(partial.runs) == 2
    # The short test prompt, and the file says so (tests/short_prompts.py).
    assert [p.source for p in partial.config.prompts] == ["tests/fixtures/prompts/code.txt"]
    kept = [r.model_dump() for r in partial.runs]

    # A different config is refused, naming what differs, and the file is untouched.
    before = out.read_bytes()
    changed = measure(*[a if a != "8" else "9" for a in SMALL], "--resume", str(out))
    assert changed.exit_code == 2
    assert "config.tokens: 8 → 9" in changed.output
    assert out.read_bytes() == before

    resumed = measure(*SMALL, "--resume", str(out))
    assert resumed.exit_code == 0, resumed.output
    final = load_raw(out)
    assert final.status == "complete"
    assert len(final.runs) == 4
    # The resumed campaign stated the time of the runs it had left.
    assert final.stated_duration is not None and final.stated_duration.runs == 2
    assert [r.model_dump() for r in final.runs[:2]] == kept
    # Once complete, the file is immutable: a further resume is refused.
    again = measure(*SMALL, "--resume", str(out))
    assert again.exit_code != 0
    assert out.read_bytes() == final.model_dump_json(indent=1).encode() + b"\n"


class FixtureSensor(Sensor):
    """A test-only sensor: phase must refuse to record it."""

    backend = "fixture"
    synthetic = True

    def read_value(self) -> float:
        return 1.0


def test_synthetic_sensor_is_never_written(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    fake = FixtureSensor("fake", scope="chip", kind="counter", smoothing_s=0.0, max_power_w=None)
    with pytest.raises(PhaseError, match="synthetic"):
        _prepare(out, sensors=Discovery(sensors=[fake]))
    assert not out.exists()


def test_rapl_fixture_tree_feeds_energy_windows(tmp_path: Path) -> None:
    """The real RAPL backend reading a sysfs-shaped tree whose counter a thread advances."""
    zone = tmp_path / "powercap" / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    counter = zone / "energy_uj"
    counter.write_text("1000000\n")
    stop = threading.Event()

    # Written in place, as the kernel does: the backend keeps the file open and re-reads it.
    def advance_in_place() -> None:
        value = 1_000_000
        while not stop.wait(0.005):
            value += 50_000
            with counter.open("r+") as fh:
                fh.write(f"{value:>15d}\n")

    writer = threading.Thread(target=advance_in_place, daemon=True)
    writer.start()
    try:
        out = tmp_path / "e.json"
        options = SensorOptions(rapl_root=str(tmp_path / "powercap"),
                                hwmon_root=str(tmp_path / "no-hwmon"))
        plan = replace(SMALL_PLAN, idle_window_s=0.2, repeats=1)
        with _prepare(out, plan, discover_sensors(options)) as campaign:
            results = campaign.run()
    finally:
        stop.set()
        writer.join()
    assert [s.scope for s in results.sensors] == ["chip"]
    for run in results.runs:
        (window,) = run.energy
        assert window.energy_j is not None and window.energy_j > 0
        assert window.end_unix_s > window.start_unix_s
    assert json.loads(out.read_text())["runs"][0]["samples"]
    # CPU only (this build offloads nothing): the RAPL package is the chip energy, and why
    p = results.provenance
    assert (p.accelerator, p.n_gpu_layers_offloaded) == ("cpu", 0) and p.n_layers == 31
    assert results.primary_energy is not None and results.primary_energy_reason is None
    assert results.primary_energy.sensors == ["rapl:package-0"]
    assert results.primary_energy.chosen_by == "auto" and results.primary_energy.device == "cpu"
    assert "no layers offloaded" in results.primary_energy.reason
    assert results.sensors[0].encloses == []


def test_energy_sensor_override_is_recorded_and_unknown_names_refused_early(
        tmp_path: Path, sysfs_tree: Callable[..., Path]) -> None:
    powercap = sysfs_tree("powercap")
    options = SensorOptions(rapl_root=str(powercap), hwmon_root=str(tmp_path / "none"),
                            energy_sensors=("rapl:psys",))
    plan = replace(SMALL_PLAN, strategies=("plain",), repeats=1, tokens=4)
    out = tmp_path / "o.json"
    found = discover_sensors(options)
    with prepare(SHORT, plan, Destination(out), found,
                 energy_sensors=options.energy_sensors) as campaign:
        results = campaign.run()
    assert results.primary_energy is not None
    assert results.primary_energy.sensors == ["rapl:psys"]
    assert results.primary_energy.chosen_by == "override"
    assert "rapl:package-0" in results.primary_energy.reason  # what auto would have chosen
    # An unknown name is bad input before any model loads (exit 2, nothing written)
    never = tmp_path / "never.json"
    with_sensors = [a for a in SMALL if a != "--no-sensor"]
    result = measure(*with_sensors, "--rapl-root", str(powercap), "--energy-sensor",
                     "rapl:nope", "-o", str(never))
    assert result.exit_code == 2 and "no sensor named rapl:nope" in result.output
    assert not never.exists()


def test_script_and_phase_measure_are_the_same_command(tmp_path: Path) -> None:
    import subprocess

    out = tmp_path / "script.json"
    proc = subprocess.run(
        [sys.executable, str(EXPERIMENTS_DIR / "speculative.py"), str(out), *SMALL,
         "--strategies", "plain"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    results = load_raw(out)
    assert results.experiment == "speculative" and len(results.runs) == 2


def test_ctrl_c_keeps_runs_prints_the_resume_command_and_exits_130(tmp_path: Path) -> None:
    import json as _json
    import signal
    import subprocess
    import time

    out = tmp_path / "int.json"
    script = SHORT_SCRIPT  # `phase` with the short prompts (tests/short_prompts.py)
    args = [*SMALL, "--tokens", "32", "--repeats", "4", "-o", str(out)]
    # Ctrl-C as a terminal sends it: the child must not inherit an ignored SIGINT (a test run
    # started in the background by a non-interactive shell has SIGINT ignored, and so would
    # every campaign it starts: it then finished all its runs and exited 0).
    proc = subprocess.Popen([sys.executable, str(script), "measure", "speculative", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if _json.loads(out.read_text())["runs"]:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.05)
        assert proc.poll() is None, "the campaign ended before it could be interrupted"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    partial = load_raw(out)
    assert partial.status == "interrupted" and partial.runs
    # The printed command is the one typed, minus the output, resuming the file.
    assert f"continue with: python {script}" in err
    assert f"--resume {out}" in err and f"-o {out}" not in err
    assert "Traceback" not in err
