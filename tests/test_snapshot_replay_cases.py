"""Snapshots that hold what a real machine showed (issue 32): MIG instances and CUDA's own
device list settle the GPU a model used as on the recorded machine; a lost GPU is refused,
never silently skipped; powermetrics' raw output replays through the live parser; counters
count on and wrap as recorded. Fixtures: tests/fixtures/sensors/machines (build.py)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest
from replayed import driven_clock

from phase.cli import run_cli
from phase.sensors import discover
from phase.sensors.apple import apple
from phase.sensors.core.clock import SYSTEM_CLOCK, Clock
from phase.sensors.core.primary import GpuUse, Placement, choose_primary
from phase.sensors.nvidia import cuda_devices
from phase.sensors.replay import replay, snapshot
from phase.sensors.report import survey

MACHINES = Path(__file__).parent / "fixtures" / "sensors" / "machines"
GPU0_MIG = "MIG-10000000-0000-4000-8000-00000000000"  # + "1" or "2": its two instances
GPU1_MIG = "MIG-20000000-0000-4000-8000-00000000000"
MIG_A, MIG_B = "nvml:GPU-aa11bb22:energy", "nvml:GPU-bb22cc33:energy"


def found_in(data: dict[str, Any], clock: Clock = SYSTEM_CLOCK) -> Any:
    machine, roots = replay.machine(data, clock)
    return discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=machine)


def load(name: str) -> dict[str, Any]:
    return replay.load(MACHINES / f"{name}.json")


def surveyed(data: dict[str, Any], sample_s: float = 0.3) -> dict[str, Any]:
    clock = driven_clock(data)
    return survey(found_in(data, clock), hz=20.0, sample_s=sample_s, probe_s=0.3,
                  slow_probe_s=0.4, build=data["build"]["accelerator"], env=data.get("env", {}),
                  cuda_gpus=replay.cuda_gpus(data), clock=clock)


def primary(result: dict[str, Any], where: str) -> dict[str, Any]:
    return next(p for p in result["primary"] if p["if_model_runs_on"] == where)


def test_a_mig_instance_replays_as_the_gpu_that_holds_it() -> None:
    result = surveyed(load("gpu-server-mig"))
    cuda = primary(result, "cuda")
    assert cuda["sensors"] == [MIG_B] and cuda["device"].startswith("cuda:0 GPU-bb22cc33")
    assert "other MIG instances" in cuda["reason"]


@pytest.mark.parametrize(("visible", "expected"), [
    (GPU1_MIG + "1", [MIG_B]),
    (GPU0_MIG + "2", [MIG_A]),
    ("MIG-GPU-bb22cc33-dd44-ee55-ff66-001122334455/1/0", [MIG_B]),  # the pre-R470 form
    (f"{GPU1_MIG}1,{GPU1_MIG}2", [MIG_B]),  # two instances of one GPU: its energy once
    (f"{GPU0_MIG}1,{GPU1_MIG}1", [MIG_A, MIG_B]),
])
def test_cuda_visible_devices_mig_entries_map_through_nvmls_instance_list(
        visible: str, expected: list[str]) -> None:
    found = found_in(load("gpu-server-mig"))
    choice, why = choose_primary(found.sensors, Placement("cuda", None),
                                 env={"CUDA_VISIBLE_DEVICES": visible})
    found.close()
    assert choice is not None and choice.sensors == expected, why


@pytest.mark.parametrize(("visible", "words"), [
    ("MIG-30000000", "'MIG-30000000' matches no MIG instances NVML lists here (MIG-1000"),
    ("MIG-", "'MIG-' matches 2 of the MIG instances"),
])
def test_a_mig_entry_that_names_no_single_instance_is_refused(visible: str, words: str) -> None:
    found = found_in(load("gpu-server-mig"))
    choice, why = choose_primary(found.sensors, Placement("cuda", None),
                                 env={"CUDA_VISIBLE_DEVICES": visible})
    found.close()
    assert choice is None and words in (why or "")


def test_a_version_1_snapshot_without_mig_instances_still_refuses_a_mig_entry() -> None:
    data = load("a100-mig")
    data["version"] = 1
    for gpu in data["nvml"]["gpus"]:
        del gpu["mig_devices"]
    del data["cuda"]
    found = found_in(data)
    choice, why = choose_primary(found.sensors, Placement("cuda", None),
                                 env={"CUDA_VISIBLE_DEVICES": "MIG-0d1c2b3a"})
    found.close()
    assert choice is None and "NVML listed no GPU's MIG instances" in (why or "")
    assert surveyed(data)["sensors"]  # and the old file still replays


def test_cudas_recorded_device_list_settles_mixed_gpus_as_on_the_machine() -> None:
    # Without the list, CUDA_VISIBLE_DEVICES=1 on an L40S + H100 host is refused (CUDA's
    # fastest-first order is unknown); the recorded list says CUDA's device 0 was the L40S.
    assert primary(surveyed(load("workstation-l40s-h100")), "cuda")["sensors"] is None
    cuda = primary(surveyed(load("workstation-l40s-h100-cuda-list")), "cuda")
    assert cuda["sensors"] == ["nvml:GPU-5e6f7081:energy"]
    assert cuda["device"] == "cuda:0 GPU-5e6f7081-92a3-b4c5-d6e7-f8091a2b3c4d"


def test_cuda_devices_reader_says_why_where_there_is_no_driver(tmp_path: Path) -> None:
    missing = cuda_devices.read(str(tmp_path / "libcuda.so.1"))
    assert "could not be loaded" in missing["error"] and "devices" not in missing
    # A library without the driver API (libc): named, not a crash
    assert "lacks the CUDA driver API" in cuda_devices.read("libc.so.6")["error"]


LOST = "NVML counts 3 GPUs but reads none of GPU 1"
GPU2 = "nvml:GPU-c3d4e5f6:power-instant"  # its energy counter is not permitted


def test_a_lost_gpu_with_nothing_set_is_refused_with_the_reason() -> None:
    result = surveyed(load("gpu-server-one-lost-unset"))
    cuda = primary(result, "cuda")
    assert cuda["sensors"] is None and LOST in cuda["reason"]
    assert "CUDA_VISIBLE_DEVICES" in cuda["reason"] and "\n" not in cuda["reason"]


@pytest.mark.parametrize(("env", "gpus", "expected"), [
    # A CUDA number below the lost GPU is the same GPU however CUDA counts the lost one
    ({}, (GpuUse("CUDA0", "NVIDIA L40S"),), ["nvml:GPU-0a1b2c3d:energy"]),
    ({}, (GpuUse("CUDA1", "NVIDIA L40S"),), None),  # GPU 2, or the lost GPU 1?
    ({"CUDA_VISIBLE_DEVICES": "2"}, (), None),
    # llama.cpp's bus id settles it
    ({}, (GpuUse("CUDA1", "NVIDIA L40S", "0000:81:00.0"),), [GPU2]),
    ({"CUDA_VISIBLE_DEVICES": "GPU-c3d4e5f6"}, (), [GPU2]),
    # a bus id NVML does not read (the lost GPU's) is refused, never taken as a number
    ({}, (GpuUse("CUDA0", "NVIDIA L40S", "0000:41:00.0"),), None),
])
def test_cuda_numbers_past_a_lost_gpu_are_refused_not_shifted(
        env: dict[str, str], gpus: tuple[GpuUse, ...], expected: list[str] | None) -> None:
    found = found_in(load("gpu-server-one-lost-unset"))
    choice, why = choose_primary(found.sensors, Placement("cuda", None, gpus=gpus), env=env)
    found.close()
    assert (choice.sensors if choice else None) == expected, why
    if expected is None:
        assert LOST in (why or "") or "PCI 0000:41:00.0, which NVML does not read" in (why or "")


def _counter_file(data: dict[str, Any], path: str) -> Any:
    machine, _ = replay.machine(data)
    return machine.fs.open_value(Path(path))


def test_a_wrap_inside_the_recording_replays_as_a_wrap_at_the_recorded_range() -> None:
    data = load("rapl-wrap-in-recording")
    wrap = 262143328850
    handle = _counter_file(data, "/sys/class/powercap/intel-rapl:0/energy_uj")
    reads = []
    for _ in range(15):  # across the wrap (at 0.5 ms) and past the recording's end (50 ms)
        reads.append((time.monotonic(), handle.read_int()))
        time.sleep(0.01)
    assert all(0 <= v < wrap for _, v in reads)
    steps = [((b - a) % wrap) / 1e6 / (tb - ta)
             for (ta, a), (tb, b) in itertools.pairwise(reads) if tb > ta]
    assert max(steps) < 1000  # never the 262 kJ range extrapolated into megawatts
    result = surveyed(data)
    package = next(r for r in result["sensors"] if r["name"] == "rapl:package-0")
    assert package["window"]["mean_power_w"] == pytest.approx(40.0, rel=0.1)


def test_an_energy_input_counter_never_runs_backwards_past_its_recording() -> None:
    data = load("epyc-2s-amd-energy")
    path = next(p for p, s in data["fs"]["series"].items() if s.get("counter"))
    assert not path.endswith("energy_uj")
    handle = _counter_file(data, path)
    reads = [handle.read_int()]
    for _ in range(10):  # the recording is 50 ms long
        time.sleep(0.012)
        reads.append(handle.read_int())
    assert reads == sorted(reads) and reads[-1] > reads[0]
    watts = (reads[-1] - reads[0]) / 1e6 / 0.12
    assert 40 < watts < 130  # socket 0 drew 86 W in the recording


def test_a_counter_whose_recording_ended_in_an_error_fails_past_it() -> None:
    data = load("epyc-2s-amd-energy")
    path = next(p for p, s in data["fs"]["series"].items() if s.get("counter"))
    data["fs"]["series"][path]["error"] = "Input/output error"
    handle = _counter_file(data, path)
    handle.read_int()
    time.sleep(0.08)
    with pytest.raises(Exception, match="Input/output error"):
        handle.read_int()


def test_raw_powermetrics_output_replays_through_the_live_parser() -> None:
    result = surveyed(load("mac-powermetrics-raw"), sample_s=0.5)
    rows = {r["name"]: r for r in result["sensors"]}
    assert set(rows) == {"apple:package-power", "apple:cpu-power", "apple:gpu-power"}
    assert 1.6 <= rows["apple:gpu-power"]["window"]["mean_power_w"] <= 2.0  # 1.7-1.9 W
    assert primary(result, "metal")["sensors"] == ["apple:gpu-power"]


def test_powermetrics_output_of_another_shape_replays_as_it_ran(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "mac-powermetrics-other-shape"
    assert run_cli(["sensors", "--replay", str(MACHINES / f"{name}.json"), "--json",
                    "--probe", "0.1", "--sample", "0.1"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    result = json.loads(captured.out)
    assert not result["sensors"]
    reasons = [u["reason"] for u in result["unavailable"] if u["backend"] == "apple"]
    assert any("powermetrics reported no cpu/gpu/combined power" in r for r in reasons), reasons
    assert primary(result, "metal")["sensors"] is None


def test_powermetrics_text_output_replays_as_no_sample_with_what_it_printed() -> None:
    # The live probe waits 3 s for a first plist; the replay's text is there at once, so
    # half a second shows the same outcome (the CLI path is the test above's).
    mac, _ = replay.machine(load("mac-powermetrics-text"))
    found = apple.probe(dataclasses.replace(mac.apple, first_sample_s=0.5))
    assert not found.sensors
    assert any("no sample in 0.5 s; it printed '*** Sampled system activity" in p
               for p in found.problems), found.problems


def test_recording_a_replayed_machine_keeps_mig_instances_and_raw_output(
        tmp_path: Path) -> None:
    # The recorder run against the replay's stand-ins: what it writes must replay the same.
    gpus, _ = replay.machine(load("gpu-server-mig"))
    mac, _ = replay.machine(load("mac-powermetrics-raw"))
    roots = {k: tmp_path / k for k in ("rapl", "hwmon", "iio")}
    env = {"CUDA_VISIBLE_DEVICES": GPU1_MIG + "1"}
    # The replay prints a plist every 0.1 s from the start: 0.6 s records several, where a
    # live powermetrics gets 2 s.
    host = dataclasses.replace(mac.apple, record_s=0.6)
    data = snapshot.take(roots, {"accelerator": "cuda"}, seconds=0.2, env=env,
                         nvml_module=gpus.nvml, apple_host=host)
    assert data["version"] == 2 and data["env"] == env
    assert data["nvml"]["gpus"][1]["mig_devices"] == {"value": [GPU1_MIG + "1", GPU1_MIG + "2"]}
    pm = data["apple"]["powermetrics"]
    raw = "".join(text for _, text in pm["raw"])
    assert "<key>gpu_power</key>" in raw and raw.endswith("\0")  # whole plists, as printed
    assert {r["key"] for r in pm["readings"]} >= {"apple:gpu-power"}
    path = tmp_path / "again.json"
    path.write_text(json.dumps(data))
    again = replay.load(path)  # the schema takes what the recorder writes
    found = found_in(again)
    choice, why = choose_primary(found.sensors, Placement("cuda", None), env=again["env"])
    found.close()
    assert choice is not None and choice.sensors == [MIG_B], why
