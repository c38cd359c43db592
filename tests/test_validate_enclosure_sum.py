"""The enclosure-sum rule: an enclosing sensor below the sum of what it encloses.

RAPL psys physically includes every package and DRAM zone; a Jetson module input (VDD_IN)
every rail of its module. A psys at 20 J over a window in which two packages read 12 J each
passes every pairwise enclosure check (20 > 12) and is still broken. Files are factory
campaigns with the sensors named and declared as phase.sensors.cpu.rapl and .jetson declare them.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from factories import make_results, make_sensor, replaced

from phase.results import ResultsFile
from phase.validate import Finding, Report, validate_results
from phase.validate.rules.enclosure_sum import SUM_SHARE, summed

PKG0 = make_sensor("rapl:package-0", scope="chip", kind="counter")
PKG1 = make_sensor("rapl:package-1", scope="chip", kind="counter")
DRAM = make_sensor("rapl:dram", scope="module", kind="counter", encloses=[])
PSYS = make_sensor("rapl:psys", scope="board", kind="counter",
                   encloses=["rapl:package-0", "rapl:package-1", "rapl:dram"])
RAPL = [PKG0, PKG1, DRAM, PSYS]


def _rail(label: str, **kw: object) -> object:
    # As phase.sensors.jetson.jetson declares a rail: power readings, the INA3221's 6.6 ms window.
    return make_sensor(f"ina3221:{label}", backend="jetson-ina3221", kind="power",
                       smoothing_s=0.0066, **kw)


VDD_IN = _rail("VDD_IN", scope="module",
               encloses=["ina3221:VDD_CPU_GPU_CV", "ina3221:VDD_SOC"])
ORIN_NX = [VDD_IN, _rail("VDD_CPU_GPU_CV", scope="chip", encloses=[]),
           _rail("VDD_SOC", scope="module", encloses=[])]


def campaign(sensors: list, watts: Mapping[str, float], repeats: int = 1,
             window_s: float = 1.0) -> ResultsFile:
    return make_results(sensors=sensors, repeats=repeats, decode_s=window_s,
                        energy=lambda slot, s, w: watts[s.name] * w)


def found(results: ResultsFile, *names: str) -> list[Finding]:
    report: Report = validate_results(results, "r.json")
    return [f for f in report.findings if f.rule in names]


@pytest.mark.parametrize(("sensors", "watts", "big", "parts"), [
    (RAPL, {"rapl:psys": 20.0, "rapl:package-0": 12.0, "rapl:package-1": 12.0,
            "rapl:dram": 1.0}, "rapl:psys", ["rapl:package-0", "rapl:package-1", "rapl:dram"]),
    (ORIN_NX, {"ina3221:VDD_IN": 3.0, "ina3221:VDD_CPU_GPU_CV": 2.5, "ina3221:VDD_SOC": 1.5},
     "ina3221:VDD_IN", ["ina3221:VDD_CPU_GPU_CV", "ina3221:VDD_SOC"]),
])
def test_enclosing_reading_below_the_sum_passes_pairwise_but_is_rejected(
    sensors: list, watts: dict[str, float], big: str, parts: list[str]
) -> None:
    results = campaign(sensors, watts)
    assert found(results, "enclosure") == []  # above each enclosed sensor on its own
    sums = found(results, "enclosure-sum")
    # One run: no history says which reading is wrong, so all are rejected, each named.
    assert {f.sensor for f in sums} == {big, *parts}
    run = results.runs[0]
    for f in sums:
        assert f.severity == "rejected" and f.run_id == run.id
        index = [w.sensor for w in run.energy].index(f.sensor)
        assert f.json_path == f"$.runs[0].energy[{index}].energy_j"
        assert all(repr(n) in f.message for n in (big, *parts))
        assert "cannot be decided" in f.message
    psys = next(f for f in sums if f.sensor == big)
    assert psys.numbers["enclosed_sum_j"] == pytest.approx(sum(watts[p] for p in parts))
    assert psys.numbers["deficit_j"] == pytest.approx(
        sum(watts[p] for p in parts) - watts[big])


def test_psys_at_or_above_the_sum_passes() -> None:
    watts = {"rapl:psys": 30.0, "rapl:package-0": 12.0, "rapl:package-1": 12.0,
             "rapl:dram": 3.0}
    assert found(campaign(RAPL, watts, repeats=3), "enclosure", "enclosure-sum") == []


def test_the_tolerance_is_the_stated_share_of_the_sum() -> None:
    # Counters with no edge error and no smoothing: only SUM_SHARE of the 24 J sum remains.
    parts = {"rapl:package-0": 12.0, "rapl:package-1": 12.0, "rapl:dram": 0.0}
    DRAMLESS = [PKG0, PKG1, replaced(PSYS, encloses=["rapl:package-0", "rapl:package-1"])]
    allowed = SUM_SHARE * 24.0
    inside = {**parts, "rapl:psys": 24.0 - 0.9 * allowed}
    beyond = {**parts, "rapl:psys": 24.0 - 1.1 * allowed}
    assert found(campaign(DRAMLESS, inside), "enclosure-sum") == []
    sums = found(campaign(DRAMLESS, beyond), "enclosure-sum")
    assert sums and sums[0].numbers["tolerance_j"] == pytest.approx(allowed)


def test_history_blames_the_one_reading_out_of_line() -> None:
    watts = {"rapl:psys": 30.0, "rapl:package-0": 12.0, "rapl:package-1": 12.0,
             "rapl:dram": 3.0}
    results = campaign(RAPL, watts, repeats=4)
    run = results.runs[2]
    low = replaced(results, runs=[
        replaced(r, energy=[replaced(w, energy_j=20.0 * (w.end_unix_s - w.start_unix_s),
                                     mean_power_w=None) if w.sensor == "rapl:psys" else w
                            for w in r.energy]) if r.id == run.id else r
        for r in results.runs])
    [f] = found(low, "enclosure-sum")
    assert (f.run_id, f.sensor) == (run.id, "rapl:psys")
    assert "'rapl:psys' is the one out of line" in f.message


def test_only_disjoint_sensors_of_the_enclosing_backend_are_summed() -> None:
    wall = make_sensor("meter:wall", scope="wall", kind="power", backend="meter",
                       encloses=["rapl:psys", "rapl:package-0", "rapl:package-1", "rapl:dram"])
    results = campaign([*RAPL, wall], {"rapl:psys": 30.0, "rapl:package-0": 12.0,
                                       "rapl:package-1": 12.0, "rapl:dram": 3.0,
                                       "meter:wall": 31.0})
    # The wall meter's members are another backend's: it is only compared pair by pair.
    assert summed(results) == {"rapl:psys": ["rapl:package-0", "rapl:package-1", "rapl:dram"]}
    nested = replaced(PKG0, encloses=["rapl:package-0/core"])
    core = make_sensor("rapl:package-0/core", scope="chip", kind="counter", encloses=[])
    psys = replaced(PSYS, encloses=[*(PSYS.encloses or []), "rapl:package-0/core"])
    inner = make_results(sensors=[nested, core, PKG1, DRAM, psys], repeats=1)
    # The core is inside package-0: summing both would count it twice.
    assert summed(inner) == {"rapl:psys": ["rapl:package-0", "rapl:package-1", "rapl:dram"]}
    assert found(results, "enclosure-sum") == []
