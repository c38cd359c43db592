"""Validation rules: each rule tripped by a file built here, and left alone just inside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import (
    diverge,
    make_results,
    make_run,
    make_sensor,
    make_summary,
    make_summary_row,
    make_trace,
    make_window,
    replaced,
    write_results,
)

from phase.base.errors import UsageProblem
from phase.results import ResultsFile
from phase.validate import (
    Finding,
    Report,
    RuleSettings,
    validate_file,
    validate_results,
)


def rules(report: Report, rule: str) -> list[Finding]:
    return [f for f in report.findings if f.rule == rule]


def one_run_file(*windows, sensors, samples=()) -> ResultsFile:
    """A campaign of exactly one run (config repeats 1) carrying the given windows."""
    # The run lasts as long as its longest window (rule clocks keeps windows inside runs).
    decode_s = max((w.end_unix_s - w.start_unix_s for w in windows), default=1.0)
    run = make_run(energy=windows, samples=samples, decode_s=max(decode_s, 1.0))
    return make_results([run], sensors=sensors, repeats=1)


CHIP = make_sensor("rapl", scope="chip", kind="counter")
BOARD = make_sensor("ina-in", scope="board", kind="power")


def test_a_clean_campaign_has_no_findings() -> None:
    results = make_results(
        sensors=[CHIP, BOARD, make_sensor("wall", scope="wall", kind="power")],
        prompts=["a", "b"],
        strategies=["plain", "draft-4", "ngram"],
        repeats=3,
    )
    report = validate_results(results, "clean.json")
    assert report.findings == []
    assert not report.has_findings and not report.blocking
    assert report.chip_sensor == "rapl"


# --- schema ---------------------------------------------------------------------------------


def test_nan_smuggled_into_the_json_text_is_a_blocking_schema_finding(tmp_path: Path) -> None:
    path = write_results(make_results(), tmp_path / "r.json")
    text = path.read_text()
    assert text.count('"energy_j": 10.0') == 3
    path.write_text(text.replace('"energy_j": 10.0', '"energy_j": NaN', 1))

    report = validate_file(path)

    assert report.results is None and report.blocking
    [finding] = report.findings
    assert (finding.rule, finding.severity, finding.file) == ("schema", "blocking", str(path))
    assert finding.json_path == "$.runs[0].energy[0].energy_j"
    assert "$.runs[0].energy[0].energy_j" in finding.message


def test_schema_violation_names_the_json_path(tmp_path: Path) -> None:
    data = json.loads(write_results(make_results(), tmp_path / "r.json").read_text())
    data["runs"][1]["tokens_per_s"] = -4.0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))

    [finding] = validate_file(path).findings

    assert finding.severity == "blocking"
    assert finding.json_path == "$.runs[1].tokens_per_s"


@pytest.mark.parametrize(
    ("content", "expected"),
    [(None, "no such file"), ('{"schema_version": 1, "runs": [', "not valid JSON"), ("[]", "$")],
)
def test_unreadable_files_are_blocking(tmp_path: Path, content: str | None, expected: str) -> None:
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    report = validate_file(path)
    assert report.results is None
    [finding] = report.findings
    assert finding.rule == "schema" and finding.severity == "blocking"
    assert expected in finding.message


def test_a_valid_file_on_disk_passes_the_schema(tmp_path: Path) -> None:
    report = validate_file(write_results(make_results(), tmp_path / "r.json"))
    assert report.results is not None
    assert report.findings == []


def test_duplicate_run_ids_and_undeclared_sensors_block() -> None:
    runs = [
        make_run(repeat=0, energy=[make_window("rapl")]),
        make_run(repeat=1, energy=[make_window("ghost")], id="r0-p1-plain"),
    ]
    report = validate_results(make_results(runs, sensors=[CHIP], repeats=2), "r.json")
    paths = {f.json_path for f in rules(report, "schema")}
    assert paths == {"$.runs[1].id", "$.runs[1].energy[0].sensor"}
    assert report.blocking


# --- completeness ---------------------------------------------------------------------------


def test_a_missing_repeat_is_reported_with_the_counts() -> None:
    full = make_results(strategies=["plain", "draft-4"], repeats=3)
    assert rules(validate_results(full, "r.json"), "completeness") == []

    runs = [r for r in full.runs if r.id != "r2-p1-draft-4"]
    report = validate_results(replaced(full, runs=runs), "r.json")

    [finding] = rules(report, "completeness")
    assert (finding.prompt, finding.strategy, finding.severity) == ("p1", "draft-4", "warning")
    assert finding.numbers == {"expected": 3, "found": 2, "missing": 1}
    assert "missing repeat 2" in finding.message


def test_repeats_setting_overrides_the_config() -> None:
    results = make_results(repeats=3)
    assert rules(validate_results(results, "r", RuleSettings(repeats=3)), "completeness") == []
    [finding] = rules(validate_results(results, "r", RuleSettings(repeats=4)), "completeness")
    assert finding.numbers["missing"] == 1


def test_duplicate_repeats_and_running_status() -> None:
    base = make_results(repeats=2)
    runs = [*base.runs, make_run(repeat=1, id="again", order=2)]
    report = validate_results(replaced(base, runs=runs, status="running"), "r.json")
    messages = [f.message for f in rules(report, "completeness")]
    assert len(messages) == 2
    assert any("'running'" in m for m in messages)
    assert any("beyond the 2 configured repeats" in m for m in messages)


# --- variance -------------------------------------------------------------------------------


def spread_campaign(spread: float, sensors=(CHIP,)) -> ResultsFile:
    """Three repeats whose chip energies are 10 - d, 10, 10 + d: (max - min)/mean = spread."""
    d = 10 * spread / 2
    return make_results(
        sensors=sensors, repeats=3, energy=lambda slot, s, w: 10.0 + d * (slot.repeat - 1)
    )


def test_variance_just_over_the_limit_marks_the_condition_unstable() -> None:
    report = validate_results(spread_campaign(0.0501), "r.json")
    [finding] = rules(report, "variance")
    assert finding.severity == "warning" and finding.sensor == "rapl"
    assert finding.numbers["spread"] == pytest.approx(0.0501)
    assert report.unstable_conditions() == {("p1", "plain", ())}


def test_variance_just_inside_the_limit_passes() -> None:
    report = validate_results(spread_campaign(0.0499), "r.json")
    assert rules(report, "variance") == []
    assert report.unstable_conditions() == set()


def test_variance_falls_back_to_tokens_per_s_without_energy() -> None:
    runs = [make_run(repeat=i, decode_s=t) for i, t in enumerate([1.0, 1.03, 1.06])]
    report = validate_results(make_results(runs, sensors=[]), "r.json")
    [finding] = rules(report, "variance")
    assert finding.sensor is None and "tokens/s" in finding.message
    tps = [16 / 1.0, 16 / 1.03, 16 / 1.06]
    assert finding.numbers["spread"] == pytest.approx((max(tps) - min(tps)) / (sum(tps) / 3))

    steady = [make_run(repeat=i, decode_s=t) for i, t in enumerate([1.0, 1.01, 1.02])]
    assert rules(validate_results(make_results(steady, sensors=[]), "r"), "variance") == []


def test_rejected_chip_values_are_left_out_of_the_variance() -> None:
    # Repeat 2 reads 0 J (impossible, rejected); the other two agree, so the condition is stable.
    results = make_results(
        sensors=[CHIP], repeats=3, energy=lambda slot, s, w: 0.0 if slot.repeat == 2 else 10.0
    )
    report = validate_results(results, "r.json")
    assert report.rejection_of("r2-p1-plain", "rapl") is not None
    assert rules(report, "variance") == []


# --- enclosure and the sensor's own bounds ----------------------------------------------------


def test_board_reading_no_more_than_chip_is_rejected() -> None:
    equal = one_run_file(
        make_window("rapl", energy_j=10.0),
        make_window("ina-in", energy_j=10.0),
        sensors=[CHIP, BOARD],
    )
    report = validate_results(equal, "r.json")
    [finding] = rules(report, "enclosure")
    assert (finding.sensor, finding.severity, finding.run_id) == (
        "ina-in",
        "rejected",
        "r0-p1-plain",
    )
    assert finding.numbers["energy_j"] == 10.0 and finding.numbers["enclosed_energy_j"] == 10.0
    assert report.rejection_of("r0-p1-plain", "ina-in") is finding
    assert report.rejection_of("r0-p1-plain", "rapl") is None

    above = one_run_file(
        make_window("rapl", energy_j=10.0),
        make_window("ina-in", energy_j=10.01),
        sensors=[CHIP, BOARD],
    )
    assert validate_results(above, "r.json").findings == []


def test_board_vs_chip_over_different_windows_compares_mean_power() -> None:
    # 12 J over 2 s (6 W) is more energy than the chip's 10 J over 1 s (10 W), yet less power.
    results = one_run_file(
        make_window("rapl", energy_j=10.0, window_s=1.0),
        make_window("ina-in", energy_j=12.0, window_s=2.0),
        sensors=[CHIP, BOARD],
    )
    found = rules(validate_results(results, "r.json"), "enclosure")
    # Beyond lag, with no other run to judge either by: both are rejected (issue 30).
    assert {f.sensor for f in found} == {"ina-in", "rapl"}
    finding = next(f for f in found if f.sensor == "ina-in")
    assert finding.numbers["mean_power_w"] == pytest.approx(6.0)
    assert finding.numbers["enclosed_mean_power_w"] == pytest.approx(10.0)


@pytest.mark.parametrize("energy", [0.0, -3.0])
def test_energy_at_or_below_zero_is_rejected(energy: float) -> None:
    results = one_run_file(make_window("ina-in", energy_j=energy), sensors=[BOARD])
    [finding] = rules(validate_results(results, "r.json"), "impossible")
    assert finding.numbers["energy_j"] == energy
    # 0.1 J over 1 s: the board floor exactly, so neither impossible nor frozen.
    small = one_run_file(make_window("ina-in", energy_j=0.1), sensors=[BOARD])
    assert validate_results(small, "r.json").findings == []


def test_power_above_the_physical_maximum_is_rejected() -> None:
    capped = make_sensor("ina-in", scope="board", kind="power", max_power_w=20.0)
    over = one_run_file(make_window("ina-in", energy_j=20.2, window_s=1.0), sensors=[capped])
    [finding] = rules(validate_results(over, "r.json"), "plausibility")
    assert finding.numbers["implied_power_w"] == pytest.approx(20.2)
    assert finding.numbers["max_power_w"] == 20.0
    assert "declared maximum" in finding.message

    at_max = one_run_file(make_window("ina-in", energy_j=20.0, window_s=1.0), sensors=[capped])
    assert validate_results(at_max, "r.json").findings == []

    # The recorded mean power counts too, even when energy / window looks fine.
    spiky = one_run_file(make_window("ina-in", energy_j=15.0, mean_power_w=25.0), sensors=[capped])
    assert rules(validate_results(spiky, "r.json"), "plausibility")[0].numbers[
        "mean_power_w"] == 25


def test_a_frozen_counter_is_rejected() -> None:
    zero = one_run_file(make_window("rapl", energy_j=0.0), sensors=[CHIP])
    [finding] = rules(validate_results(zero, "r.json"), "impossible")
    assert "did not change" in finding.message

    # Energy says it moved, the raw samples say it never did: the counter is not updating.
    stuck = one_run_file(
        make_window("rapl", energy_j=10.0),
        sensors=[CHIP],
        samples=[make_trace("rapl", [512.0] * 12)],
    )
    [finding] = rules(validate_results(stuck, "r.json"), "frozen")
    assert finding.numbers["samples"] == 12

    moving = one_run_file(
        make_window("rapl", energy_j=10.0),
        sensors=[CHIP],
        samples=[make_trace("rapl", [512.0 + i for i in range(12)])],
    )
    assert validate_results(moving, "r.json").findings == []


# --- equivalence ----------------------------------------------------------------------------


def test_divergent_outputs_are_listed_with_the_index() -> None:
    base = make_results(strategies=["plain", "draft-4"], repeats=2)
    runs = [diverge(r, 7) if r.id == "r1-p1-draft-4" else r for r in base.runs]
    report = validate_results(replaced(base, runs=runs), "r.json")
    [finding] = rules(report, "equivalence")
    assert finding.run_id == "r1-p1-draft-4" and finding.severity == "warning"
    assert finding.category == "unclassified"
    assert finding.numbers == {"first_divergence": 7, "tokens": 16, "near_tie_gap": 0.5}
    assert not report.blocking
    assert rules(validate_results(base, "r.json"), "equivalence") == []


# --- the chip sensor ------------------------------------------------------------------------


def test_chip_sensor_choice_is_deterministic_and_exposed() -> None:
    nvml_power = make_sensor("nvml-power", kind="power", smoothing_s=1.0)
    nvml_energy = make_sensor("nvml-energy")
    rapl = make_sensor("rapl")
    # A counter beats a power reading even when listed later; among counters, file order.
    results = make_results(sensors=[nvml_power, rapl, nvml_energy], decode_s=30.0)
    report = validate_results(results, "r.json")
    assert report.chip_sensor == "rapl"
    assert report.chip_candidates == ["rapl", "nvml-energy", "nvml-power"]
    assert report.to_dict()["chip_sensor"] == "rapl"

    # A chip sensor with no energy in any run loses to one that has some.
    unmeasured = make_results(
        sensors=[rapl, nvml_power],
        decode_s=30.0,
        energy=lambda slot, s, w: None if s.name == "rapl" else 10.0 * w,
    )
    assert validate_results(unmeasured, "r.json").chip_sensor == "nvml-power"

    chosen = validate_results(results, "r.json", RuleSettings(chip_sensor="nvml-energy"))
    assert chosen.chip_sensor == "nvml-energy" and chosen.findings == []
    missing = validate_results(results, "r.json", RuleSettings(chip_sensor="nope"))
    assert missing.chip_sensor == "rapl" and missing.findings[0].severity == "warning"


# --- summary files --------------------------------------------------------------------------


def test_summary_rows_complete_and_unambiguous() -> None:
    full = make_summary([make_summary_row(p, s) for p in ("a", "b") for s in ("plain", "draft-4")])
    assert validate_results(full, "s.json").findings == []

    gap = make_summary(
        [make_summary_row(p, s) for p, s in [("a", "plain"), ("a", "draft-4"), ("b", "plain")]]
    )
    [finding] = validate_results(gap, "s.json").findings
    assert (finding.rule, finding.prompt, finding.strategy) == ("completeness", "b", "draft-4")

    twice = make_summary([make_summary_row("a", "plain"), make_summary_row("a", "plain")])
    report = validate_results(twice, "s.json")
    assert report.blocking and report.findings[0].json_path == "$.rows[1]"


def test_summary_file_on_disk(tmp_path: Path) -> None:
    path = write_results(make_summary(), tmp_path / "s.json")
    report = validate_file(path)
    assert report.results is not None and report.results.kind == "summary"
    assert report.findings == [] and report.chip_sensor is None


# --- the report and its settings ------------------------------------------------------------


def test_report_to_dict_is_json_and_records_settings() -> None:
    settings = RuleSettings(variance_max=0.02)
    report = validate_results(spread_campaign(0.03), "r.json", settings)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["settings"]["variance_max"] == 0.02
    assert data["settings"] == settings.as_dict()
    assert data["counts"] == {"blocking": 0, "rejected": 0, "warning": 1}
    assert data["unstable_conditions"] == [["p1", "plain"]]
    assert data["findings"][0]["rule"] == "variance"


@pytest.mark.parametrize(
    "bad",
    [
        {"variance_max": -0.1},
        {"confound_r": 1.5},
        {"confound_min_runs": 2},
        {"near_tie_gap": -1.0},
        {"lag_window_tolerance_s": float("nan")},
        {"max_power_w": {"chip": 10.0}},
        {"counter_resolution_j": {"rapl": 1e-6}},
        {"repeats": 0},
    ],
)
def test_nonsense_settings_are_a_usage_problem(bad: dict) -> None:
    with pytest.raises(UsageProblem):
        RuleSettings(**bad)
