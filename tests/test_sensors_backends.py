"""Sensor backends against real files: sysfs trees built from tests/fixtures/sensors, meter
traces, and the real NVML/Apple probes of whatever machine runs the tests."""

from __future__ import annotations

import json
import os
import plistlib
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from phase.base.errors import PhaseError, UsageProblem
from phase.sensors import discover, parse_meter_spec
from phase.sensors.apple import apple
from phase.sensors.core.primary import Placement, choose_primary
from phase.sensors.cpu import amd_energy, rapl
from phase.sensors.jetson import jetson
from phase.sensors.meter.meter import MeterSpec, MeterTrace, load_meter
from phase.sensors.nvidia import nvml

FIXTURES = Path(__file__).parent / "fixtures" / "sensors"


# --- RAPL ----------------------------------------------------------------------------------


def test_rapl_finds_package_dram_psys_and_skips_core_and_mmio(powercap: Path) -> None:
    found = rapl.probe(powercap)
    try:
        by_name = {s.name: s for s in found.sensors}
        assert sorted(by_name) == ["rapl:package-0", "rapl:package-0/dram", "rapl:psys"]
        assert [by_name[n].scope for n in sorted(by_name)] == ["chip", "module", "board"]
        package = by_name["rapl:package-0"]
        assert package.kind == "counter" and package.unit == "J"
        assert package.read_value() == pytest.approx(84213.377190)
        assert package.wrap_j == pytest.approx(262143.328850)
        assert package.max_power_w == pytest.approx(125.0)  # the non-zero constraint
        assert by_name["rapl:psys"].max_power_w is None  # declares none
        assert found.problems == []
    finally:
        for s in found.sensors:
            s.close()


def test_rapl_zone_ids_are_hexadecimal_and_ordered_by_value(tmp_path: Path) -> None:
    # Real files laid out as powercap_sys.c names them ("%s:%x"): zone 10 is intel-rapl:a,
    # zone 16 intel-rapl:10, which sorts by name between :1 and :2 but comes after :f.
    for zone_id in range(17):
        zone = tmp_path / f"intel-rapl:{zone_id:x}"
        for path, text in ((zone, f"package-{zone_id}"), (zone / "0", "dram")):
            d = zone if path is zone else tmp_path / f"intel-rapl:{zone_id:x}:0"
            d.mkdir()
            (d / "name").write_text(text + "\n")
            (d / "energy_uj").write_text(f"{1_000_000 * (zone_id + 1)}\n")
    found = rapl.probe(tmp_path)
    try:
        names = [s.name for s in found.sensors]
        packages = [n for n in names if not n.endswith("/dram")]
        assert packages == [f"rapl:package-{i}" for i in range(17)]
        assert "rapl:package-10/dram" in names and len(names) == 34
        by_name = {s.name: s for s in found.sensors}
        assert by_name["rapl:package-10"].read_value() == pytest.approx(11.0)  # intel-rapl:a
        assert found.problems == []
    finally:
        for s in found.sensors:
            s.close()


def _amd_energy_device(hwmon: Path, labels: list[str]) -> Path:
    device = hwmon / "hwmon7"
    device.mkdir(parents=True)
    (device / "name").write_text("amd_energy\n")
    for n, label in enumerate(labels, start=1):
        (device / f"energy{n}_label").write_text(label + "\n")
        (device / f"energy{n}_input").write_text(f"{n * 1_000_000}\n")
    return device


def test_amd_energy_reads_sockets_only_in_socket_order(tmp_path: Path) -> None:
    labels = [f"Ecore{c:03d}" for c in range(12)] + ["Esocket0", "Esocket1"]
    _amd_energy_device(tmp_path, labels)
    found = amd_energy.probe(tmp_path)
    try:
        # energy10..12 sort before energy2 by name; socket order follows the label
        assert [s.name for s in found.sensors] == ["amd_energy:socket-0", "amd_energy:socket-1"]
        assert found.sensors[0].read_value() == pytest.approx(13.0)  # energy13_input, uJ
        assert found.sensors[0].part == "cpu-package" and found.problems == []
    finally:
        for s in found.sensors:
            s.close()


def test_amd_energy_with_only_core_counters_says_so(tmp_path: Path) -> None:
    device = _amd_energy_device(tmp_path, ["Ecore000", "Ecore001"])
    found = amd_energy.probe(tmp_path)
    assert not found.available and str(device) in found.problems[0]
    assert "no Esocket" in found.problems[0]
    assert amd_energy.probe(tmp_path / "absent").problems == []  # not an AMD host: silent


def test_rapl_and_amd_energy_together_count_each_socket_once(powercap: Path,
                                                             tmp_path: Path) -> None:
    # Both read the same MSRs (a kernel with AMD RAPL powercap and the amd_energy module)
    _amd_energy_device(tmp_path / "hwmon", ["Ecore000", "Esocket0"])
    found = discover(powercap, tmp_path / "hwmon", iio_root=tmp_path / "iio",
                     nvml_enabled=False, apple_enabled=False)
    try:
        assert "amd_energy:socket-0" in [s.name for s in found.sensors]
        choice, _ = choose_primary(found.sensors, Placement("cpu"), env={})
        assert choice is not None and choice.sensors == ["rapl:package-0"]
    finally:
        found.close()


def test_rapl_read_follows_the_file(powercap: Path) -> None:
    found = rapl.probe(powercap)
    zone = next(s for s in found.sensors if s.name == "rapl:psys")
    (powercap / "intel-rapl:1" / "energy_uj").write_text("190124456789\n")
    reading = zone.read()
    assert reading.value == pytest.approx(190124.456789)
    assert reading.t_unix_s > 1e9
    zone.close()


def test_rapl_missing_root_explains(tmp_path: Path) -> None:
    found = rapl.probe(tmp_path / "absent")
    assert not found.available
    assert "no powercap directory" in found.problems[0]
    assert "modprobe intel_rapl_msr" in found.problems[0]


def test_rapl_on_this_machine_is_explained_when_missing() -> None:
    found = rapl.probe()
    if found.available:
        pytest.skip("this machine has readable RAPL zones")
    assert found.problems and all(p.strip() for p in found.problems)


def test_rapl_file_that_cannot_be_read_is_named(powercap: Path) -> None:
    # A real unreadable attribute even for root: energy_uj is a directory (read -> EISDIR).
    energy = powercap / "intel-rapl:1" / "energy_uj"
    energy.unlink()
    energy.mkdir()
    found = rapl.probe(powercap)
    names = [s.name for s in found.sensors]
    assert "rapl:psys" not in names and "rapl:package-0" in names
    assert len(found.problems) == 1
    assert str(energy) in found.problems[0]
    for s in found.sensors:
        s.close()


def _probe_problems_as_nobody(root: Path) -> list[str]:
    """Run rapl.probe in a forked child that dropped root, so permissions really apply."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            problems = rapl.probe(root).problems
            os.write(write_end, json.dumps(problems).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.mark.skipif(sys.platform != "linux", reason="needs Linux permissions and fork")
def test_rapl_permission_denied_names_the_file_and_the_fix(
    sysfs_tree: Callable[..., Path],
) -> None:
    # Since 2020 energy_uj is mode 0400 root. chmod 000 does not stop root, so when the
    # tests run as root the probe runs in a child process that has dropped to `nobody`.
    base = Path(tempfile.mkdtemp(prefix="phase-rapl-"))
    try:
        base.chmod(0o755)  # traversable by nobody
        root = sysfs_tree("powercap", base / "powercap")
        for dirpath, _, filenames in os.walk(base):
            Path(dirpath).chmod(0o755)
            for name in filenames:
                (Path(dirpath) / name).chmod(0o644)
        for zone in ("intel-rapl:0", "intel-rapl:0:1", "intel-rapl:1"):
            (root / zone / "energy_uj").chmod(0o400)  # as on a real kernel
        problems = (_probe_problems_as_nobody(root) if os.geteuid() == 0
                    else rapl.probe(root).problems)
    finally:
        shutil.rmtree(base)
    assert len(problems) == 1
    assert "permission denied" in problems[0]
    assert "energy_uj" in problems[0] and str(root) in problems[0]
    assert "chmod o+r" in problems[0] and "root" in problems[0]


# --- Jetson INA3221 ------------------------------------------------------------------------


def test_jetson_rails_by_label(hwmon: Path) -> None:
    found = jetson.probe(hwmon)
    try:
        rails = {s.name: s for s in found.sensors}
        assert set(rails) == {"ina3221:VDD_IN", "ina3221:VDD_CPU_GPU_CV", "ina3221:VDD_SOC"}
        assert rails["ina3221:VDD_IN"].scope == "module"  # the module input; carrier excluded
        assert sorted(rails["ina3221:VDD_IN"].encloses or []) == [
            "ina3221:VDD_CPU_GPU_CV", "ina3221:VDD_SOC"]
        assert rails["ina3221:VDD_CPU_GPU_CV"].scope == "chip"
        assert rails["ina3221:VDD_SOC"].scope == "module"
        vdd_in = rails["ina3221:VDD_IN"]
        assert vdd_in.kind == "power" and vdd_in.unit == "W"
        assert vdd_in.read_value() == pytest.approx(5.0 * 1.2)  # 5000 mV x 1200 mA
        assert vdd_in.smoothing_s == pytest.approx(0.009)  # update_interval = 9 ms
        # 26 V x 163.84 mV / 5 mOhm: the most this shunt and chip can report
        assert vdd_in.max_power_w == pytest.approx(26 * 0.16384 / 0.005)
    finally:
        for s in found.sensors:
            s.close()


def test_jetson_without_update_interval_uses_the_documented_default(hwmon: Path) -> None:
    (hwmon / "hwmon1" / "update_interval").unlink()
    found = jetson.probe(hwmon)
    assert {s.smoothing_s for s in found.sensors} == {jetson.DEFAULT_UPDATE_INTERVAL_S}
    for s in found.sensors:
        s.close()


def test_jetson_unreadable_rail_and_missing_monitor(hwmon: Path, tmp_path: Path) -> None:
    (hwmon / "hwmon1" / "curr3_input").write_text("not-a-number\n")
    found = jetson.probe(hwmon)
    assert "ina3221:VDD_SOC" not in [s.name for s in found.sensors]
    assert any("VDD_SOC" in p and "curr3_input" in p for p in found.problems)
    for s in found.sensors:
        s.close()
    other = tmp_path / "plain-hwmon"
    (other / "hwmon0").mkdir(parents=True)
    (other / "hwmon0" / "name").write_text("coretemp\n")
    none = jetson.probe(other)
    assert not none.available and "no INA3221" in none.problems[0]


# --- NVML, Apple ---------------------------------------------------------------------------


def test_nvml_probe_finds_gpus_or_explains() -> None:
    found = nvml.probe()
    try:
        if found.available:
            names = [s.name for s in found.sensors]
            assert any(n.endswith(":power") for n in names)
            power = next(s for s in found.sensors if s.name.endswith(":power"))
            assert power.smoothing_s == 1.0
            assert power.read_value() > 0
        else:
            assert found.problems
            assert any("NVIDIA" in p or "NVML" in p or "GPU" in p for p in found.problems)
    finally:
        for s in found.sensors:
            s.close()


def test_apple_probe_explains_off_mac() -> None:
    found = apple.probe()
    if sys.platform == "darwin":
        pytest.skip("on a Mac the probe may find real sensors")
    assert not found.available
    assert found.problems == [found.problems[0]] and "not a Mac" in found.problems[0]


def test_powermetrics_plist_stream_is_split_and_parsed() -> None:
    docs = [{"elapsed_ns": 100_000_000, "processor": {"combined_power": 5230.0,
                                                      "cpu_power": 4100.0, "gpu_power": 1130.0}},
            {"elapsed_ns": 100_000_000, "processor": {"combined_power": 6000, "cpu_power": 5000}}]
    stream = b"".join(plistlib.dumps(d) + b"\0" for d in docs)
    half = len(stream) - 40  # a read that ends mid-document keeps the tail for later
    parsed, rest = apple.split_plists(stream[:half])
    assert len(parsed) == 1 and rest
    more, rest = apple.split_plists(rest + stream[half:])
    assert len(more) == 1 and rest == b""
    assert dict(apple.powermetrics_watts(parsed[0])) == {
        "apple:package-power": pytest.approx(5.23), "apple:cpu-power": pytest.approx(4.1),
        "apple:gpu-power": pytest.approx(1.13)}
    assert "apple:gpu-power" not in dict(apple.powermetrics_watts(more[0]))


# --- meter traces --------------------------------------------------------------------------


def test_parse_meter_spec() -> None:
    spec = parse_meter_spec("C:/meters/wall.csv:wall:1.5")
    assert spec == MeterSpec(Path("C:/meters/wall.csv"), "wall", 1.5)
    for bad in ("wall.csv", "wall.csv:wall", "wall.csv:rack:1", "wall.csv:wall:soon",
                "wall.csv:wall:-1", ":wall:1", "wall.csv:wall:nan"):
        with pytest.raises(UsageProblem):
            parse_meter_spec(bad)


def test_meter_csv_fixture_loads_with_its_gap() -> None:
    data = load_meter(FIXTURES / "wall_meter.csv")
    assert data.kind == "power"
    assert len(data.times) == 16 and data.times[0] == 1764490000.0
    assert data.values.count(None) == 1  # the empty reading is a gap, not a zero
    assert 0.0 not in data.values


def test_meter_json_with_iso_times_and_joules(tmp_path: Path) -> None:
    path = tmp_path / "board.json"
    path.write_text(json.dumps({"samples": [
        {"Time": "2026-11-30T09:00:00+00:00", "Joules": 10.0},
        {"Time": "2026-11-30T09:00:01Z", "Joules": 22.5},
    ]}))
    data = load_meter(path)
    assert data.kind == "counter"
    assert data.times[1] - data.times[0] == 1.0
    sensor = MeterTrace(MeterSpec(path, "board", 0.2))
    assert (sensor.name, sensor.scope, sensor.kind, sensor.smoothing_s) == \
        ("meter:board", "board", "counter", 0.2)
    assert sensor.read().value == 22.5


@pytest.mark.parametrize(("text", "problem"), [
    ("timestamp,watts\n0.0,5\n0.5,6\n", "looks relative"),
    ("timestamp,watts\n2026-11-30T09:00:00,5\n", "no UTC offset"),
    ("when,watts\n1764490000,5\n", "needs a timestamp column"),
    ("timestamp,watts\n1764490001,5\n1764490000,5\n", "must increase"),
    ("timestamp,watts\n1764490000,lots\n", "not a number"),
])
def test_meter_trace_problems_are_named(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "m.csv"
    path.write_text(text)
    with pytest.raises(PhaseError, match=problem):
        load_meter(path)


# --- discovery -----------------------------------------------------------------------------


def test_discover_gathers_sensors_and_reasons(powercap: Path, hwmon: Path) -> None:
    found = discover(rapl_root=powercap, hwmon_root=hwmon,
                     meters=[f"{FIXTURES / 'wall_meter.csv'}:wall:1.0", "/nonexistent.csv:wall:1"])
    try:
        names = [s.name for s in found.sensors]
        assert {"rapl:package-0", "ina3221:VDD_IN", "meter:wall_meter"} <= set(names)
        reasons = {u.backend: u.reason for u in found.unavailable}
        assert "no such meter trace file" in reasons["meter"]
        if sys.platform != "darwin":
            assert "apple" in reasons
    finally:
        found.close()
