"""`phase sensors --replay` on one snapshot per machine kind (tests/fixtures/sensors/machines,
built from real layouts by build.py there; h200-device-run.json recorded on a real H200):
each names the primary sensor(s), every scope, the bounds and the reasons."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from phase.base.errors import PhaseError
from phase.cli import run_cli
from phase.sensors import assert_publishable, discover
from phase.sensors.core.primary import GpuUse, Placement, choose_primary
from phase.sensors.replay import replay
from phase.sensors.report import survey

MACHINES = Path(__file__).parent / "fixtures" / "sensors" / "machines"
sys.path.insert(0, str(MACHINES))
import build as machine_build  # noqa: E402
from replayed import driven_clock, replay_json, replay_json_at  # noqa: E402


def replayed(name: str, *, sample_s: float = 0.3, probe_s: float = 0.4,
             slow_probe_s: float = 0.6) -> dict[str, Any]:
    data = replay.load(MACHINES / f"{name}.json")
    clock = driven_clock(data)
    machine, roots = replay.machine(data, clock)
    found = discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=machine)
    assert found.sensors and all(s.synthetic for s in found.sensors)
    with pytest.raises(PhaseError, match="synthetic"):
        assert_publishable(found.sensors)  # a replay can never be recorded as measurements
    return survey(found, hz=20.0, sample_s=sample_s, probe_s=probe_s,
                  slow_probe_s=slow_probe_s, build=data["build"]["accelerator"],
                  env=data.get("env", {}), cuda_gpus=replay.cuda_gpus(data), clock=clock)


def machine_found(name: str) -> Any:
    data = replay.load(MACHINES / f"{name}.json")
    machine, roots = replay.machine(data)
    return discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=machine)


def rows(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in result["sensors"]}


def primary(result: dict[str, Any], where: str) -> dict[str, Any]:
    return next(p for p in result["primary"] if p["if_model_runs_on"] == where)


def test_fixture_snapshots_are_built_by_build_py() -> None:
    for name, data in machine_build.machines().items():
        assert (MACHINES / f"{name}.json").read_text() == machine_build.render(data), name


def test_intel_laptop_psys_bound_is_the_largest_limit_not_the_tdp() -> None:
    result = replayed("intel-laptop-psys")
    r = rows(result)
    assert set(r) == {"rapl:package-0", "rapl:psys"}  # core, uncore and the mmio copy left out
    package, psys = r["rapl:package-0"], r["rapl:psys"]
    assert (package["scope"], psys["scope"]) == ("chip", "board")
    # constraint_0_max_power_uw is the 55 W TDP; the limits are 135/162/315 W
    assert package["max_power_w"] == pytest.approx(315.0)
    assert package["assumed"] == ["max_power_w"]
    assert psys["max_power_w"] is None  # psys declares no limit: the per-scope default applies
    assert psys["encloses"] == ["rapl:package-0"] and package["encloses"] == []
    cpu = primary(result, "cpu")
    assert cpu["sensors"] == ["rapl:package-0"] and cpu["this_build"]
    assert "RAPL package zone" in cpu["reason"]
    assert package["window"]["energy_j"] > 0 and package["window"]["edge_error_j"] is not None


def test_two_socket_server_sums_both_packages_and_dram_encloses_nothing() -> None:
    result = replayed("xeon-2s-dram")
    r = rows(result)
    assert {n: v["scope"] for n, v in r.items()} == {
        "rapl:package-0": "chip", "rapl:package-1": "chip",
        "rapl:package-0/dram": "module", "rapl:package-1/dram": "module"}
    assert all(v["encloses"] == [] for v in r.values())  # dram is disjoint from the package
    assert r["rapl:package-0"]["max_power_w"] == pytest.approx(324.0)
    assert r["rapl:package-0/dram"]["max_power_w"] is None
    cpu = primary(result, "cpu")
    assert cpu["sensors"] == ["rapl:package-0", "rapl:package-1"]
    assert "all 2 sockets, summed" in cpu["reason"]


def test_psys_encloses_the_package_and_its_dram_zone() -> None:
    result = replayed("laptop-psys-dram")
    r = rows(result)
    assert {n: v["scope"] for n, v in r.items()} == {
        "rapl:package-0": "chip", "rapl:package-0/dram": "module", "rapl:psys": "board"}
    # The platform domain covers the memory too: held against the package alone, psys's
    # "rest of the board" would silently include the DRAM's energy.
    assert r["rapl:psys"]["encloses"] == ["rapl:package-0", "rapl:package-0/dram"]
    assert r["rapl:package-0"]["encloses"] == [] and r["rapl:package-0/dram"]["encloses"] == []
    assert primary(result, "cpu")["sensors"] == ["rapl:package-0"]  # dram is not the chip


def test_sixteen_sockets_hex_zone_ids_are_all_summed() -> None:
    # powercap names zones "%s:%x": packages 10-15 live in intel-rapl:a ... intel-rapl:f
    result = replayed("superdome-16s-hex-zones", sample_s=0.2)
    r = rows(result)
    packages = [f"rapl:package-{s}" for s in range(16)]
    assert [n for n in r if not n.endswith("/dram")] == packages  # in id order, a after 9
    assert "rapl:package-10/dram" in r and "rapl:package-15/dram" in r  # intel-rapl:a:0 ...
    cpu = primary(result, "cpu")
    assert cpu["sensors"] == packages and "all 16 sockets, summed" in cpu["reason"]
    total_w = sum(r[n]["window"]["mean_power_w"] for n in packages)
    assert total_w == pytest.approx(sum(96.0 + s for s in range(16)), rel=0.05)


def test_epyc_amd_energy_sums_the_socket_counters_not_the_cores() -> None:
    result = replayed("epyc-2s-amd-energy")
    r = rows(result)
    assert list(r) == ["amd_energy:socket-0", "amd_energy:socket-1"]  # no Ecore counter
    assert all(v["scope"] == "chip" and v["kind"] == "counter" for v in r.values())
    cpu = primary(result, "cpu")
    assert cpu["sensors"] == ["amd_energy:socket-0", "amd_energy:socket-1"]
    assert "amd_energy socket counters of all 2 sockets, summed" in cpu["reason"]
    watts = [r[n]["window"]["mean_power_w"] for n in cpu["sensors"]]
    assert watts == [pytest.approx(86.0, rel=0.05), pytest.approx(79.5, rel=0.05)]


def test_amd_zen_package_without_constraints_has_no_bound() -> None:
    result = replayed("amd-zen")
    r = rows(result)
    assert list(r) == ["rapl:package-0"]
    assert r["rapl:package-0"]["max_power_w"] is None and r["rapl:package-0"]["assumed"] == []
    assert primary(result, "cpu")["sensors"] == ["rapl:package-0"]


def test_gpu_server_two_gpus_by_uuid_summed_and_rapl_for_the_cpu() -> None:
    result = replayed("gpu-server-2x-h100")
    r = rows(result)
    energy = [n for n in r if n.startswith("nvml:") and n.endswith(":energy")]
    assert energy == ["nvml:GPU-4f5a2b71:energy", "nvml:GPU-a09e77c3:energy"]
    assert r[energy[0]]["device"] == "GPU-4f5a2b71-0c1e-6d3a-9b2f-17e3a9c0d5e1"
    assert r[energy[0]]["max_power_w"] == pytest.approx(700 * 1.25)
    cuda = primary(result, "cuda")
    assert cuda["this_build"] and cuda["sensors"] == energy
    assert "energy counters of the 2 GPUs it used, summed" in cuda["reason"]
    assert cuda["device"].startswith("cuda:0 GPU-4f5a2b71")
    assert "cuda:1 GPU-a09e77c3" in cuda["device"]
    assert primary(result, "cpu")["sensors"] == ["rapl:package-0", "rapl:package-1"]


@pytest.mark.parametrize(("visible", "words"), [
    (None, "set but empty ('')"),  # as recorded in the fixture
    (" , ", "set but empty"),
    ("-1", "'-1' names no device"),
    ("NoDevFiles", "Slurm sets `NoDevFiles`"),
    ("GPU-deadbeef", "'GPU-deadbeef' matches no GPUs NVML reads here "
                     "(GPU-4f5a2b71-0c1e-6d3a-9b2f-17e3a9c0d5e1, GPU-a09e77c3-"),
    ("0,GPU-deadbeef", "'GPU-deadbeef' matches no GPUs"),  # not silently dropped
    ("GPU-", "'GPU-' matches 2 of the GPUs"),
    ("MIG-4f5a2b71-0c1e-6d3a-9b2f-17e3a9c0d5e1", "is a MIG instance"),
    ("7", "names GPU 7, which NVML does not read"),
    ("0,0", "names one GPU twice"),
])
def test_cuda_visible_devices_that_maps_to_no_gpu_is_one_clear_line(
        tmp_path: Path, visible: str | None, words: str) -> None:
    # What `sensors --replay --json` prints (test_cli_replay_json_and_text runs the command),
    # on a driven clock: the probe and window take no real time.
    data = json.loads((MACHINES / "gpu-server-none-visible.json").read_text())
    if visible is not None:
        data["env"] = {"CUDA_VISIBLE_DEVICES": visible}
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(data))
    result = replay_json_at(path)
    cuda = primary(result, "cuda")
    assert cuda["sensors"] is None and cuda["this_build"]
    assert words in cuda["reason"] and "\n" not in cuda["reason"], cuda["reason"]
    # the CPU is still measured
    assert primary(result, "cpu")["sensors"] == ["rapl:package-0", "rapl:package-1"]


def test_cuda_stops_at_the_first_entry_that_names_no_device() -> None:
    # CUDA's documented rule: "0,2,-1,1" shows 0 and 2; here "1,-1,0" shows GPU 1 only
    found = machine_found("gpu-server-2x-h100")
    choice, _ = choose_primary(found.sensors, Placement("cuda", None),
                               env={"CUDA_VISIBLE_DEVICES": "1,-1,0"})
    assert choice is not None and choice.sensors == ["nvml:GPU-a09e77c3:energy"]
    found.close()


def test_an_index_of_a_gpu_nvml_could_not_open_does_not_slide_to_the_next() -> None:
    # GPU 1 is lost: CUDA device 1 is not GPU 2, the next one NVML could open
    found = machine_found("gpu-server-one-lost")
    choice, why = choose_primary(found.sensors, Placement("cuda", None),
                                 env={"CUDA_VISIBLE_DEVICES": "1"})
    assert choice is None and "names GPU 1, which NVML does not read" in (why or "")
    found.close()


L40S, H100 = "nvml:GPU-5e6f7081:energy", "nvml:GPU-d1e2f304:energy"


def test_mixed_gpus_cuda_index_is_refused_not_taken_as_nvml_index() -> None:
    # Recorded with CUDA_VISIBLE_DEVICES=1: fastest first, CUDA device 1 is the L40S, not
    # NVML's GPU 1 (the H100). Only one GPU is chosen, but the machine's GPUs differ.
    result = replayed("workstation-l40s-h100")
    cuda = primary(result, "cuda")
    assert cuda["sensors"] is None
    assert "GPUs differ (NVIDIA H100 PCIe, NVIDIA L40S)" in cuda["reason"]
    assert "CUDA_DEVICE_ORDER=PCI_BUS_ID" in cuda["reason"]


@pytest.mark.parametrize(("env", "gpus", "expected"), [
    ({"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, (), [H100]),
    ({"CUDA_VISIBLE_DEVICES": "GPU-d1e2f304"}, (), [H100]),  # a UUID settles it
    ({"CUDA_VISIBLE_DEVICES": "GPU-d1e2,GPU-5e6f"}, (), [H100, L40S]),  # in the listed order
    ({}, (), None),  # every GPU, by number: refused
    # llama.cpp's logged PCI bus id settles it whatever the order
    ({}, (GpuUse("CUDA0", "NVIDIA H100 PCIe", "0000:65:00.0"),), [H100]),
    ({"CUDA_VISIBLE_DEVICES": "1"}, (GpuUse("CUDA0", "NVIDIA L40S", "0000:17:00.0"),), [L40S]),
])
def test_mixed_gpus_map_by_pci_bus_id_or_uuid(env: dict[str, str], gpus: tuple[GpuUse, ...],
                                              expected: list[str] | None) -> None:
    found = machine_found("workstation-l40s-h100")
    choice, why = choose_primary(found.sensors, Placement("cuda", None, gpus=gpus), env=env)
    assert (choice.sensors if choice else None) == expected, why
    found.close()


@pytest.mark.parametrize(("name", "smoothing"), [("a100-instant", 0.0), ("h100-averaged", 1.0)])
def test_nvml_power_smoothing_follows_the_architecture(name: str, smoothing: float) -> None:
    r = rows(replayed(name))
    power = next(v for n, v in r.items() if n.endswith(":power"))
    assert power["smoothing_s"] == smoothing and "smoothing_s" in power["assumed"]
    counter = next(v for n, v in r.items() if n.endswith(":energy"))
    assert counter["smoothing_s"] == 0.0 and "smoothing_s" not in counter["assumed"]


def test_mig_mode_is_detected_and_said() -> None:
    result = replayed("a100-mig")
    assert any("MIG mode is on" in n for n in result["notes"])
    cuda = primary(result, "cuda")
    assert cuda["sensors"] == ["nvml:GPU-77aa88bb:energy"]
    assert "MIG mode is on" in cuda["reason"] and "other MIG" in cuda["reason"]


def test_one_lost_gpu_does_not_hide_the_others_and_errors_are_named() -> None:
    result = replayed("gpu-server-one-lost")
    names = set(rows(result))
    assert "nvml:GPU-0a1b2c3d:energy" in names  # GPU 0 before the lost one
    assert "nvml:GPU-c3d4e5f6:power" in names  # GPU 2 after it: still read
    assert "nvml:GPU-c3d4e5f6:energy" not in names  # its counter is not permitted
    reasons = [u["reason"] for u in result["unavailable"] if u["backend"] == "nvml"]
    assert any("GPU 1" in r and "NVML_ERROR_GPU_IS_LOST" in r for r in reasons)
    denied = next(r for r in reasons if "GPU 2" in r)
    assert "NVML_ERROR_NO_PERMISSION" in denied and "Volta" not in denied
    # CUDA_VISIBLE_DEVICES=0 was recorded: the model can only have used GPU 0
    assert primary(result, "cuda")["sensors"] == ["nvml:GPU-0a1b2c3d:energy"]


def test_agx_orin_compute_rails_are_summed_and_the_5v_rail_is_not_board() -> None:
    result = replayed("jetson-agx-orin")
    r = rows(result)
    assert {n: v["scope"] for n, v in r.items()} == {
        "ina3221:VDD_GPU_SOC": "chip", "ina3221:VDD_CPU_CV": "chip",
        "ina3221:VIN_SYS_5V0": "module", "ina3221:VDDQ_VDD2_1V8AO": "module"}
    assert all(v["encloses"] == [] for v in r.values())  # no module input on this module
    for where in ("cpu", "cuda"):
        p = primary(result, where)
        assert p["sensors"] == ["ina3221:VDD_GPU_SOC", "ina3221:VDD_CPU_CV"]
        assert "compute rails, summed" in p["reason"]
    assert r["ina3221:VDD_GPU_SOC"]["smoothing_s"] == pytest.approx(0.006)
    assert r["ina3221:VDD_GPU_SOC"]["assumed"] == []  # read from update_interval


def test_orin_nano_module_input_encloses_its_rails() -> None:
    result = replayed("jetson-orin-nano")
    r = rows(result)
    assert r["ina3221:VDD_IN"]["scope"] == "module"  # the carrier board is outside it
    assert sorted(r["ina3221:VDD_IN"]["encloses"]) == ["ina3221:VDD_CPU_GPU_CV",
                                                       "ina3221:VDD_SOC"]
    assert r["ina3221:VDD_CPU_GPU_CV"]["scope"] == "chip"
    assert primary(result, "cuda")["sensors"] == ["ina3221:VDD_CPU_GPU_CV"]


def test_jetpack4_nano_reads_the_iio_driver() -> None:
    result = replayed("jetson-nano-jp4")
    r = rows(result)
    assert set(r) == {"ina3221:POM_5V_IN", "ina3221:POM_5V_GPU", "ina3221:POM_5V_CPU"}
    assert r["ina3221:POM_5V_IN"]["scope"] == "module"
    assert r["ina3221:POM_5V_GPU"]["window"]["mean_power_w"] == pytest.approx(0.41, abs=0.05)
    assert all(v["assumed"] == ["smoothing_s"] for v in r.values())  # IIO exposes no interval
    assert primary(result, "cuda")["sensors"] == ["ina3221:POM_5V_GPU", "ina3221:POM_5V_CPU"]


# What each module's chip figure covers, from NVIDIA's power monitor tables per module
# (phase.results.covers): the AGX Orin's compute rails include the SoC, the others' do not.
JETSON_CHIP = {
    "jetson-agx-orin": (["ina3221:VDD_GPU_SOC", "ina3221:VDD_CPU_CV"], ["cpu", "gpu", "cv", "soc"]),
    "jetson-orin-nano": (["ina3221:VDD_CPU_GPU_CV"], ["cpu", "gpu", "cv"]),
    "jetson-orin-nx": (["ina3221:VDD_CPU_GPU_CV"], ["cpu", "gpu", "cv"]),
    "jetson-agx-xavier": (["ina3221:GPU", "ina3221:CPU", "ina3221:CV"], ["cpu", "gpu", "cv"]),
    "jetson-nano-jp4": (["ina3221:POM_5V_GPU", "ina3221:POM_5V_CPU"], ["cpu", "gpu"]),
    "jetson-tx2-jp4": (["ina3221:VDD_SYS_GPU", "ina3221:VDD_SYS_CPU"], ["cpu", "gpu"]),
}


@pytest.mark.parametrize("name", sorted(JETSON_CHIP))
def test_jetson_replay_json_names_the_chip_rails_and_what_they_cover(name: str) -> None:
    data = replay_json(name)
    sensors, covers = JETSON_CHIP[name]
    for where in ("cpu", "cuda"):
        p = primary(data, where)
        assert (p["sensors"], p["covers"]) == (sensors, covers)
    scopes = {r["name"]: r["scope"] for r in data["sensors"]}
    assert [n for n, scope in scopes.items() if scope == "chip"] == sorted(
        sensors, key=list(scopes).index)
    inputs = [r for r in data["sensors"] if r["encloses"]]
    for r in inputs:  # a module input encloses every other rail of its module
        assert r["scope"] == "module" and sorted(r["encloses"]) == sorted(
            n for n in scopes if n != r["name"])


def test_orin_nx_rails_leave_the_soc_outside_the_chip_figure() -> None:
    result = replayed("jetson-orin-nx")
    r = rows(result)
    assert r["ina3221:VDD_SOC"]["scope"] == "module"
    assert r["ina3221:VDD_IN"]["smoothing_s"] == pytest.approx(0.008)  # its update_interval
    assert "soc" not in primary(result, "cuda")["covers"]
    assert "soc" in replayed("jetson-agx-orin")["primary"][0]["covers"]


def test_replay_text_says_what_the_chip_figure_covers(
    capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(["sensors", "--replay", str(MACHINES / "jetson-agx-orin.json"),
                    "--probe", "0.3", "--sample", "0.2"]) == 0
    assert "[covers cpu, gpu, cv, soc]" in capsys.readouterr().out


@pytest.mark.slow
def test_mac_zeus_2s_batches_short_window_gets_an_edge_error_not_a_frozen_counter() -> None:
    result = replayed("mac-m3-max-zeus", sample_s=1.0, slow_probe_s=5.0)
    r = rows(result)
    cpu = r["apple:cpu"]
    assert cpu["update_period_s"] == pytest.approx(2.0, abs=0.3)  # measured, not assumed
    window = cpu["window"]
    # Under 2 s used to read "did not change"; now an estimate with its (large) edge error
    assert window["energy_j"] is not None, window["energy_reason"]
    assert window["edge_error_j"] > 0.05 * window["energy_j"]
    assert primary(result, "metal")["sensors"] == ["apple:gpu", "apple:gpu-sram"]
    assert primary(result, "cpu")["sensors"] == ["apple:cpu"]
    assert r["apple:dram"]["scope"] == "module"


def test_mac_powermetrics_makes_only_reported_sensors_and_stamps_by_plist() -> None:
    result = replayed("mac-powermetrics", sample_s=0.5)
    r = rows(result)
    assert set(r) == {"apple:package-power", "apple:cpu-power", "apple:gpu-power"}  # no ane
    assert sorted(r["apple:package-power"]["encloses"]) == ["apple:cpu-power", "apple:gpu-power"]
    assert r["apple:gpu-power"]["window"]["energy_j"] is not None
    assert primary(result, "metal")["sensors"] == ["apple:gpu-power"]


def test_h200_device_run_snapshot_replays() -> None:
    result = replayed("h200-device-run")
    r = rows(result)
    counter = r["nvml:GPU-62df9da3:energy"]
    assert counter["update_period_s"] == pytest.approx(0.1, abs=0.03)
    assert counter["device"] == "GPU-62df9da3-b883-d384-6f76-352d6472df13"
    assert r["nvml:GPU-62df9da3:power"]["smoothing_s"] == 1.0  # Hopper: averaged
    assert primary(result, "cuda")["sensors"] == ["nvml:GPU-62df9da3:energy"]


def test_cli_replay_json_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    path = MACHINES / "xeon-2s-dram.json"
    assert run_cli(["sensors", "--replay", str(path), "--json", "--probe", "0.3",
                    "--sample", "0.2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["replay"]["host"]["cpu_model"].startswith("Intel(R) Xeon(R) Platinum 8380")
    assert primary(data, "cpu")["sensors"] == ["rapl:package-0", "rapl:package-1"]
    assert run_cli(["sensors", "--replay", str(path), "--probe", "0.3", "--sample", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "model on cpu (this build): rapl:package-0 + rapl:package-1" in out
    assert "324 W*" in out and "assumed, not read" in out


@pytest.mark.parametrize(("content", "needle"), [
    (b"\xff\xfe", "not a readable snapshot"),
    (b"[" * 100_000 + b"]" * 100_000, "not a readable snapshot"),
    (b'{"format": "other"}', "not a phase sensors snapshot"),
    (b'{"format": "phase-sensors-snapshot", "version": 99}', "version 99"),
])
def test_bad_snapshot_is_one_line_exit_2(tmp_path: Path, content: bytes, needle: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "snap.json"
    path.write_bytes(content)
    assert run_cli(["sensors", "--replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow  # probes this machine's sensors and host for real: ~10 s of wall clock
def test_snapshot_of_this_machine_replays_and_is_never_overwritten(
        tmp_path: Path, sysfs_tree: Any, capsys: pytest.CaptureFixture[str]) -> None:
    powercap, hwmon = sysfs_tree("powercap"), sysfs_tree("hwmon")
    out = tmp_path / "snap.json"
    args = ["sensors", "--rapl-root", str(powercap), "--hwmon-root", str(hwmon), "--probe", "0.2"]
    assert run_cli([*args, "--snapshot", str(out)]) == 0
    data = json.loads(out.read_text())
    files = data["fs"]["files"]
    energy = str(powercap / "intel-rapl:0" / "energy_uj")
    assert files[energy]["text"] == "84213377190\n"  # as the kernel gave it: raw, not parsed
    assert data["version"] == 2 and data["fs"]["series"][energy]["counter"] is True
    assert "devices" in data["cuda"] or data["cuda"]["error"]  # CUDA's list, or why none
    assert files[str(hwmon / "hwmon1" / "in1_label")]["text"] == "VDD_IN"
    assert "hostname" not in json.dumps(data["host"])
    capsys.readouterr()
    assert run_cli(["sensors", "--replay", str(out), "--json", "--probe", "0.2",
                    "--sample", "0.2"]) == 0
    names = {r["name"] for r in json.loads(capsys.readouterr().out)["sensors"]}
    assert {"rapl:package-0", "rapl:psys", "ina3221:VDD_IN"} <= names
    before = out.read_bytes()
    assert run_cli([*args, "--snapshot", str(out)]) == 2
    assert out.read_bytes() == before
