"""Energy over a window inside a serving run, integrated from the run's sensor samples
(phase.campaign.serving_energy): a counter read at the edges by interpolation, a power
reading integrated by the trapezoid rule, the whole run from the sensors' own windows, and
None (never a guess) where the samples cannot say."""

from __future__ import annotations

import pytest
from factories import make_sensor

from phase.campaign.serving_energy import serving_reading, trace_energy
from phase.results import PrimaryEnergy, SensorTrace, SensorWindow


def _trace(name: str, t: list[float], v: list[float]) -> SensorTrace:
    return SensorTrace(sensor=name, t_s=t, values=v)


def test_a_counter_is_read_at_the_edges_by_interpolation() -> None:
    trace = _trace("pkg", [0.0, 1.0, 2.0, 3.0], [100.0, 110.0, 130.0, 160.0])
    # 0.5 -> 105 J, 2.5 -> 145 J
    assert trace_energy(trace, "J", 0.5, 2.5) == pytest.approx(40.0)


def test_a_power_reading_is_integrated_over_the_window() -> None:
    trace = _trace("gpu", [0.0, 1.0, 2.0], [10.0, 20.0, 20.0])
    # from 0.5 (15 W) to 1 (20 W): 8.75 J; from 1 to 2 at 20 W: 20 J
    assert trace_energy(trace, "W", 0.5, 2.0) == pytest.approx(28.75)


def test_no_reading_outside_the_samples_or_across_a_wrap() -> None:
    trace = _trace("pkg", [1.0, 2.0, 3.0], [10.0, 20.0, 30.0])
    assert trace_energy(trace, "J", 0.5, 2.0) is None  # starts before the first sample
    assert trace_energy(trace, "J", 1.5, 3.5) is None  # ends after the last
    wrapped = _trace("pkg", [0.0, 1.0, 2.0, 3.0], [100.0, 200.0, 5.0, 50.0])
    assert trace_energy(wrapped, "J", 0.5, 2.5) is None
    frozen = _trace("pkg", [0.0, 1.0, 2.0], [7.0, 7.0, 7.0])
    assert trace_energy(frozen, "J", 0.5, 1.5) is None  # not 0 J: the counter never moved


def test_the_reading_sums_the_primary_sensors_on_the_runs_clock() -> None:
    sensors = [make_sensor("a", kind="counter"), make_sensor("b", kind="power")]
    traces = [_trace("a", [0.0, 1.0, 2.0], [0.0, 10.0, 20.0]),
              _trace("b", [0.0, 1.0, 2.0], [4.0, 4.0, 4.0])]
    windows = [SensorWindow(sensor=n, start_unix_s=0.0, end_unix_s=1.0, energy_j=j,
                            mean_power_w=None, idle_power_w=None, idle_power_reason="none",
                            samples=3, gaps=0) for n, j in (("a", 17.0), ("b", 3.0))]
    primary = PrimaryEnergy(sensors=["a", "b"], device="cpu", reason="test",
                            chosen_by="override")
    # the run's clock starts at 100.0, which is t = 0.5 in the traces
    reading = serving_reading(primary, sensors, windows, traces, (100.0, 101.0), 0.5)
    assert reading is not None
    assert reading(100.0, 101.0) == pytest.approx(20.0)  # the sensors' own windows
    assert reading(100.25, 100.75) == pytest.approx(5.0 + 2.0)  # 0.75..1.25 in the traces
    assert reading(100.0, 102.0) is None  # past the samples
    # A sensor whose own window over the run has no energy gives none inside it either.
    none_a = [windows[0].model_copy(update={"energy_j": None, "energy_reason": "frozen"}),
              windows[1]]
    frozen = serving_reading(primary, sensors, none_a, traces, (100.0, 101.0), 0.5)
    assert frozen is not None and frozen(100.25, 100.75) is None
    assert serving_reading(None, sensors, windows, traces, (100.0, 101.0), 0.5) is None
