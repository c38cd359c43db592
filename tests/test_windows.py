"""Energy windows sized to the sensor (phase.campaign.windows): the window counter-edges and
sensor-lag pass, passes that fill it, and what the validator makes of them.

The campaign test runs the real test model against a RAPL-shaped sysfs tree whose energy
counter another process (tests/counter_writer.py) advances every 100 ms at a known power (an
H200's NVML counter updates that often). That fixture lives here only: `phase measure` never
reads it.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import counter_writer
import pytest
from short_prompts import SPECULATIVE

from phase.analysis import energy_j_per_token, window_s, window_tokens
from phase.campaign import QuietObserver, prepare
from phase.campaign.runner import Destination
from phase.campaign.sensing import SensorOptions, discover_sensors
from phase.campaign.windows import (
    MARGIN,
    WindowSize,
    passes_for,
    plan_windows,
    sensor_need,
    size_window,
    table_lines,
)
from phase.policy.strategies import parse_strategy
from phase.results import SCHEMA_VERSION, Pass, PrimaryEnergy, ResultsFile, load_raw, migrate
from phase.results.schedule import planned_schedule
from phase.sensors import Sampler, discover
from phase.sensors.replay import replay
from phase.validate import validate_results
from phase.validate.rules.counter_edges import least_edge_error, min_window_s
from phase.validate.settings import DEFAULT_SETTINGS, RuleSettings
from tests.factories import make_results, make_run, make_sensor, make_window, replaced

REPO = Path(__file__).resolve().parents[1]
H200_512 = REPO / "tests" / "fixtures" / "results" / "h200-campaign-512.json"
MACHINES = REPO / "tests" / "fixtures" / "sensors" / "machines"

# --- sizing -------------------------------------------------------------------------------


def test_counter_edges_window_is_the_rules_own_bound_turned_around() -> None:
    # 1.5 (edge power margin) x 0.1 s / 5% = 3 s for one uncertain edge, 6 s for two.
    assert min_window_s(0.1, DEFAULT_SETTINGS) == pytest.approx(3.0)
    assert min_window_s(0.1, DEFAULT_SETTINGS, edges=2) == pytest.approx(6.0)
    # A stricter limit in the validator's settings is the one used: nothing restated.
    assert min_window_s(0.1, RuleSettings(lag_bias_max=0.025)) == pytest.approx(6.0)
    nvml = make_sensor("nvml", update_period_s=0.1, backend="nvml")
    assert sensor_need(nvml, aligned=True).window_s == pytest.approx(3.0)
    # A power reading smoothed over 1 s: sensor-lag's ~20 s, whatever its update period.
    smoothed = make_sensor("avg", kind="power", smoothing_s=1.0)
    assert 19.0 < sensor_need(smoothed).window_s < 20.1
    # RAPL's 1 ms counter needs next to nothing: no decode repeats for it.
    assert sensor_need(make_sensor("rapl")).window_s < 0.1


def test_window_is_sized_for_the_primary_sensor_only_and_aligned_to_its_updates() -> None:
    nvml = make_sensor("nvml", update_period_s=0.1, backend="nvml")
    board = make_sensor("board", kind="power", scope="board", smoothing_s=1.0)
    primary = PrimaryEnergy(sensors=["nvml"], device="cuda:0", reason="fixture",
                            chosen_by="auto")
    size = size_window([nvml, board], primary)
    assert size.min_s == pytest.approx(3.0 * MARGIN)
    assert size.align_to == ("nvml",)
    assert "counter-edges 3 s" in size.reason and "board" not in size.reason
    assert size_window([nvml], None).min_s is None
    assert size_window([nvml], primary, enabled=False).min_s is None


def test_passes_fill_the_window() -> None:
    assert passes_for(0.593, 3.3, 64) == 6  # H200, 512 tokens, plain
    assert passes_for(1.6, 3.3, 64) == 3
    assert passes_for(3.5, 3.3, 64) == 1
    assert passes_for(0.01, 3.3, 64) == 64  # capped
    assert passes_for(0.5, None, 64) == 1  # not sized: one pass


def test_h200_campaign_recorded_sensor_and_decodes_size_windows_that_pass() -> None:
    """The H200 512-token campaign (tests/fixtures/results): its NVML counter's measured
    period gives a window above every length counter-edges asked for there."""
    results = load_raw(H200_512)
    size = size_window(results.sensors, results.primary_energy)
    assert size.min_s is not None and 3.2 < size.min_s < 3.4
    report = validate_results(results, results.id)
    needed = [f.numbers["min_window_s"] for f in report.findings if f.rule == "counter-edges"]
    assert len(needed) == 3 and max(needed) < size.min_s  # 3 of 4 rejected at 0.6-1.8 s
    passes = {r.id: passes_for(r.decode_s, size.min_s, 64) for r in results.runs}
    assert {k: v for k, v in passes.items() if "plain" in k} == {
        "r0-code-plain": 6, "r1-code-plain": 6}
    assert {k: v for k, v in passes.items() if "draft" in k} == {
        "r0-code-draft-2": 2, "r1-code-draft-2": 3}


def test_replayed_h200_snapshot_sizes_a_3_s_window() -> None:
    """Discovery on the recorded H200 (a replay: synthetic, never recordable); the sampler
    measures its NVML counter's period afresh from the played-back reads."""
    data = replay.load(MACHINES / "h200-device-run.json")
    machine, roots = replay.machine(data)
    found = discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=machine)
    energy = [s for s in found.sensors if s.name.endswith(":energy")]
    assert len(energy) == 1
    with Sampler(found.sensors, hz=20.0, probe_s=0.6) as sampler:
        infos = sampler.sensor_infos()
    primary = PrimaryEnergy(sensors=[energy[0].name], device="cuda:0", reason="replay",
                            chosen_by="auto")
    size = size_window(infos, primary)
    period = next(i.update_period_s for i in infos if i.name == energy[0].name)
    assert period is not None and 0.09 < period < 0.11
    assert size.min_s is not None and 2.9 * MARGIN < size.min_s < 3.4 * MARGIN
    assert size.align_to == (energy[0].name,)


def test_plan_shows_passes_per_condition() -> None:
    size = WindowSize(3.3, "fixture", ("nvml",))
    strategies = {s: parse_strategy(s) for s in ("plain", "draft-4")}
    planned = plan_windows(size, strategies, {"code": 40}, 48, 64, None, {"code": 0.4})
    by = {(p.prompt, p.strategy): p for p in planned}
    assert by[("code", "plain")].passes == 9 and by[("code", "plain")].window_s == \
        pytest.approx(3.6)
    assert by[("code", "draft-4")].passes is None  # no profile: decided as it runs
    lines = table_lines(size, planned)
    assert any(line.split()[:4] == ["code", "plain", "0.400", "9"] for line in lines)


# --- schema and validation ----------------------------------------------------------------


def _passed(run_passes: int, *, window: float = 4.0, sha: str | None = None) -> ResultsFile:
    runs = []
    for repeat in range(3):
        run = make_run(repeat=repeat, decode_s=1.0,
                       energy=[make_window(window_s=window, energy_j=40.0)])
        passes = [Pass(decode_s=1.0, tokens=run.tokens, output_sha256=run.output_sha256)
                  for _ in range(run_passes)]
        if sha is not None and repeat == 1:
            passes[-1] = Pass(decode_s=1.0, tokens=run.tokens, output_sha256=sha)
        runs.append(replaced(run, passes=passes))
    return make_results(runs)


def test_energy_per_token_counts_every_pass() -> None:
    results = _passed(4)
    run = results.runs[0]
    assert window_tokens(run) == 4 * run.tokens
    assert energy_j_per_token(run, "chip") == pytest.approx(40.0 / (4 * run.tokens))
    report = validate_results(results, results.id)
    assert not [f for f in report.findings if f.rule == "passes"], report.findings


def test_a_pass_with_other_tokens_rejects_the_runs_energy() -> None:
    results = _passed(3, window=3.0, sha="0" * 64)
    found = [f for f in validate_results(results, results.id).findings if f.rule == "passes"]
    assert [(f.severity, f.run_id) for f in found] == [("rejected", "r1-p1-plain")]


def test_passes_longer_than_their_window_are_blocking() -> None:
    results = _passed(4, window=3.0)  # 4 x 1 s of decoding in a 3 s window
    found = [f for f in validate_results(results, results.id).findings if f.rule == "passes"]
    assert found and all(f.severity == "blocking" for f in found)


def test_version_7_files_read_as_one_pass() -> None:
    data = json.loads(make_results().model_dump_json())
    data["schema_version"] = 7
    results = ResultsFile.model_validate(migrate(data))
    assert results.schema_version == SCHEMA_VERSION and all(r.passes == [] for r in results.runs)
    assert results.config.window_min_s is None


# --- a campaign against a counter that updates every 100 ms -------------------------------

POWER_W = 25.0
PERIOD_S = 0.1


@pytest.fixture
def slow_counter(tmp_path: Path) -> Iterator[Path]:
    """A package zone whose energy_uj another process advances every 100 ms at POWER_W
    (tests/counter_writer.py: on time whatever this process's threads are doing)."""
    zone = tmp_path / "powercap" / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    writer = counter_writer.start(zone / "energy_uj", POWER_W, PERIOD_S)
    try:
        yield tmp_path / "powercap"
    finally:
        writer.kill()
        writer.wait()


class Lines(QuietObserver):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


def _quick(out: Path, powercap: Path, *, sized: bool) -> tuple[ResultsFile, list[str]]:
    experiment = SPECULATIVE  # with the short test prompts
    assert experiment.quick is not None
    # The quick plan, on one prompt with plain and draft-4 and 12 tokens (a few minutes
    # become one, and the decodes stay short however busy a shared test host is), no profile
    # (its blocks would stretch to the slow counter), one thread, one repeat (a sized window
    # lasts at least 3 s whatever a run decodes: a second repeat of each strategy was a third
    # of this test's time and showed nothing the first does not).
    # disturbed_load None: as the quick plan was before it judged disturbance (a shared test
    # host's load is not what this test is about).
    plan = replace(experiment.quick, prompts=("code",), strategies=("plain", "draft-4"),
                   tokens=12, repeats=1, profile=False, threads=1, threads_batch=1,
                   quiet_check_s=0.0, size_windows=sized, disturbed_load=None)
    options = SensorOptions(rapl_root=str(powercap), hwmon_root=str(out.parent / "none"))
    observer = Lines()
    with prepare(experiment, plan, Destination(out), discover_sensors(options),
                 observer) as campaign:
        campaign.run()
    return load_raw(out), observer.lines


# serial: the counter-edges rule judges the fixture counter's updates around each window,
# which a core shared with another test's model can delay.
@pytest.mark.model
@pytest.mark.serial
def test_quick_campaign_windows_sized_to_a_100ms_counter_pass(
        tmp_path: Path, slow_counter: Path) -> None:
    fixed, _ = _quick(tmp_path / "fixed.json", slow_counter, sized=False)
    sized, lines = _quick(tmp_path / "sized.json", slow_counter, sized=True)

    (info,) = sized.sensors
    assert info.update_period_s is not None and 0.08 < info.update_period_s < 0.12
    # Today's fixed windows (one decode each) are rejected by counter-edges...
    fixed_report = validate_results(fixed, fixed.id)
    rejected = {f.run_id for f in fixed_report.findings if f.rule == "counter-edges"}
    lengths = {r.id: window_s(r.energy[0]) for r in fixed.runs}
    print(f"fixed windows: {lengths}; rejected by counter-edges: {sorted(rejected)}")
    # (the recorded error depends on where each edge falls between the counter's updates: a
    # 0.3 s window, three updates, passed at 3.4% when both edges landed just before one. So
    # the windows required to fail are those that even the least error their updates allow
    # puts over the limit: plain's, about 0.13 s here, is one of them)
    limit = DEFAULT_SETTINGS.lag_bias_max
    certain = {r.id for r in fixed.runs if (least := least_edge_error(r.energy[0], info))
               is not None and least > limit * (r.energy[0].energy_j or 0.0)}
    assert rejected and rejected >= certain, (lengths, certain)
    assert all(not r.passes for r in fixed.runs)
    # ...the sized ones all pass it (and sensor-lag), every pass recorded with its output.
    report = validate_results(sized, sized.id)
    print("\n".join(lines))
    print({r.id: (len(r.passes), round(window_s(r.energy[0]), 3)) for r in sized.runs})
    bad = [f for f in report.findings if f.severity in ("rejected", "blocking")]
    assert bad == [], bad
    window_min = sized.config.window_min_s
    assert window_min is not None and 3.0 <= window_min <= 3.5
    assert "counter-edges" in (sized.config.window_min_reason or "")
    assert any(line.startswith("energy windows >=") for line in lines)
    assert any(line.split()[:2] == ["code", "plain"] for line in lines)
    # Before the runs, the time they will take, from plain's reference decode and the passes.
    planned = len(planned_schedule(sized.config))
    assert [line for line in lines if line.startswith("time: about ")
            and f" for {planned} runs if each decodes at plain decoding's expected speed" in line]
    for run in sized.runs:
        (w,) = run.energy
        assert len(run.passes) >= 2
        assert window_s(w) >= window_min
        assert {p.output_sha256 for p in run.passes} == {run.output_sha256}
        assert run.passes[0].decode_s == run.decode_s
        # One pass fewer would not have filled the window: no more passes than needed.
        assert sum(p.decode_s for p in run.passes[:-1]) < window_min
        # The fixture's power, read back from the window within 5%; J/token over all passes.
        assert w.energy_j is not None
        assert w.energy_j / window_s(w) == pytest.approx(POWER_W, rel=0.05)
        per_token = energy_j_per_token(run, info.name)
        assert per_token == pytest.approx(POWER_W * window_s(w) / window_tokens(run), rel=0.05)
        assert window_tokens(run) == len(run.passes) * run.tokens
    share = statistics.median(w.edge_error_j / w.energy_j for r in sized.runs
                              for w in r.energy if w.edge_error_j and w.energy_j)
    print(f"median edge error share {share:.2%}")


def test_the_data_page_shows_each_runs_passes() -> None:
    """A run's row on its data page says how many passes its window held, and the runs CSV
    carries them with the window's tokens (energy per token's denominator)."""
    from phase.publish.numbers.downloads import runs_frame
    from phase.publish.pages.raw import RUN_COLUMNS, _run_cells

    results = _passed(4)
    run = results.runs[0]
    cells = dict(zip(RUN_COLUMNS, _run_cells(run), strict=True))
    assert cells["passes"].text == "4" and cells["passes"].title is not None
    assert f"{4 * run.tokens} tokens" in cells["passes"].title
    one = dict(zip(RUN_COLUMNS, _run_cells(replaced(run, passes=[])), strict=True))
    assert one["passes"].text == "1"
    frame = runs_frame(results)
    assert frame["passes"].iloc[0] == 4 and frame["window_tokens"].iloc[0] == 4 * run.tokens
