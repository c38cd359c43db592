"""The sampler and the window energy computation, on real files: fixture sysfs trees whose
values the test changes while the sampler reads them, a replayed NVML-shaped trace, and a
meter CSV written with real timestamps during a run.

Most tests drive the sampler's time with a ManualClock (tests/manual_clock.py): its sleeps
pass at once and its ticks fire at exact times, so they are fast and do not depend on the
machine's load. The tests marked `real` below run on the real clock and thread as well (the
meter test only there), which is what production uses."""

from __future__ import annotations

import csv
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from manual_clock import ManualClock

from phase.base.errors import PhaseError
from phase.results import SensorInfo
from phase.sensors import (
    Limits,
    MeterSpec,
    MeterTrace,
    Sampler,
    Sensor,
    Series,
    WindowEdges,
    align_post_hoc,
    assert_publishable,
)
from phase.sensors.core.base import UNIX_OFFSET
from phase.sensors.core.clock import SYSTEM_CLOCK, Clock
from phase.sensors.core.energy import WindowSpec, counter_energy, power_energy, window_result
from phase.sensors.cpu import rapl
from phase.sensors.jetson import jetson

FIXTURES = Path(__file__).parent / "fixtures" / "sensors"
QUICK = {"probe_s": 0.05}  # the update-period probe; these tests do not need its answer


class ReplaySensor(Sensor):
    """Replays one column of a recorded trace as a live sensor, from the moment it is made.

    Synthetic: a test fixture that must never reach a results file.
    """

    backend = "replay"
    synthetic = True

    def __init__(self, path: Path, column: str, kind: str, scale: float, offset_s: float,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(f"replay:{column}", scope="chip", kind=kind,  # type: ignore[arg-type]
                         smoothing_s=1.0 if kind == "power" else 0.0, max_power_w=None)
        lines = [ln for ln in path.read_text().splitlines() if not ln.startswith("#")]
        rows = list(csv.DictReader(lines))
        self.t = [float(r["t_s"]) for r in rows]
        self.v = [float(r[column]) * scale for r in rows]
        self.clock = clock
        self.origin = clock.monotonic() - offset_s

    def read_value(self) -> float:
        x = self.clock.monotonic() - self.origin
        k = max(0, int(np.searchsorted(self.t, x, side="right")) - 1)
        return self.v[k]  # a register that holds its value between updates


def set_counter(path: Path, microjoules: int) -> None:
    """Overwrite energy_uj in place, fixed width, so a concurrent pread never sees a torn
    or truncated value (the sensor keeps its file open)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, b"%020d\n" % microjoules, 0)
    finally:
        os.close(fd)


@pytest.fixture(params=["manual"])
def clock(request: pytest.FixtureRequest) -> Clock:
    """The sampler's time: a ManualClock, or (for tests parametrized with REAL_TOO) also the
    real clock, whose sleeps take that long while the sampler's thread ticks."""
    return ManualClock() if request.param == "manual" else SYSTEM_CLOCK


# The real clock and thread as well as the manual one, for the tests that prove the real
# sampler works: a test's sleep then really passes while the thread samples.
# (serial: the thread must get the CPU on time for the counts the asserts expect.)
REAL = pytest.param("real", marks=pytest.mark.serial)
REAL_TOO = pytest.mark.parametrize("clock", ["manual", REAL], indirect=True)


@pytest.fixture
def running(clock: Clock) -> Iterator[Callable[..., Sampler]]:
    """Start samplers on the test's clock and make sure each is closed, even when a test
    fails."""
    made: list[Sampler] = []

    # On the real clock a counter that barely changes is watched for up to 5 s more (the slow
    # probe); these tests do not need that answer, and the manual clock's 5 s take no time.
    real = {"slow_probe_s": QUICK["probe_s"]} if clock is SYSTEM_CLOCK else {}

    def start(sensors: list[Sensor], **kw: float) -> Sampler:
        sampler = Sampler(sensors, **{"hz": 50.0, **QUICK, **real, **kw}, clock=clock)
        made.append(sampler)
        sampler.start()
        return sampler

    yield start
    for s in made:
        s.close()


def psys_zone(powercap: Path, *, wrap_uj: int, max_power_w: float | None = None) -> Sensor:
    zone = powercap / "intel-rapl:1"
    (zone / "max_energy_range_uj").write_text(f"{wrap_uj}\n")
    if max_power_w is not None:
        (zone / "constraint_0_max_power_uw").write_text(f"{int(max_power_w * 1e6)}\n")
    set_counter(zone / "energy_uj", wrap_uj - 500_000)
    return next(s for s in rapl.probe(powercap).sensors if s.name == "rapl:psys")


# --- live sampling of sysfs files ----------------------------------------------------------


@REAL_TOO
def test_rapl_counter_wraps_during_the_window(powercap: Path, running: Callable[..., Sampler],
                                              clock: Clock):
    wrap = 1_000_000_000  # 1000 J
    energy_uj = powercap / "intel-rapl:1" / "energy_uj"
    sampler = running([psys_zone(powercap, wrap_uj=wrap)])
    win = sampler.begin(idle_s=0.05)
    win.start()  # reads wrap - 500_000 exactly here
    for value in (wrap - 200_000, 100_000, 400_000):  # passes the wrap point on the way
        clock.sleep(0.06)
        set_counter(energy_uj, value)
    clock.sleep(0.06)
    win.stop()  # reads 400_000 exactly here
    [window], [trace] = win.result()
    # 0.5 J up to the wrap, 0.4 J after it, read at the edges; the counter only moved when
    # written, so where its energy stood between writes is uncertain by the edge error
    assert window.edge_error_j is not None and window.edge_error_j < 0.9
    assert abs(window.energy_j - 0.9) <= window.edge_error_j + 1e-9
    assert window.mean_power_w == pytest.approx(
        window.energy_j / (window.end_unix_s - window.start_unix_s))
    assert window.gaps == 0
    assert trace.values[-window.samples] == pytest.approx((wrap - 500_000) * 1e-6)
    assert trace.values[-1] == pytest.approx(0.4)  # the raw trace keeps the wrapped values
    # the counter stood still through the idle window: no idle power, and it says why
    assert window.idle_power_w is None and "did not change" in window.idle_power_reason
    if isinstance(clock, ManualClock):
        # ticks at 50 Hz through 0.05 s idle + 0.24 s: the wrap's last value was sampled
        # before the end edge read it, and the window's samples are every tick's plus edges
        assert clock.ticks >= 14 and window.samples >= 12
        assert trace.values.count(pytest.approx(0.1)) >= 2


def test_rapl_wrap_that_could_go_unseen_is_detected(powercap: Path,
                                                    running: Callable[..., Sampler],
                                                    clock: Clock) -> None:
    # 1 J range at 1 kW: the counter can wrap every millisecond, far faster than 50 Hz.
    sampler = running([psys_zone(powercap, wrap_uj=1_000_000, max_power_w=1000.0)])
    win = sampler.begin(idle_s=0.0)
    win.start()
    clock.sleep(0.1)
    win.stop()
    [window], _ = win.result()
    assert window.energy_j is None and window.mean_power_w is None
    assert "wrapped more than once" in window.energy_reason


def test_frozen_counter_has_no_energy_and_no_update_period(powercap: Path,
                                                           running: Callable[..., Sampler],
                                                           clock: Clock):
    zone = next(s for s in rapl.probe(powercap).sensors if s.name == "rapl:package-0")
    sampler = running([zone])
    [info] = sampler.sensor_infos()
    assert info.update_period_s is None and "did not change" in info.update_period_reason
    win = sampler.begin(idle_s=0.05)
    win.start()
    clock.sleep(0.1)
    win.stop()
    [window], _ = win.result()
    assert window.energy_j is None and "did not change" in window.energy_reason
    assert window.samples >= 2  # read, but never moved: a frozen sensor is not a zero


@REAL_TOO
def test_jetson_rails_window_and_idle_power(hwmon: Path, running: Callable[..., Sampler],
                                            clock: Clock):
    sensors = jetson.probe(hwmon).sensors
    sampler = running(sensors)
    win = sampler.begin(idle_s=0.1)
    win.start()
    clock.sleep(0.15)
    win.stop()
    windows, traces = win.result()
    by_name = {w.sensor: w for w in windows}
    expected = {"ina3221:VDD_IN": 6.0, "ina3221:VDD_CPU_GPU_CV": 2.0, "ina3221:VDD_SOC": 1.6}
    for name, watts in expected.items():
        w = by_name[name]
        assert w.mean_power_w == pytest.approx(watts)
        assert w.energy_j == pytest.approx(watts * (w.end_unix_s - w.start_unix_s))
        assert w.idle_power_w == pytest.approx(watts)
        assert w.gaps == 0 and w.samples >= 2
    for trace in traces:
        assert trace.t_s[0] == 0.0 and trace.t_s == sorted(trace.t_s)
        assert trace.values == pytest.approx([expected[trace.sensor]] * len(trace.values))


def test_failed_reads_are_gaps_and_void_the_window(hwmon: Path, running: Callable[..., Sampler],
                                                   clock: Clock):
    vdd_in = next(s for s in jetson.probe(hwmon).sensors if s.name == "ina3221:VDD_IN")
    current = hwmon / "hwmon1" / "curr1_input"
    sampler = running([vdd_in])
    win = sampler.begin(idle_s=0.1)
    win.start()
    current.write_text("EIO\n")  # from here on every read fails to parse
    clock.sleep(0.2)
    win.stop()
    current.write_text("1200\n")
    [window], [trace] = win.result()
    assert window.energy_j is None and window.mean_power_w is None
    assert "reads failed" in window.energy_reason and "not an integer" in window.energy_reason
    assert window.gaps >= 1 and window.gaps > window.samples  # the end edge at least
    assert 0.0 not in trace.values  # a gap is never written down as zero
    assert window.idle_power_w == pytest.approx(6.0)  # the idle window read fine


# --- a replayed NVML-shaped trace ----------------------------------------------------------


def test_replayed_nvml_like_trace(running: Callable[..., Sampler], clock: Clock) -> None:
    trace_file = FIXTURES / "nvml_like_trace.csv"
    # Start 1.2 s in: after the 0.5 s probe the idle window sees 70 W, the decode window
    # the step to 300 W (on the real clock a slow machine shifts the phases; nothing below
    # depends on it).
    energy = ReplaySensor(trace_file, "energy_mj", "counter", 1e-3, offset_s=1.2, clock=clock)
    power = ReplaySensor(trace_file, "power_mw", "power", 1e-3, offset_s=1.2, clock=clock)
    sampler = running([energy, power], probe_s=0.5)
    infos = {i.name: i for i in sampler.sensor_infos()}
    assert infos["replay:energy_mj"].update_period_s is not None  # it changes every 50 ms
    win = sampler.begin(idle_s=0.3)
    win.start()
    clock.sleep(0.4)
    win.stop()
    windows, traces = win.result()
    w_energy, w_power = windows
    _, t_power = traces
    # The replay holds each recorded value for 50 ms, like NVML between its updates: the true
    # energy is the recorded counter interpolated at the edges, and the window's estimate is
    # within its edge error of it (which one 50 ms update at 300 W bounds, per edge).
    def truth_at(unix_s: float) -> float:
        return float(np.interp(unix_s - UNIX_OFFSET - energy.origin, energy.t, energy.v))

    truth = truth_at(w_energy.end_unix_s) - truth_at(w_energy.start_unix_s)
    assert w_energy.edge_error_j is not None and w_energy.edge_error_j <= 2 * 300.0 * 0.05
    assert abs(w_energy.energy_j - truth) <= w_energy.edge_error_j + 1e-6
    span = w_energy.end_unix_s - w_energy.start_unix_s
    step = 300.0 * 0.05  # the most one 50 ms counter update can hold
    assert 70.0 * span - 2 * step <= w_energy.energy_j <= 300.0 * span + 2 * step
    assert 70.0 * span * 0.999 <= w_power.energy_j <= 300.0 * span * 1.001
    replayed = np.loadtxt(trace_file, delimiter=",", comments="#", skiprows=4, usecols=2) * 1e-3
    assert all(np.isclose(replayed, v).any() for v in t_power.values)


def test_synthetic_sensors_are_refused_for_publishing(powercap: Path) -> None:
    replay = ReplaySensor(FIXTURES / "nvml_like_trace.csv", "power_mw", "power", 1e-3, 0.0)
    real = rapl.probe(powercap).sensors
    assert_publishable(real)  # real sensors pass
    with pytest.raises(PhaseError, match=r"replay:power_mw"):
        assert_publishable([*real, replay])
    for s in real:
        s.close()


# --- a meter trace -------------------------------------------------------------------------


@pytest.mark.parametrize("clock", [REAL], indirect=True)  # the meter's rows: real time
def test_meter_csv_written_during_the_run_is_aligned(tmp_path: Path,
                                                     running: Callable[..., Sampler]) -> None:
    path = tmp_path / "wall.csv"
    path.write_text("timestamp,watts\n")
    stop = threading.Event()
    last_row = [0.0]

    def log_meter() -> None:  # a meter logging 100 W every 20 ms with real unix timestamps
        while not stop.is_set():
            with path.open("a") as fh:
                last_row[0] = time.time()
                fh.write(f"{last_row[0]:.6f},100.0\n")
            time.sleep(0.02)

    def wait_for_row_after(t: float) -> None:
        while last_row[0] <= t:
            time.sleep(0.01)

    writer = threading.Thread(target=log_meter)
    writer.start()
    try:
        wait_for_row_after(time.time())  # the file has values before the sampler starts
        sampler = running([MeterTrace(MeterSpec(path, "wall", 0.5))])
        win = sampler.begin(idle_s=0.1)
        # On a loaded machine the writer thread can miss a 0.1 s window altogether (the idle
        # one did, in a full make test); a row inside each window is this test's premise, so
        # wait for one before the idle window ends, and again inside the run's.
        wait_for_row_after(time.time())
        win.start()
        wait_for_row_after(time.time())
        time.sleep(0.1)
        win.stop()
        wait_for_row_after(win.edges.end_unix_s)  # the meter logs past the end of the window
    finally:
        stop.set()
        writer.join()
    [window], [trace] = win.result()
    assert window.sensor == "meter:wall"
    assert window.mean_power_w == pytest.approx(100.0)
    assert window.idle_power_w == pytest.approx(100.0)
    assert window.samples >= 1 and set(trace.values) == {100.0}


def test_recorded_meter_trace_aligned_after_the_run(tmp_path: Path) -> None:
    # The fixture's timestamps (unix s) are used as they are; its empty row is a gap.
    meter = MeterTrace(MeterSpec(FIXTURES / "wall_meter.csv", "wall", 1.0))
    t0 = 1764490000.0
    edges = WindowEdges(idle_start_unix_s=t0 + 0.2, start_unix_s=t0 + 1.3, end_unix_s=t0 + 6.1)
    window, trace = align_post_hoc(meter, edges)
    data = meter.series()
    grid = np.linspace(edges.start_unix_s, edges.end_unix_s, 200_001)
    expected = np.trapezoid(np.interp(grid, data.times, data.values), grid)
    assert window.energy_j == pytest.approx(expected, rel=1e-6)
    assert window.gaps == 1 and window.samples == 9
    idle_grid = np.linspace(edges.idle_start_unix_s, edges.start_unix_s, 200_001)
    idle_j = np.trapezoid(np.interp(idle_grid, data.times, data.values), idle_grid)
    idle_s = edges.start_unix_s - edges.idle_start_unix_s
    assert window.idle_power_w == pytest.approx(idle_j / idle_s, rel=1e-6)
    assert trace.t_s[0] == pytest.approx(0.3)  # first reading after the idle start
    late = align_post_hoc(meter, WindowEdges(t0 + 6.0, t0 + 7.0, t0 + 9.0))[0]
    assert late.energy_j is None and "window end" in late.energy_reason


# --- the sampler's contract ----------------------------------------------------------------


def test_sampler_misuse_is_a_clear_error(hwmon: Path, running: Callable[..., Sampler]) -> None:
    sensors = jetson.probe(hwmon).sensors
    idle = Sampler(sensors, hz=20.0, **QUICK)
    with pytest.raises(PhaseError, match="start"):
        idle.begin(idle_s=0)
    with pytest.raises(PhaseError, match="unique"):
        Sampler([sensors[0], sensors[0]], hz=20.0)
    sampler = running(sensors)
    win = sampler.begin(idle_s=0)
    with pytest.raises(PhaseError, match="still open"):
        sampler.begin(idle_s=0)
    with pytest.raises(PhaseError, match="started and then stopped"):
        win.result()
    win.stop()  # a window that was never started (a failed run) can still be closed
    again = sampler.begin(idle_s=0)
    again.start()
    again.stop()
    assert len(again.result()[0]) == 3


def test_sensor_infos_are_schema_objects(powercap: Path, hwmon: Path,
                                         running: Callable[..., Sampler]) -> None:
    sensors = [*rapl.probe(powercap).sensors, *jetson.probe(hwmon).sensors]
    infos = running(sensors).sensor_infos()
    assert all(isinstance(i, SensorInfo) for i in infos)
    units = {i.name: (i.kind, i.unit) for i in infos}
    assert units["rapl:package-0"] == ("counter", "J")
    assert units["ina3221:VDD_IN"] == ("power", "W")
    assert {i.name: i.smoothing_s for i in infos}["ina3221:VDD_IN"] == pytest.approx(0.009)


# --- the energy arithmetic on its own ------------------------------------------------------


COUNTER = WindowSpec(name="c", kind="counter", wrap_j=10.0, max_power_w=40.0)  # wraps in 0.25 s
POWER = WindowSpec(name="p", kind="power", max_interval_s=0.5)


def test_counter_energy_wraps_once_and_refuses_what_it_cannot_know() -> None:
    s = Series([0.0, 0.1, 0.2, 0.3], [9.0, 9.5, 0.5, 1.0])
    assert counter_energy(COUNTER, s, 0.0, 0.3) == (pytest.approx(2.0), None)
    unwrapped = WindowSpec(name="c", kind="counter", wrap_j=None)
    energy, why = counter_energy(unwrapped, s, 0.0, 0.3)
    assert energy is None and "went backwards" in why
    slow = WindowSpec(name="c", kind="counter", wrap_j=10.0, max_power_w=200.0)  # wraps in 50 ms
    energy, why = counter_energy(slow, s, 0.0, 0.3)
    assert energy is None and "wrapped more than once" in why
    failed_edge = Series([0.1, 0.2, 0.3], [9.5, 0.5, 1.0], gap_times=[0.0], last_error="EIO")
    energy, why = counter_energy(COUNTER, failed_edge, 0.0, 0.3)
    assert energy is None and "window start failed: EIO" in why


def test_power_energy_is_a_trapezoid_and_gaps_have_limits() -> None:
    ramp = Series([0.0, 0.1, 0.2, 0.3, 0.4], [10.0, 20.0, 30.0, 40.0, 50.0])
    assert power_energy(POWER, ramp, 0.05, 0.35) == (pytest.approx(0.3 * 30.0), None)
    holey = Series([0.0, 0.1, 0.4], [10.0, 10.0, 10.0], gap_times=[0.2, 0.3])
    energy, why = power_energy(POWER, holey, 0.0, 0.4, Limits(max_gap_fraction=0.25))
    assert energy is None and "2 of 5 reads failed" in why
    energy, why = power_energy(POWER, holey, 0.0, 0.4, Limits(max_gap_fraction=0.5))
    assert energy == pytest.approx(4.0)  # 3 of 5 read: allowed at a 50% limit
    sparse = Series([0.0, 1.0, 2.0], [5.0, 5.0, 5.0])
    energy, why = power_energy(POWER, sparse, 0.0, 2.0)
    assert energy is None and "no power reading for 1 s" in why


def test_window_without_idle_says_so() -> None:
    s = Series([0.0, 0.1, 0.2], [1.0, 2.0, 3.0])
    window, trace = window_result(COUNTER, s, 0.0, 0.0, 0.2)
    assert window.energy_j == pytest.approx(2.0) and window.idle_power_w is None
    assert "no idle window" in window.idle_power_reason
    assert trace.t_s == [0.0, 0.1, 0.2]


def test_recorded_counter_is_interpolated_at_edges_it_did_not_read() -> None:
    joules = WindowSpec(name="m", kind="counter", max_interval_s=1.5, exact_edges=False)
    s = Series([0.0, 1.0, 2.0, 3.0], [100.0, 110.0, 120.0, 130.0])  # a steady 10 W
    assert counter_energy(joules, s, 0.5, 2.5) == (pytest.approx(20.0), None)
    assert counter_energy(joules, s, 1.2, 1.7) == (pytest.approx(5.0), None)
    energy, why = counter_energy(joules, s, 2.5, 4.0)
    assert energy is None and "no reading at or after the window end" in why
