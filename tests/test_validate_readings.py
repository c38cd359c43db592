"""Issue 30, classes 5-8: energy readings held against their samples, their sensor's declared
update period and wrap, and each other.

5 a chip reading above the board that encloses it: which one is wrong, from the evidence;
6 a counter wrap corrected twice; 7 a window's energy against its own samples; 8 a coarse
counter without a recorded edge error. Files are factory campaigns (a chip counter and a
board meter over realistic windows) altered the way an instrument or a sampler bug would.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from factories import (
    PREFILL_S,
    make_results,
    make_run,
    make_sensor,
    make_window,
    replaced,
)

from phase.results import ResultsFile, Run, SensorTrace, SensorWindow
from phase.validate import Finding, Report, validate_results

CHIP = make_sensor("package-0", scope="chip", kind="counter")  # RAPL: ~1 ms updates
BOARD = make_sensor("wall-meter", scope="board", kind="power")  # a meter: encloses the chip
IDLE_S = 0.5  # the factories' config.idle_window_s
AMD_RANGE_J = 65536.0  # a RAPL counter's max_energy_range on AMD (2^32 units of 15.3 uJ)
DT = 0.05  # a 20 Hz sampler


def check(results: ResultsFile) -> Report:
    return validate_results(results, "r.json")


def rules(report: Report, *names: str) -> list[Finding]:
    return [f for f in report.findings if f.rule in names]


def campaign(window_s: float = 2.0, chip_w: float = 10.0, board_w: float = 15.0,
             repeats: int = 3) -> ResultsFile:
    return make_results(
        sensors=[CHIP, BOARD], strategies=["plain", "draft-4"], repeats=repeats,
        decode_s=window_s,
        energy=lambda slot, s, w: (chip_w if s.name == CHIP.name else board_w) * w)


def with_window(results: ResultsFile, run_id: str, sensor: str,
                change: Callable[[SensorWindow], SensorWindow],
                samples: list[SensorTrace] | None = None) -> ResultsFile:
    def edit(run: Run) -> Run:
        if run.id != run_id:
            return run
        energy = [change(w) if w.sensor == sensor else w for w in run.energy]
        return replaced(run, energy=energy, samples=run.samples if samples is None else samples)
    return replaced(results, runs=[edit(r) for r in results.runs])


def counter_trace(window_s: float, power_w: float, start_j: float, *,
                  wrap_j: float | None = None, idle_w: float = 2.0) -> SensorTrace:
    """A counter read at 20 Hz from the idle window's start: idle, the prefill, the decode
    window (read exactly at both edges), and a second after; it wraps at `wrap_j`."""
    start = IDLE_S + PREFILL_S
    n = round((start + window_s + 1.0) / DT) + 1
    t_s = [k * DT for k in range(n)]
    t_s[round(start / DT)] = start
    t_s[round((start + window_s) / DT)] = start + window_s
    values = []
    for t in t_s:
        joules = start_j + idle_w * min(t, start) + power_w * min(max(t - start, 0.0), window_s)
        values.append(joules % wrap_j if wrap_j else joules)
    return SensorTrace(sensor=CHIP.name, t_s=t_s, values=values)


def power_trace(window_s: float, power_w: float) -> SensorTrace:
    start = IDLE_S + PREFILL_S
    n = round((start + window_s) / DT) + 1
    t_s = [k * DT for k in range(n)]
    t_s[round(start / DT)] = start
    t_s[-1] = start + window_s
    return SensorTrace(sensor=BOARD.name, t_s=t_s,
                       values=[power_w if t >= start else 3.0 for t in t_s])


# --- 5: a chip reading above its board ----------------------------------------------------


def test_a_chip_wrapped_twice_above_a_correct_board_is_the_one_rejected() -> None:
    # 60 s windows: one extra AMD wrap range (65.5 kJ) is 1.1 kW, under the default chip
    # bound, and without samples only the board says it is wrong.
    results = campaign(window_s=60.0)
    run = results.runs[3]
    wrapped = with_window(results, run.id, CHIP.name,
                          lambda w: replaced(w, energy_j=w.energy_j + AMD_RANGE_J,
                                             mean_power_w=None))
    report = check(wrapped)
    [f] = rules(report, "enclosure")
    assert (f.run_id, f.sensor, f.severity) == (run.id, CHIP.name, "rejected")
    assert f.json_path == "$.runs[3].energy[0].energy_j"
    assert "the chip reading is the one out of line" in f.message
    assert report.rejection_of(run.id, BOARD.name) is None
    assert rules(report, "plausibility") == []


def test_a_failing_board_meter_below_a_steady_chip_is_the_one_rejected() -> None:
    results = campaign()
    run = results.runs[4]
    low = with_window(results, run.id, BOARD.name,
                      lambda w: replaced(w, energy_j=w.energy_j / 3, mean_power_w=None))
    report = check(low)
    [f] = rules(report, "enclosure")
    assert (f.run_id, f.sensor) == (run.id, BOARD.name)
    assert "the board reading is the one out of line" in f.message
    assert report.rejection_of(run.id, CHIP.name) is None


def test_without_history_both_readings_are_rejected() -> None:
    results = campaign(repeats=1)
    run = results.runs[0]
    low = with_window(results, run.id, BOARD.name,
                      lambda w: replaced(w, energy_j=w.energy_j / 3, mean_power_w=None))
    found = rules(check(low), "enclosure")
    assert {(f.run_id, f.sensor) for f in found} == {(run.id, CHIP.name), (run.id, BOARD.name)}
    assert all("cannot be decided" in f.message for f in found)


def test_a_board_short_of_the_chip_by_what_its_lag_explains_is_the_one_rejected() -> None:
    # A board meter smoothed over 0.1 s on a 2 s window under-reads up to 5%: equal readings
    # are within that, so the board (the lagged one) is rejected, not the chip.
    lagged = make_sensor("wall-meter", scope="board", kind="power", smoothing_s=0.1)
    results = make_results(sensors=[CHIP, lagged], repeats=3, decode_s=2.0,
                           energy=lambda slot, s, w: 10.0 * w)
    report = check(results)
    found = rules(report, "enclosure")
    assert found and {f.sensor for f in found} == {BOARD.name}
    assert "lag can explain" in found[0].message


# --- 6: a wrap counted twice ----------------------------------------------------------------


def _sampled(window_s: float, energy_j: float, trace: SensorTrace) -> ResultsFile:
    results = campaign(window_s=window_s)
    run = results.runs[2]
    return with_window(results, run.id, CHIP.name,
                       lambda w: replaced(w, energy_j=energy_j, mean_power_w=None),
                       samples=[trace])


def test_a_wrap_the_samples_show_counted_twice_is_rejected_and_the_board_stands() -> None:
    # The counter wraps 30 s into a 60 s window at 10 W.
    trace = counter_trace(60.0, 10.0, AMD_RANGE_J - 300.0 - 2.0 * (IDLE_S + PREFILL_S),
                          wrap_j=AMD_RANGE_J)
    assert any(b < a for a, b in zip(trace.values, trace.values[1:], strict=False))
    honest = _sampled(60.0, 600.0, trace)
    assert rules(check(honest), "samples", "enclosure") == []
    twice = _sampled(60.0, 600.0 + AMD_RANGE_J, trace)
    report = check(twice)
    [f] = rules(report, "samples", "enclosure")
    run = twice.runs[2]
    assert (f.rule, f.run_id, f.sensor) == ("samples", run.id, CHIP.name)
    assert f.json_path == "$.runs[2].energy[0].energy_j" and "more than once" in f.message
    assert f.numbers["wrap_range_j"] == pytest.approx(2 * AMD_RANGE_J, rel=1e-6)
    assert report.rejection_of(run.id, BOARD.name) is None


def test_a_wrap_left_uncorrected_is_rejected() -> None:
    trace = counter_trace(60.0, 10.0, AMD_RANGE_J - 300.0 - 12.0, wrap_j=AMD_RANGE_J)
    raw = trace.values[round(60.6 / DT)] - trace.values[round(0.6 / DT)]
    # The raw difference across the wrap plus a range too small for the values shown.
    [f] = rules(check(_sampled(60.0, raw + 1000.0, trace)), "samples")
    assert "uncorrected" in f.message


def test_a_wrap_corrected_by_another_range_than_the_declared_one_is_rejected() -> None:
    """A correction by a range 20 J off (read from another zone, say) is too small for the
    power bound to see; a file that declares the counter's range (schema 8) refutes it."""
    trace = counter_trace(60.0, 10.0, AMD_RANGE_J - 300.0 - 2.0 * (IDLE_S + PREFILL_S),
                          wrap_j=AMD_RANGE_J)
    off = _sampled(60.0, 620.0, trace)
    assert rules(check(off), "samples") == []  # undeclared: the implied range is plausible
    def declare(results: ResultsFile) -> ResultsFile:
        return replaced(results, sensors=[replaced(s, wrap_j=AMD_RANGE_J)
                                          if s.name == CHIP.name else s
                                          for s in results.sensors])

    assert rules(check(declare(_sampled(60.0, 600.0, trace))), "samples") == []  # honest
    declared = declare(off)
    [f] = rules(check(declared), "samples")
    assert (f.sensor, f.json_path) == (CHIP.name, "$.runs[2].energy[0].energy_j")
    assert "wrap_j" in f.message
    assert f.numbers["declared_wrap_j"] == AMD_RANGE_J
    assert f.numbers["wrap_range_j"] == pytest.approx(AMD_RANGE_J + 20.0, rel=1e-6)


# --- 7: a window's energy against its samples ----------------------------------------------


def test_a_counter_window_its_own_reads_contradict_is_rejected() -> None:
    trace = counter_trace(2.0, 10.0, 5000.0)
    assert rules(check(_sampled(2.0, 20.0, trace)), "samples") == []
    [f] = rules(check(_sampled(2.0, 26.0, trace)), "samples")
    assert (f.sensor, f.json_path) == (CHIP.name, "$.runs[2].energy[0].energy_j")
    assert f.numbers["samples_energy_j"] == pytest.approx(20.0, abs=0.05)


def test_a_power_window_its_own_samples_contradict_is_rejected() -> None:
    results = campaign()
    run = results.runs[1]
    trace = power_trace(2.0, 15.0)
    ok = with_window(results, run.id, BOARD.name, lambda w: w, samples=[trace])
    assert rules(check(ok), "samples") == []
    doubled = with_window(results, run.id, BOARD.name,
                          lambda w: replaced(w, energy_j=60.0, mean_power_w=None),
                          samples=[trace])
    found = rules(check(doubled), "samples")
    assert [(f.sensor, f.json_path) for f in found] == [(BOARD.name,
                                                         "$.runs[1].energy[1].energy_j")]


def test_a_meter_trace_without_edge_reads_bounds_the_mean_power() -> None:
    # A meter on its own clock: samples every 0.3 s that never land on the window's edges.
    results = campaign()
    run = results.runs[1]
    trace = SensorTrace(sensor=BOARD.name, t_s=[0.13 + 0.3 * k for k in range(10)],
                        values=[14.0, 15.0, 16.0, 15.0, 15.5, 14.5, 15.0, 15.2, 14.8, 15.0])
    ok = with_window(results, run.id, BOARD.name, lambda w: w, samples=[trace])
    assert rules(check(ok), "samples") == []
    wrong = with_window(results, run.id, BOARD.name,
                        lambda w: replaced(w, energy_j=w.energy_j * 2, mean_power_w=None),
                        samples=[trace])
    [f] = rules(check(wrong), "samples")
    assert f.sensor == BOARD.name and "outside its power samples' range" in f.message


# --- 8: coarse counters without a recorded edge error ---------------------------------------


def test_a_coarse_counter_without_an_edge_error_is_judged_by_its_declared_period() -> None:
    coarse = make_sensor("gpu0", scope="chip", kind="counter", backend="nvml",
                         update_period_s=0.1)
    run = make_run(decode_s=1.0, energy=[make_window("gpu0", energy_j=30.0)])
    results = make_results([run], sensors=[coarse], repeats=1)
    [f] = rules(check(results), "counter-edges")
    assert (f.sensor, f.run_id) == ("gpu0", run.id)
    assert "declared update period" in f.message and f.json_path == "$.runs[0].energy[0].energy_j"
    # 1.5 x 30 W for 0.1 s: 4.5 J of 30 J.
    assert f.numbers["edge_error_j"] == pytest.approx(4.5)
    # A recorded edge error is the sampler's own estimate and wins; a fast counter passes.
    recorded = replaced(results, runs=[replaced(run, energy=[replaced(
        run.energy[0], edge_error_j=0.3)])])
    assert rules(check(recorded), "counter-edges") == []
    fast = replaced(results, sensors=[replaced(coarse, update_period_s=0.001)])
    assert rules(check(fast), "counter-edges") == []
