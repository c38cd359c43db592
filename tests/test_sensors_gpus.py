"""AMD (amdgpu hwmon, amdsmi) and Intel (i915/xe hwmon) GPUs: the backends on real files, the
replayed machines of tests/fixtures/sensors/machines (built by gpu_machines.py there from the
kernel's documented layouts), and the primary choice for ROCm, Vulkan and SYCL placements."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from phase.decode.placement import parse
from phase.results import sensor_covers
from phase.sensors import discover
from phase.sensors.amd import amdgpu, amdsmi_gpu
from phase.sensors.core.primary import GpuUse, Placement, choose_primary
from phase.sensors.intel import intel_gpu
from phase.sensors.replay import replay
from phase.sensors.report import survey
from tests.replayed import choose, found_on, primary, replay_json

# --- the replayed machines: `phase sensors --replay --json` -------------------------------


def test_radeon_workstation_rocm_is_the_discrete_card_not_the_apu() -> None:
    data = replay_json("radeon-7900xtx-raphael")
    rows = {r["name"]: r for r in data["sensors"]}
    xtx = rows["amdgpu:0000:03:00.0:power"]
    assert (xtx["backend"], xtx["scope"], xtx["kind"], xtx["smoothing_s"]) == (
        "amdgpu", "chip", "power", 0.0)
    assert xtx["max_power_w"] == pytest.approx(402 * 1.25)  # power1_cap_max + 25%
    assert rows["amdgpu:0000:13:00.0:power-average"]["smoothing_s"] == 1.0
    rocm = primary(data, "rocm")
    assert rocm["this_build"] and rocm["sensors"] == ["amdgpu:0000:03:00.0:power"]
    assert "every discrete AMD GPU here" in rocm["reason"]
    assert xtx["window"]["mean_power_w"] == pytest.approx(22.5, abs=1.6)
    assert any("0000:13:00.0 is an APU" in n for n in data["notes"])


def test_mi300x_pair_summed_and_einval_on_power1_average_is_one_line_each() -> None:
    data = replay_json("mi300x-2x-einval")
    rocm = primary(data, "rocm")
    assert rocm["sensors"] == ["amdgpu:0000:0c:00.0:power", "amdgpu:0000:22:00.0:power"]
    assert "power readings of the 2 GPUs it used, summed" in rocm["reason"]
    einval = [u["reason"] for u in data["unavailable"] if u["backend"] == "amdgpu"]
    assert einval == [f"/sys/class/hwmon/hwmon{d}/power1_average: Invalid argument "
                      f"(amdgpu card {slot})" for d, slot in ((2, "0000:0c:00.0"),
                                                              (3, "0000:22:00.0"))]
    assert primary(data, "cpu")["sensors"] == ["rapl:package-0", "rapl:package-1"]


def test_arc_a770_i915_energy_counter_is_sycl_primary() -> None:
    data = replay_json("arc-a770-i915")
    rows = {r["name"]: r for r in data["sensors"]}
    arc = rows["i915:0000:03:00.0:energy"]
    assert (arc["kind"], arc["scope"], arc["device"]) == ("counter", "chip", "0000:03:00.0")
    assert arc["max_power_w"] == pytest.approx(410 * 1.25)  # power1_crit is the largest
    assert arc["window"]["mean_power_w"] == pytest.approx(38.0, rel=0.05)
    sycl = primary(data, "sycl")
    assert sycl["this_build"] and sycl["sensors"] == ["i915:0000:03:00.0:energy"]
    assert "i915 energy counter of the GPU it used" in sycl["reason"]


def test_battlemage_xe_package_is_chip_and_the_card_encloses_it() -> None:
    data = replay_json("battlemage-b580-xe")
    rows = {r["name"]: r for r in data["sensors"]}
    package, card = rows["xe:0000:03:00.0:package"], rows["xe:0000:03:00.0:card"]
    assert (package["scope"], card["scope"]) == ("chip", "board")
    assert card["encloses"] == ["xe:0000:03:00.0:package"] and package["encloses"] == []
    assert package["window"]["mean_power_w"] == pytest.approx(29.0, rel=0.05)
    assert card["window"]["mean_power_w"] == pytest.approx(41.0, rel=0.05)
    vulkan = primary(data, "vulkan")
    assert vulkan["this_build"] and vulkan["sensors"] == ["xe:0000:03:00.0:package"]


def test_odd_layouts_are_lines_not_tracebacks() -> None:
    data = replay_json("gpu-odd-layouts")
    reasons = "\n".join(f"{u['backend']}: {u['reason']}" for u in data["unavailable"])
    assert "hwmon1/device/uevent: no PCI_SLOT_NAME" in reasons
    assert "amdgpu card 0000:0a:00.0 shows neither power1_input nor power1_average" in reasons
    assert "cannot read /sys/class/hwmon/hwmon3/energy2_input: permission denied" in reasons
    names = [r["name"] for r in data["sensors"]]
    assert not any(n.startswith(("amdgpu:", "i915")) for n in names)  # i915_gt0 left out
    vulkan = primary(data, "vulkan")  # the card counter alone is not the chip's figure
    assert vulkan["sensors"] is None and "only a board-scope sensor" in vulkan["reason"]


# --- the primary choice from what llama.cpp logged ----------------------------------------


def test_rocm_matches_the_pci_bus_id_llama_cpp_logged() -> None:
    choice, _ = choose("mi300x-2x-einval", "rocm",
                       GpuUse("ROCm0", "AMD Instinct MI300X", "0000:22:00.0"))
    assert choice is not None and choice.sensors == ["amdgpu:0000:22:00.0:power"]
    assert "matched by the PCI bus id llama.cpp logged" in choice.reason
    assert choice.device == "rocm:0 0000:22:00.0"


def test_without_an_id_two_amd_gpus_for_one_used_is_refused() -> None:
    choice, why = choose("radeon-7900xtx-raphael", "rocm",
                         GpuUse("ROCm0", "AMD Radeon RX 7900 XTX"))
    assert choice is None and why is not None
    assert "used 1 AMD GPU(s), while 2 AMD GPU(s) are measurable" in why
    assert "--energy-sensor" in why


def test_without_an_id_one_intel_gpu_for_one_used_is_taken() -> None:
    choice, _ = choose("arc-a770-i915", "sycl", GpuUse("SYCL0", "Intel(R) Arc(TM) A770 Graphics"))
    assert choice is not None and choice.sensors == ["i915:0000:03:00.0:energy"]
    assert "as many as llama.cpp used (it logged no PCI bus id)" in choice.reason


def test_intel_integrated_gpu_has_a_clear_no_sensor_reason() -> None:
    choice, why = choose("arc-a770-i915", "vulkan",
                         GpuUse("Vulkan0", "Intel(R) UHD Graphics 770 (ADL-S GT1)",
                                "0000:00:02.0"))
    assert choice is None and why is not None
    assert "an Intel integrated GPU has no hwmon energy counter" in why
    assert "`--energy-sensor rapl:package-0` measures it with the CPU cores" in why


def test_partial_offload_adds_the_cpu_except_on_an_apu() -> None:
    choice, _ = choose("arc-a770-i915", "sycl", GpuUse("SYCL0", "Intel Arc A770"), layers=10)
    assert choice is not None and choice.sensors == ["i915:0000:03:00.0:energy", "rapl:package-0"]
    choice, _ = choose("radeon-7900xtx-raphael", "vulkan",
                       GpuUse("Vulkan0", "AMD Radeon Graphics (RADV RAPHAEL_MENDOCINO)",
                              "0000:13:00.0"), layers=10)
    assert choice is not None and choice.sensors == ["amdgpu:0000:13:00.0:power"]
    assert "CPU cores included" in choice.reason and "already" in choice.reason


def test_visibility_variable_without_ids_refuses_a_guess() -> None:
    choice, why = choose("mi300x-2x-einval", "rocm", GpuUse("ROCm0", "AMD Instinct MI300X"),
                         GpuUse("ROCm1", "AMD Instinct MI300X"),
                         env={"HIP_VISIBLE_DEVICES": "0,1"})
    assert choice is None and why is not None and "HIP_VISIBLE_DEVICES is set" in why


def test_llama_cpp_rocm_and_vulkan_log_lines_become_placements() -> None:
    log = ["llama_model_load_from_file_impl: using device ROCm0 (AMD Instinct MI300X) "
           "(0000:0c:00.0) - 196288 MiB free\n", "load_tensors: offloaded 29/29 layers to GPU\n"]
    placed = parse(log, offload_supported=True, n_layer=28, system_info="ROCm : NO_VMM = 1 |")
    assert placed.accelerator == "rocm" and placed.devices[0].pci_bus_id == "0000:0c:00.0"
    vulkan = parse(["using device Vulkan0 (Intel(R) Arc(tm) B580 Graphics (BMG G21)) "
                    "(unknown id) - 12216 MiB free\n", "offloaded 29/29 layers to GPU\n"],
                   offload_supported=True, n_layer=28,
                   system_info="")
    assert vulkan.accelerator == "vulkan" and vulkan.devices[0].pci_bus_id is None


# --- the backends on real files ------------------------------------------------------------


def _card(root: Path, d: str, name: str, slot: str | None, files: dict[str, str]) -> Path:
    device = root / d
    (device / "device").mkdir(parents=True)
    (device / "name").write_text(name + "\n")
    if slot is not None:
        (device / "device" / "uevent").write_text(f"DRIVER={name}\nPCI_SLOT_NAME={slot}\n")
    for f, text in files.items():
        (device / f).write_text(text + "\n")
    return device


def test_amdgpu_reads_microwatts_and_names_the_card(tmp_path: Path) -> None:
    _card(tmp_path, "hwmon4", "amdgpu", "0000:03:00.0",
          {"power1_average": "212000000", "power1_cap_max": "300000000"})
    found = amdgpu.probe(tmp_path)
    try:
        (sensor,) = found.sensors
        assert sensor.name == "amdgpu:0000:03:00.0:power-average"
        assert sensor.read_value() == pytest.approx(212.0) and sensor.part == "gpu-package"
        assert sensor.pci_bus_id == "0000:03:00.0" and found.problems == []
    finally:
        found.sensors[0].close()
    assert amdgpu.probe(tmp_path / "absent").problems == []  # no AMD GPU: silent


def test_intel_xe_one_channel_is_the_package_with_a_note(tmp_path: Path) -> None:
    _card(tmp_path, "hwmon2", "xe", "0000:03:00.0", {"energy1_input": "5000000"})
    _card(tmp_path, "hwmon3", "i915", "0000:04:00.0", {"power1_max": "0"})
    found = intel_gpu.probe(tmp_path)
    try:
        (sensor,) = found.sensors
        assert (sensor.name, sensor.scope, sensor.wrap_j) == ("xe:0000:03:00.0:package", "chip",
                                                              None)
        assert sensor.read_value() == pytest.approx(5.0)
        assert "read as the package counter" in found.notes[0]
        assert "i915 card 0000:04:00.0 has no energyN_input" in found.problems[0]
    finally:
        sensor.close()


class _Amdsmi:
    """A stand-in for ROCm's amdsmi module: the calls phase makes, one GPU whose counter
    advances at `counter_w` while it reports `power_w`."""

    def __init__(self, power_w: float, counter_w: float) -> None:
        self.power_w, self.counter_w, self.t0 = power_w, counter_w, 0.0
        import time

        self.clock = time.monotonic

    def amdsmi_init(self) -> None:
        self.t0 = self.clock()

    def amdsmi_get_processor_handles(self) -> list[str]:
        return ["h0"]

    def amdsmi_get_gpu_device_bdf(self, handle: str) -> str:
        return "0000:0C:00.0"

    def amdsmi_get_energy_count(self, handle: str) -> dict[str, float]:
        ticks = (self.clock() - self.t0) * self.counter_w / 15.3e-6
        return {"energy_accumulator": int(ticks), "counter_resolution": 15.3}

    def amdsmi_get_power_info(self, handle: str) -> dict[str, Any]:
        return {"current_socket_power": int(self.power_w), "average_socket_power": "N/A"}


def test_amdsmi_counter_is_kept_when_it_agrees_with_power_and_dropped_when_not() -> None:
    parts = {(0, 0x0C, 0, 0): "gpu-package"}
    good = amdsmi_gpu.probe(parts, _Amdsmi(power_w=150, counter_w=150))
    assert [s.name for s in good.sensors] == ["amdsmi:0000:0c:00.0:energy"]
    assert good.sensors[0].kind == "counter" and good.sensors[0].read_value() > 0
    bad = amdsmi_gpu.probe(parts, _Amdsmi(power_w=150, counter_w=150 * 40))
    assert bad.sensors == [] and "ROCm/amdsmi issue 38" in bad.problems[0]
    missing = amdsmi_gpu.probe(parts, SimpleNamespace())  # no amdsmi_init: not usable
    assert missing.sensors == [] and "did not initialise" in missing.notes[0]


def test_amdsmi_counter_outranks_hwmon_power_for_the_same_card(tmp_path: Path) -> None:
    _card(tmp_path / "hwmon", "hwmon2", "amdgpu", "0000:0c:00.0",
          {"power1_input": "150000000"})
    found = discover(tmp_path / "powercap", tmp_path / "hwmon", iio_root=tmp_path / "iio",
                     nvml_enabled=False, apple_enabled=False)
    assert [s.name for s in found.sensors] == ["amdgpu:0000:0c:00.0:power"]  # no amdsmi here
    found.close()
    from phase.sensors.discovery import Machine

    found = discover(tmp_path / "powercap", tmp_path / "hwmon", iio_root=tmp_path / "iio",
                     nvml_enabled=False, apple_enabled=False,
                     machine=Machine(amdsmi=_Amdsmi(power_w=150, counter_w=150)))
    try:
        choice, _ = choose_primary(found.sensors, Placement("rocm", None, 29, (
            GpuUse("ROCm0", "AMD Instinct MI300X", "0000:0c:00.0"),)), {})
        assert choice is not None and choice.sensors == ["amdsmi:0000:0c:00.0:energy"]
        assert "amdsmi energy counter" in choice.reason
    finally:
        found.close()


def test_survey_of_a_replay_has_rocm_sycl_and_vulkan_rows() -> None:
    found = found_on("battlemage-b580-xe")
    result = survey(found, hz=20.0, probe_s=0.2, slow_probe_s=0.3, build="vulkan", env={})
    assert [p["if_model_runs_on"] for p in result["primary"]] == ["cpu", "sycl", "vulkan"]


def test_snapshot_records_gpu_hwmon_files_and_replays_them(tmp_path: Path) -> None:
    from phase.sensors.replay import snapshot

    hwmon = tmp_path / "hwmon"
    _card(hwmon, "hwmon1", "amdgpu", "0000:03:00.0", {"power1_input": "95000000"})
    _card(hwmon, "hwmon2", "xe", "0000:05:00.0", {"energy1_input": "9000000",
                                                  "energy2_input": "7000000"})
    roots = {"rapl": tmp_path / "powercap", "hwmon": hwmon, "iio": tmp_path / "iio"}
    data = snapshot.take(roots, {"accelerator": "vulkan"}, seconds=0.05,
                         env={"GGML_VK_VISIBLE_DEVICES": "0"})
    files = data["fs"]["files"]
    assert files[str(hwmon / "hwmon1" / "device" / "uevent")]["text"].endswith("0000:03:00.0")
    # The raw text as the kernel gave it (snapshot version 2 keeps it, newline and all).
    assert files[str(hwmon / "hwmon2" / "energy2_input")]["text"] == "7000000\n"
    assert data["env"] == {"GGML_VK_VISIBLE_DEVICES": "0"}
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(data))
    machine, replay_roots = replay.machine(replay.load(path))
    found = discover(replay_roots["rapl"], replay_roots["hwmon"], iio_root=replay_roots["iio"],
                     machine=machine)
    try:
        assert [s.name for s in found.sensors if s.backend != "nvml"] == [
            "amdgpu:0000:03:00.0:power", "xe:0000:05:00.0:package", "xe:0000:05:00.0:card"]
        amd = next(s for s in found.sensors if s.name == "amdgpu:0000:03:00.0:power")
        assert amd.read_value() == pytest.approx(95.0)
    finally:
        found.close()


def test_what_an_amd_or_intel_chip_figure_covers() -> None:
    # A discrete card's socket figure is the GPU; an APU's socket is the whole SoC, so a host
    # comparing it with a discrete GPU's must not read as like for like.
    choice, _ = choose("radeon-7900xtx-raphael", "rocm", GpuUse("ROCm0", "", "0000:03:00.0"))
    assert choice is not None and choice.covers == ["gpu"]
    choice, _ = choose("radeon-7900xtx-raphael", "vulkan",
                       GpuUse("Vulkan0", "AMD Radeon Graphics (RADV RAPHAEL_MENDOCINO)",
                              "0000:13:00.0"), layers=10)
    assert choice is not None and choice.covers == ["cpu", "gpu", "soc"]
    choice, _ = choose("battlemage-b580-xe", "sycl", GpuUse("SYCL0", "Intel Arc B580"))
    assert choice is not None and choice.covers == ["gpu"]
    # The card counter, chosen by hand, covers the card's memory and board too.
    assert sensor_covers("intel_gpu", "xe:0000:03:00.0:card", "gpu-card") == (
        "gpu", "gpu-memory", "board")
