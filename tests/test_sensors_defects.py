"""Issue 17's defects, one by one, against real files and recorded streams: the RAPL bound
(1), counter edges (3), powermetrics (7), meter traces (8, and issue 13's meter robustness).
Multi-socket/GPU (2), per-GPU errors and MIG (4), NVML smoothing (5) and Jetson rails (6) are
shown on the machine snapshots in test_sensors_replay.py."""

from __future__ import annotations

import itertools
import json
import os
import plistlib
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from manual_clock import ManualClock

from phase.cli import run_cli
from phase.sensors import Sampler, Sensor
from phase.sensors.apple import apple
from phase.sensors.core.clock import SYSTEM_CLOCK, Clock
from phase.sensors.core.edges import EdgePower, read_edge
from phase.sensors.core.energy import Series, WindowSpec, counter_window
from phase.sensors.cpu import rapl
from phase.sensors.meter.meter import MeterSpec, load_meter, parse_meter_spec
from phase.sensors.meter.meter_format import MeterError

# --- 1: the RAPL bound ---------------------------------------------------------------------


def test_rapl_bound_is_the_largest_limit_not_constraint_0_max_power(powercap: Path) -> None:
    zone = powercap / "intel-rapl:0"
    # an i9-13900HX: TDP 55 W in constraint_0_max_power_uw, limits 135/162/315 W
    for i, (limit, maximum) in enumerate(((135, 55), (162, None), (315, None))):
        (zone / f"constraint_{i}_power_limit_uw").write_text(f"{limit * 1_000_000}\n")
        if maximum is not None:
            (zone / f"constraint_{i}_max_power_uw").write_text(f"{maximum * 1_000_000}\n")
        elif (zone / f"constraint_{i}_max_power_uw").exists():
            (zone / f"constraint_{i}_max_power_uw").unlink()
    found = rapl.probe(powercap)
    package = next(s for s in found.sensors if s.name == "rapl:package-0")
    assert package.max_power_w == pytest.approx(315.0)
    assert package.assumed == ["max_power_w"]
    for s in found.sensors:
        s.close()


# --- 3: counters are not exact at window edges ------------------------------------------------


class TickingCounter(Sensor):
    """A counter that updates every `period_s` with the energy of a power profile: idle
    before `step_at` (monotonic s), loaded after. Synthetic: tests only."""

    backend = "fixture"
    synthetic = True

    def __init__(self, period_s: float, idle_w: float, load_w: float,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__("tick", scope="chip", kind="counter", smoothing_s=0.0, max_power_w=None)
        self.period_s, self.idle_w, self.load_w = period_s, idle_w, load_w
        self.clock = clock
        self.origin = clock.monotonic()
        self.step_at = float("inf")

    def energy_at(self, t: float) -> float:
        x = t - self.origin
        step = self.step_at - self.origin
        return self.idle_w * min(x, step) + self.load_w * max(0.0, x - step)

    def read_value(self) -> float:
        now = self.clock.monotonic()
        last_update = self.origin + ((now - self.origin) // self.period_s) * self.period_s
        return self.energy_at(last_update)


# The manual clock makes it exact and instant; the real clock and thread prove the same holds
# where time really passes (and a busy machine delays the reads).
@pytest.mark.parametrize("real", [False, pytest.param(True, marks=pytest.mark.serial)],
                         ids=["manual", "real"])
def test_coarse_counter_window_is_within_its_edge_error_of_the_truth(real: bool) -> None:
    from phase.sensors.core.base import UNIX_OFFSET

    clock: Clock = SYSTEM_CLOCK if real else ManualClock()
    counter = TickingCounter(period_s=0.1, idle_w=70.0, load_w=400.0, clock=clock)
    with Sampler([counter], hz=20.0, probe_s=0.6, slow_probe_s=0.6, clock=clock) as sampler:
        [info] = sampler.sensor_infos()
        assert info.update_period_s == pytest.approx(0.1, abs=0.02)
        win = sampler.begin(idle_s=0.3)
        counter.step_at = clock.monotonic()  # the decode starts: idle -> load
        win.start()
        clock.sleep(0.45)
        win.stop()
        [window], [trace] = win.result()
        idle_start = win.edges.idle_start_unix_s
    truth = (counter.energy_at(window.end_unix_s - UNIX_OFFSET)
             - counter.energy_at(window.start_unix_s - UNIX_OFFSET))
    assert window.edge_error_j is not None and 0 < window.edge_error_j < 0.5 * truth
    assert abs(window.energy_j - truth) <= window.edge_error_j + 1e-6
    # the end edge was followed to the counter's next update: the trace holds a read after it
    assert idle_start + max(trace.t_s) > window.end_unix_s
    # a naive read at the edges misses up to one 100 ms update at 400 W
    naive_floor = truth - 400.0 * 0.1
    assert window.energy_j > naive_floor


def test_edge_estimate_uses_the_nearer_update_and_bounds_the_error() -> None:
    # updates every 0.1 s at 100 W; read at x = 0.25 (value of the 0.2 update), next at 0.3
    t = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3]
    u = [0.0, 0.0, 10.0, 10.0, 20.0, 20.0, 30.0]
    edge = read_edge(t, u, 5, 0.25, 0.1, EdgePower(inside_w=100.0, bound_w=150.0))
    assert edge.error_j is not None
    assert abs(edge.value_j - 25.0) <= edge.error_j  # the true counter at 0.25 s
    assert 20.0 <= edge.value_j <= 30.0


def test_window_shorter_than_the_update_period_on_a_frozen_counter_says_so() -> None:
    spec = WindowSpec(name="c", kind="counter", update_period_s=None)
    frozen = Series([0.0, 0.1, 0.2, 0.3], [5.0, 5.0, 5.0, 5.0])
    energy, reason, error = counter_window(spec, frozen, 0.1, 0.2)
    assert energy is None and "did not change" in (reason or "") and error is None


# --- 7: powermetrics ---------------------------------------------------------------------


def test_powermetrics_runs_unbuffered() -> None:
    import inspect

    source = inspect.getsource(apple._live_powermetrics)
    assert '"-b", "1"' in source and '"-f", "plist"' in source


def test_plists_arriving_in_a_burst_are_stamped_by_their_own_intervals() -> None:
    clock = apple.PlistClock(0.1)
    second = datetime.now(UTC).replace(microsecond=0, tzinfo=None)
    docs = [{"elapsed_ns": 100_000_000, "timestamp": second,
             "processor": {"cpu_power": 1000.0 + k}} for k in range(5)]
    arrived = apple.now()
    stamps = clock.stamp_all(docs, arrived)
    # all five arrived at once (a burst), but each covered its own 100 ms, the last ending now
    assert [round(b - a, 6) for a, b in itertools.pairwise(stamps)] == [0.1] * 4
    assert stamps[-1] == pytest.approx(arrived - 0.05)
    # the next one continues the chain; after a gap in the stream, the arrival wins
    assert clock.stamp(docs[0], arrived + 0.1) == pytest.approx(arrived + 0.05)
    assert clock.stamp(docs[0], arrived + 3.0) == pytest.approx(arrived + 3.0 - 0.05)


def test_powermetrics_sensors_exist_only_for_reported_keys() -> None:
    def source(interval: float) -> tuple[object, object]:
        doc = {"elapsed_ns": 100_000_000, "timestamp": datetime.now(UTC).replace(tzinfo=None),
               "processor": {"cpu_power": 3000.0, "combined_power": 3500.0}}

        def chunks():  # type: ignore[no-untyped-def]
            for _ in range(3):
                time.sleep(0.02)
                yield plistlib.dumps(doc) + b"\0"

        return chunks(), lambda: None

    host = apple.AppleHost(system="Darwin", machine="arm64", zeus=_no_zeus,
                           powermetrics_path="/usr/bin/powermetrics", euid=0,
                           start_powermetrics=source)
    found = apple.probe(host)
    assert sorted(s.name for s in found.sensors) == ["apple:cpu-power", "apple:package-power"]
    assert all(s.self_stamped for s in found.sensors)
    for s in found.sensors:
        s.close()


def _no_zeus() -> object:
    raise ImportError("not installed")


# --- 8: meter traces (and issue 13's meter robustness) ----------------------------------------


def _trace(tmp_path: Path, text: str | bytes, name: str = "m.csv") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_epoch_milliseconds_are_detected_and_said(tmp_path: Path) -> None:
    path = _trace(tmp_path, "timestamp,watts\n1764490000000,5\n1764490000500,6\n")
    data = load_meter(MeterSpec(path, "wall", 1.0))
    assert data.times == [1764490000.0, 1764490000.5]
    assert data.notes and "unix ms" in data.notes[0] and "time=ms" in data.notes[0]
    us = _trace(tmp_path, "timestamp,watts\n1764490000000000,5\n", "us.csv")
    assert load_meter(MeterSpec(us, "wall", 1.0)).times == [1764490000.0]
    named = _trace(tmp_path, "time_ms,watts\n1764490000000,5\n", "named.csv")
    data = load_meter(MeterSpec(named, "wall", 1.0))
    assert data.times == [1764490000.0] and not data.notes  # the header said ms


@pytest.mark.parametrize(("header", "unit", "joules"), [
    ("energy_wh", None, 3600.0), ("Energy (kWh)", None, 3.6e6), ("energy", "Wh", 3600.0),
    ("energy", "kWh", 3.6e6), ("joules", None, 1.0),
])
def test_energy_units_come_from_the_header_or_the_spec(tmp_path: Path, header: str,
                                                       unit: str | None, joules: float) -> None:
    path = _trace(tmp_path, f"timestamp,{header}\n1764490000,1\n1764490001,2\n")
    data = load_meter(MeterSpec(path, "wall", 1.0, unit=unit))
    assert data.kind == "counter" and data.values == [joules, 2 * joules]


def test_a_bare_energy_column_needs_its_unit(tmp_path: Path) -> None:
    path = _trace(tmp_path, "timestamp,energy\n1764490000,1\n")
    with pytest.raises(MeterError, match=r"has no unit.*unit=kWh"):
        load_meter(MeterSpec(path, "wall", 1.0))
    with pytest.raises(MeterError, match="says wh but the meter spec says unit=kWh"):
        load_meter(MeterSpec(_trace(tmp_path, "t,energy_wh\n1764490000,1\n", "x.csv"),
                             "wall", 1.0, unit="kWh"))


def test_clock_offset_and_spec_options(tmp_path: Path) -> None:
    spec = parse_meter_spec(f"{tmp_path}/p.csv:wall:1.0,unit=kWh,offset=-2.5,time=ms")
    assert (spec.unit, spec.offset_s, spec.time_unit) == ("kWh", -2.5, "ms")
    path = _trace(tmp_path, "timestamp,watts\n1764490000,5\n", "p.csv")
    assert load_meter(MeterSpec(path, "wall", 1.0, offset_s=-2.5)).times == [1764489997.5]
    for bad in ("p.csv:wall:1.0,unit=furlongs", "p.csv:wall:1.0,offset=soon",
                "p.csv:wall:1.0,colour=red", "p.csv:wall:1.0,time=fortnights"):
        with pytest.raises(Exception, match="--meter"):
            parse_meter_spec(bad)


@pytest.mark.parametrize(("name", "content", "needle"), [
    ("bad.csv", b"timestamp,watts\n1764490000,\xff\xfe\n", "not UTF-8"),
    ("deep.json", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ("neg.csv", b"timestamp,watts\n1764490000,5\n1764490001,-3\n", "negative"),
    ("nul.csv", b"timestamp,watts\n1764490000,5\x00\n", "is not a number"),
])
def test_broken_traces_are_one_line_errors_with_exit_2(tmp_path: Path, name: str,
                                                       content: bytes, needle: str,
                                                       capsys: pytest.CaptureFixture[str]):
    path = _trace(tmp_path, content, name)
    with pytest.raises(MeterError, match=needle):
        load_meter(MeterSpec(path, "wall", 1.0))
    assert run_cli(["sensors", "--rapl-root", str(tmp_path / "none"), "--hwmon-root",
                    str(tmp_path / "none"), "--meter", f"{path}:wall:1.0"]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "meter.json"
    os.mkfifo(fifo)
    with pytest.raises(MeterError, match="not a regular file"):
        load_meter(MeterSpec(fifo, "wall", 1.0))


def test_meter_json_with_iso_times_still_reads(tmp_path: Path) -> None:
    start = datetime(2026, 11, 30, 9, tzinfo=UTC)
    samples = [{"time": (start + timedelta(seconds=k)).isoformat(), "power_w": 10 + k}
               for k in range(3)]
    path = _trace(tmp_path, json.dumps({"samples": samples}), "iso.json")
    data = load_meter(MeterSpec(path, "board", 0.5))
    assert data.kind == "power" and data.values == [10.0, 11.0, 12.0]
