"""`phase validate`: readable and JSON reports, and the exit codes 0 / 1 / 2 (and --strict)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result
from factories import diverge, make_results, make_run, make_sensor, replaced, write_results

from phase.cli import main
from phase.validate import RuleSettings


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["validate", *args])


def clean_file(tmp_path: Path) -> Path:
    return write_results(make_results(), tmp_path / "clean.json")


def warning_file(tmp_path: Path) -> Path:
    """Publishable, but a run's output diverged from plain at a near-tie (a warning)."""
    base = make_results(strategies=["plain", "draft-4"], repeats=1)
    runs = [base.runs[0], diverge(base.runs[1], 5, gap_verify=0.01, gap_reference=0.02)]
    return write_results(replaced(base, runs=runs), tmp_path / "warn.json")


def rejected_file(tmp_path: Path) -> Path:
    """Publishable, but a lagged sensor's energy is rejected on a short window."""
    board = make_sensor("board-power", scope="board", kind="power", smoothing_s=1.0)
    results = make_results(sensors=[make_sensor("rapl"), board], decode_s=2.0)
    return write_results(results, tmp_path / "lag.json")


def blocking_file(tmp_path: Path) -> Path:
    """Readable, but two runs share an id (raw-data links would be ambiguous)."""
    runs = [make_run(repeat=0), make_run(repeat=1, id="r0-p1-plain")]
    return write_results(make_results(runs, sensors=[], repeats=2), tmp_path / "dup.json")


def unstable_file(tmp_path: Path) -> Path:
    """Chip energy per token spreads 10% across repeats."""
    results = make_results(repeats=3, energy=lambda slot, s, w: 9.5 + 0.5 * slot.repeat)
    return write_results(results, tmp_path / "unstable.json")


def test_clean_file_exits_zero(tmp_path: Path) -> None:
    result = invoke(str(clean_file(tmp_path)))
    assert result.exit_code == 0, result.output
    assert "0 blocking, 0 rejected, 0 warning" in result.stdout
    assert "ok: every rule passed" in result.stdout


def test_warnings_and_rejections_pass_unless_strict(tmp_path: Path) -> None:
    for path in (warning_file(tmp_path), rejected_file(tmp_path)):
        result = invoke(str(path))
        assert result.exit_code == 0, result.output
        assert invoke("--strict", str(path)).exit_code == 1
    assert invoke("--strict", str(clean_file(tmp_path))).exit_code == 0


def test_findings_are_one_line_each_with_their_numbers(tmp_path: Path) -> None:
    out = invoke(str(rejected_file(tmp_path))).stdout
    lines = [line for line in out.splitlines() if "sensor-lag" in line]
    assert len(lines) == 3  # one per repeat
    assert "sensor board-power" in lines[0] and "bias=0.4323" in lines[0]
    assert "3 rejected" in out


def test_blocking_finding_exits_one(tmp_path: Path) -> None:
    result = invoke(str(blocking_file(tmp_path)))
    assert result.exit_code == 1
    assert "$.runs[1].id" in result.stdout and "blocked" in result.stdout


def test_unreadable_files_exit_two(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    result = invoke(str(clean_file(tmp_path)), str(missing))
    assert result.exit_code == 2
    assert "no such file" in result.stdout
    assert "clean.json" in result.stdout  # the readable file is still reported

    nan = clean_file(tmp_path)
    nan.write_text(nan.read_text().replace('"energy_j": 10.0', '"energy_j": Infinity', 1))
    result = invoke(str(nan))
    assert result.exit_code == 2
    assert "$.runs[0].energy[0].energy_j" in result.stdout

    not_json = tmp_path / "half.json"
    not_json.write_text(clean_file(tmp_path).read_text()[:200])
    assert invoke(str(not_json)).exit_code == 2
    # An unreadable file outranks a blocking one.
    assert invoke(str(blocking_file(tmp_path)), str(not_json)).exit_code == 2


def test_json_output_is_one_report_per_file(tmp_path: Path) -> None:
    result = invoke("--json", str(warning_file(tmp_path)), str(tmp_path / "missing.json"))
    assert result.exit_code == 2
    reports = json.loads(result.stdout)
    assert [r["kind"] for r in reports] == ["raw", None]
    assert reports[0]["counts"] == {"blocking": 0, "rejected": 0, "warning": 1}
    [finding] = reports[0]["findings"]
    assert finding["category"] == "near-tie"
    assert finding["numbers"] == {"first_divergence": 5, "tokens": 16, "near_tie_gap": 0.5,
                                  "gap_verify": 0.01, "gap_reference": 0.02}
    assert reports[0]["settings"] == RuleSettings().as_dict()
    assert reports[1]["blocking"] is True


def test_rule_options_change_the_settings(tmp_path: Path) -> None:
    path = str(unstable_file(tmp_path))
    assert invoke("--strict", path).exit_code == 1
    assert invoke("--strict", "--variance-max", "0.2", path).exit_code == 0
    report = json.loads(invoke("--json", "--variance-max", "0.2", "--repeats", "4", path).stdout)
    assert report[0]["settings"]["variance_max"] == 0.2
    assert [f["rule"] for f in report[0]["findings"]] == ["completeness"]

    lag = str(rejected_file(tmp_path))
    assert invoke("--strict", "--lag-bias-max", "0.5", lag).exit_code == 0


def test_bad_settings_and_no_files_are_usage_errors(tmp_path: Path) -> None:
    path = str(clean_file(tmp_path))
    result = invoke("--variance-max", "-1", path)
    assert result.exit_code == 2
    assert "variance_max" in result.output
    assert invoke().exit_code == 2


def test_help_states_the_exit_codes_and_the_defaults() -> None:
    text = invoke("--help").stdout
    assert "2  a file cannot be read" in text
    defaults = RuleSettings()
    for option, value in [
        ("--variance-max", defaults.variance_max),
        ("--lag-bias-max", defaults.lag_bias_max),
        ("--confound-r", defaults.confound_r),
        ("--confound-min-runs", defaults.confound_min_runs),
        ("--near-tie-gap", defaults.near_tie_gap),
    ]:
        assert option in text and f"[{value}]" in text
