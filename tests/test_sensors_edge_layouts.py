"""Layouts the first GPU backends got wrong (issue 32): MI250X's two dies, MI300A without its
APU-only file, Grace modules whose NVML counter holds the CPU, and AMD CPUs read by RAPL and
amd_energy at once. Replayed from tests/fixtures/sensors/machines (edge_machines.py builds
them from the kernel's and NVIDIA's documented layouts) and probed from real sysfs files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from phase.results import sensor_covers
from phase.sensors import discover
from phase.sensors.amd import amdgpu
from phase.sensors.core.primary import GpuUse, Placement, choose_primary
from phase.sensors.nvidia.nvml import Gpu
from phase.sensors.replay import replay
from tests.replayed import MACHINES, choose, primary, replay_json


def rocm(slot: str, k: int = 0) -> GpuUse:
    return GpuUse(f"ROCm{k}", "AMD Instinct MI250X", slot)


# --- MI250/MI250X: two dies, the package's power on the primary one ------------------------


def test_mi250x_secondary_dies_have_no_sensor_and_each_package_counts_once() -> None:
    data = replay_json("mi250x-4x-dual-die")
    names = [r["name"] for r in data["sensors"] if r["backend"] == "amdgpu"]
    assert names == [f"amdgpu:0000:{b}:00.0:power-average" for b in ("c1", "c9", "d1", "d9")]
    survey = primary(data, "rocm")
    assert survey["sensors"] == names and survey["covers"] == ["gpu"]
    assert "8 dies used, 4 figure(s), each package counted once" in survey["reason"]
    assert ("amdgpu cards 0000:c1:00.0 and 0000:c6:00.0 are the two dies of one MI250/MI250X "
            "package") in data["notes"][0]
    rows = {r["name"]: r for r in data["sensors"]}
    assert rows[names[0]]["window"]["mean_power_w"] == pytest.approx(213.0, abs=2.0)


@pytest.mark.parametrize(("used", "expected", "idle"), [
    # the secondary die alone: its package's figure, on the primary die, which it includes
    (("0000:c6:00.0",), ["0000:c1:00.0"], "0000:c1:00.0"),
    (("0000:c1:00.0",), ["0000:c1:00.0"], "0000:c6:00.0"),
    (("0000:c1:00.0", "0000:c6:00.0"), ["0000:c1:00.0"], None),  # both dies: counted once
    (("0000:c6:00.0", "0000:ce:00.0"), ["0000:c1:00.0", "0000:c9:00.0"], "0000:c1:00.0"),
])
def test_mi250x_a_die_llama_cpp_used_is_measured_by_its_package_figure(
        used: tuple[str, ...], expected: list[str], idle: str | None) -> None:
    chosen, why = choose("mi250x-4x-dual-die", "rocm",
                         *(rocm(s, k) for k, s in enumerate(used)))
    assert why is None and chosen is not None
    assert chosen.sensors == [f"amdgpu:{s}:power-average" for s in expected]
    assert chosen.device == ", ".join(f"rocm:{k} {s}" for k, s in enumerate(used))
    assert f"{len(used)} dies used, {len(expected)} figure(s)" in chosen.reason
    if idle:
        assert f"die(s) {idle}" in chosen.reason and "did not use" in chosen.reason
    else:
        assert "did not use" not in chosen.reason


def write_card(root: Path, d: str, pci_id: str, slot: str, files: dict[str, str]) -> None:
    (root / d / "device").mkdir(parents=True)
    (root / d / "name").write_text("amdgpu\n")
    (root / d / "device" / "uevent").write_text(
        f"DRIVER=amdgpu\nPCI_CLASS=38000\nPCI_ID={pci_id}\nPCI_SLOT_NAME={slot}\n")
    for name, text in files.items():
        (root / d / name).write_text(text + "\n")


def test_a_secondary_die_without_its_primary_is_one_problem_line(tmp_path: Path) -> None:
    write_card(tmp_path, "hwmon0", "1002:740C", "0000:c6:00.0",
               {"power1_average": "0", "power1_cap_max": "0"})
    write_card(tmp_path, "hwmon1", "1002:740F", "0000:05:00.0",  # MI210: one die, its own
               {"power1_average": "0", "power1_cap_max": "300000000"})
    found = amdgpu.probe(tmp_path)
    assert [s.name for s in found.sensors] == ["amdgpu:0000:05:00.0:power-average"]
    assert len(found.problems) == 1
    assert "0000:c6:00.0 is the secondary die of a dual-die MI250/MI250X" in found.problems[0]


# --- MI300A: an APU the driver does not mark with in1_input --------------------------------


def test_mi300a_is_told_by_its_pci_id_and_an_mi300x_is_not(tmp_path: Path) -> None:
    write_card(tmp_path, "hwmon0", "1002:74A0", "0000:02:00.0",
               {"power1_input": "180000000", "power1_cap_max": "550000000"})
    write_card(tmp_path, "hwmon1", "1002:74A1", "0000:0c:00.0",
               {"power1_input": "150000000", "power1_cap_max": "750000000"})
    found = amdgpu.probe(tmp_path)
    assert [(s.name, s.part) for s in found.sensors] == [
        ("amdgpu:0000:02:00.0:power", "apu-soc"), ("amdgpu:0000:0c:00.0:power", "gpu-package")]
    assert found.notes == ["amdgpu card 0000:02:00.0 is an APU: its power figure is the whole "
                           "SoC's, CPU cores included (amdgpu_pm.c)"]


def test_mi300a_partial_offload_adds_no_cpu_and_covers_the_cpu() -> None:
    data = replay_json("mi300a-4x-apu")
    assert primary(data, "rocm")["covers"] == ["cpu", "gpu", "soc"]
    chosen, why = choose("mi300a-4x-apu", "rocm",
                         GpuUse("ROCm0", "AMD Instinct MI300A", "0000:42:00.0"), layers=12)
    assert why is None and chosen is not None
    assert chosen.sensors == ["amdgpu:0000:42:00.0:power"]
    assert chosen.covers == ["cpu", "gpu", "soc"]
    assert "an APU" in chosen.reason and "in it already" in chosen.reason
    assert "3 other APU socket(s) here are not in the figure" in chosen.reason


# --- Grace Hopper and Grace Blackwell: NVML's counter is the module's -----------------------


def test_gh200_module_counter_covers_the_grace_and_nothing_is_added() -> None:
    data = replay_json("gh200-module")
    cuda = primary(data, "cuda")
    module = ["cpu", "uncore", "gpu", "gpu-memory", "dram", "board"]
    assert cuda["sensors"] == ["nvml:GPU-6a7b8c9d:energy"] and cuda["covers"] == module
    assert "covers the whole module" in cuda["reason"]
    # the GPU-scope power readings beside it do not claim the CPU
    assert sensor_covers("nvml", "nvml:GPU-6a7b8c9d:power", "gpu") == (
        "gpu", "gpu-memory", "board")
    # no RAPL on Arm: a CPU-only run is measured by the module that holds the Grace
    cpu = primary(data, "cpu")
    assert cpu["sensors"] == ["nvml:GPU-6a7b8c9d:energy"] and cpu["covers"] == module
    # partial offload: the CPU's share is in the module figure, and no CPU sensor is needed
    chosen, why = choose("gh200-module", "cuda",
                         GpuUse("CUDA0", "NVIDIA GH200 480GB", "0009:01:00.0"), layers=10)
    assert why is None and chosen is not None
    assert chosen.sensors == ["nvml:GPU-6a7b8c9d:energy"] and "in it already" in chosen.reason
    assert not any("power_meter" in u["reason"] for u in data["unavailable"])


def test_gb200_one_gpu_is_its_module_and_two_are_refused() -> None:
    data = replay_json("gb200-two-gpus")
    both = primary(data, "cuda")
    assert both["sensors"] is None or not both["sensors"]
    assert "count a Grace twice" in both["reason"]
    assert primary(data, "cpu")["sensors"] in (None, [])  # which GPU holds the Grace: unknown
    chosen, why = choose("gb200-two-gpus", "cuda",
                         GpuUse("CUDA0", "NVIDIA GB200", "0018:01:00.0"))
    assert why is None and chosen is not None
    assert chosen.sensors == ["nvml:GPU-1c2d3e4f:energy"]
    assert "cpu" in chosen.covers and "dram" in chosen.covers


@pytest.mark.parametrize(("name", "c2c", "module"), [
    ("NVIDIA GH200 480GB", None, True),  # a driver without the C2C call: the name decides
    ("NVIDIA H100 80GB HBM3", None, False),
    ("NVIDIA H100 80GB HBM3", True, True),
    ("NVIDIA GH200 480GB", False, False),  # NVML's answer wins over the name
])
def test_grace_module_from_c2c_mode_or_the_name(name: str, c2c: bool | None,
                                                module: bool) -> None:
    assert Gpu(0, None, name=name, c2c=c2c).grace_module is module


# --- AMD EPYC under RAPL powercap, amd_energy beside it -------------------------------------


def test_epyc_with_both_drivers_sums_rapl_packages_only() -> None:
    data = replay_json("epyc-2s-rapl-and-amd-energy")
    cpu = primary(data, "cpu")
    assert cpu["sensors"] == ["rapl:package-0", "rapl:package-1"]
    assert "amd_energy's socket counters read the same MSRs, so they are not added" in \
        cpu["reason"]
    rows = {r["name"]: r for r in data["sensors"]}
    assert "amd_energy:socket-0" in rows and not any("core" in n for n in rows)
    total = sum(rows[n]["window"]["mean_power_w"] for n in cpu["sensors"])
    assert total == pytest.approx(180.0 + 176.0, rel=0.05)


def test_epyc_with_one_rapl_zone_for_two_sockets_takes_amd_energy() -> None:
    data = replay_json("epyc-2s-one-rapl-zone")
    cpu = primary(data, "cpu")
    assert cpu["sensors"] == ["amd_energy:socket-0", "amd_energy:socket-1"]
    assert "RAPL shows only 1 package zone(s)" in cpu["reason"]
    assert cpu["covers"] == ["cpu", "uncore"]


def test_recording_a_grace_module_keeps_its_c2c_mode(tmp_path: Path) -> None:
    # The recorder run against the replay's NVML stand-in: what it writes replays the same.
    from phase.sensors.replay import snapshot

    roots = {k: tmp_path / k for k in ("rapl", "hwmon", "iio")}
    recorded = {}
    for name in ("gh200-module", "h100-averaged"):
        machine, _ = replay.machine(replay.load(MACHINES / f"{name}.json"))
        data = snapshot.take(roots, {"accelerator": "cuda"}, seconds=0.1, env={},
                             nvml_module=machine.nvml, apple_host=machine.apple)
        recorded[name] = data["nvml"]["gpus"][0]["c2c_mode"]
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        again, _ = replay.machine(replay.load(path))
        found = discover(tmp_path / "rapl", tmp_path / "hwmon", iio_root=tmp_path / "iio",
                         machine=again)
        parts = {s.name.rsplit(":", 1)[1]: s.part for s in found.sensors if s.backend == "nvml"}
        found.close()
        assert parts["energy"] == ("gpu-module" if name == "gh200-module" else "gpu")
    assert recorded["gh200-module"] == {"value": 1}
    assert "value" not in recorded["h100-averaged"]  # not recorded then: NVML cannot say


def test_partial_offload_on_one_of_two_gh200_modules_says_the_other_grace_is_out(
        tmp_path: Path) -> None:
    data = json.loads((MACHINES / "gh200-module.json").read_text())
    second = json.loads(json.dumps(data["nvml"]["gpus"][0]))
    second |= {"index": 1, "uuid": {"value": "GPU-7b8c9d0e-1f2a-3b4c-5d6e-7f8a9b0c1d2e"},
               "pci_bus_id": {"value": "00000019:01:00.0"}}
    data["nvml"]["gpus"].append(second)
    path = tmp_path / "gh200-2x.json"
    path.write_text(json.dumps(data))
    machine, roots = replay.machine(replay.load(path))
    found = discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=machine)
    try:
        used = GpuUse("CUDA0", "NVIDIA GH200 480GB", "0009:01:00.0")
        chosen, why = choose_primary(found.sensors, Placement("cuda", 10, 29, (used,)), {})
        cpu, _ = choose_primary(found.sensors, Placement("cpu"), {})
    finally:
        found.close()
    assert why is None and chosen is not None
    assert chosen.sensors == ["nvml:GPU-6a7b8c9d:energy"]
    assert "1 other module(s) here are not in the figure" in chosen.reason
    assert cpu is not None and len(cpu.sensors) == 2  # CPU-only: both modules' Graces
    # Grace Blackwell: the other GPU shares this Grace, so nothing is said to be left out
    one, _ = choose("gb200-two-gpus", "cuda", GpuUse("CUDA0", "NVIDIA GB200", "0008:01:00.0"),
                    layers=10)
    assert one is not None and "in it already)" in one.reason


class _TwoDieAmdsmi:
    """ROCm's amdsmi as an MI250X shows it (the calls phase makes): both dies are devices,
    the primary's counter advances at the package's power, the secondary's not at all."""

    def __init__(self) -> None:
        import time

        self.clock, self.t0 = time.monotonic, time.monotonic()
        self.watts = {"c1": 213.0, "c6": 0.0}

    def amdsmi_init(self) -> None:
        self.t0 = self.clock()

    def amdsmi_get_processor_handles(self) -> list[str]:
        return ["c1", "c6"]

    def amdsmi_get_gpu_device_bdf(self, handle: str) -> str:
        return f"0000:{handle}:00.0"

    def amdsmi_get_energy_count(self, handle: str) -> dict[str, float]:
        ticks = (self.clock() - self.t0) * self.watts[handle] / 15.3e-6
        return {"energy_accumulator": int(ticks), "counter_resolution": 15.3}

    def amdsmi_get_power_info(self, handle: str) -> dict[str, Any]:
        return {"current_socket_power": "N/A", "average_socket_power": int(self.watts[handle])}


def test_mi250x_amdsmi_counter_stands_for_both_dies_and_counts_once(tmp_path: Path) -> None:
    from phase.sensors.discovery import Machine

    hwmon = tmp_path / "hwmon"
    write_card(hwmon, "hwmon1", "1002:740C", "0000:c1:00.0",
               {"power1_average": "213000000", "power1_cap_max": "560000000"})
    write_card(hwmon, "hwmon2", "1002:740C", "0000:c6:00.0",
               {"power1_average": "0", "power1_cap_max": "0"})
    found = discover(tmp_path / "powercap", hwmon, iio_root=tmp_path / "iio",
                     nvml_enabled=False, apple_enabled=False,
                     machine=Machine(amdsmi=_TwoDieAmdsmi()))
    try:
        names = [s.name for s in found.sensors]
        assert names == ["amdgpu:0000:c1:00.0:power-average", "amdsmi:0000:c1:00.0:energy"]
        both = (rocm("0000:c1:00.0", 0), rocm("0000:c6:00.0", 1))
        choice, why = choose_primary(found.sensors, Placement("rocm", None, 29, both), {})
    finally:
        found.close()
    assert why is None and choice is not None
    assert choice.sensors == ["amdsmi:0000:c1:00.0:energy"]  # one figure, not one per die
