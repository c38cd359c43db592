"""Which chip (issue 12): the primary energy sensors follow the device that ran the model,
as llama.cpp logged it; `analysis.primary_energy_j` sums them; the counter-edges rule; the
fixture machines are snapshots replayed from tests/fixtures/sensors/machines."""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import make_results, make_sensor, make_window, replaced

from phase.analysis import board_sensor, primary_energy_j, primary_sensors
from phase.base.errors import UsageProblem
from phase.decode.placement import parse
from phase.results import PrimaryEnergy
from phase.sensors import discover
from phase.sensors.core.primary import GpuUse, Placement, choose_primary, override_primary, pci_key
from phase.sensors.replay import replay
from phase.validate import validate_results

MACHINES = Path(__file__).parent / "fixtures" / "sensors" / "machines"

# The lines llama.cpp 0.3.36 logs while loading (src/llama.cpp, src/llama-model.cpp formats)
CUDA_LOG = [
    "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA H100 80GB HBM3) "
    "(0000:2a:00.0) - 80614 MiB free\n",
    "load_tensors: offloading output layer to GPU\n",
    "load_tensors: offloading 30 repeating layers to GPU\n",
    "load_tensors: offloaded 31/31 layers to GPU\n",
]
CUDA_INFO = "CUDA : ARCHS = 900 | USE_GRAPHS = 1 | CPU : SSE3 = 1 | AVX2 = 1 |"


def machine(name: str):  # type: ignore[no-untyped-def]
    data = replay.load(MACHINES / f"{name}.json")
    m, roots = replay.machine(data)
    return discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=m)


# --- where the model ran, read from llama.cpp ---------------------------------------------


def test_placement_is_read_from_the_load_log() -> None:
    p = parse(CUDA_LOG, offload_supported=True, n_layer=30, system_info=CUDA_INFO)
    assert (p.accelerator, p.n_gpu_layers_offloaded, p.n_layers) == ("cuda", 31, 31)
    assert [(d.name, d.pci_bus_id) for d in p.devices] == [("CUDA0", "0000:2a:00.0")]
    older = parse(["llama_model_load_from_file_impl: using device CUDA0 (NVIDIA A100) - 1 MiB "
                   "free\n", "load_tensors: offloaded 10/29 layers to GPU\n"],
                  offload_supported=True, n_layer=28, system_info=CUDA_INFO)
    assert older.devices[0].pci_bus_id is None and older.n_gpu_layers_offloaded == 10
    cpu = parse([], offload_supported=False, n_layer=30, system_info="CPU : AVX2 = 1 |")
    assert (cpu.accelerator, cpu.n_gpu_layers_offloaded, cpu.n_layers, cpu.devices) == \
        ("cpu", 0, 31, ())


@pytest.mark.model
def test_the_engine_reports_where_the_model_ran(test_model_path: Path) -> None:
    from phase.decode import Engine

    with Engine(test_model_path, n_ctx=128, n_threads=1) as engine:
        placement = engine.placement()
    assert placement.accelerator == "cpu"  # this machine's build has no GPU offload
    assert placement.n_gpu_layers_offloaded == 0 and placement.n_layers == 31  # 30 + output


# --- the choice on fixture machines ---------------------------------------------------------


def test_cpu_only_with_rapl_chooses_the_package(powercap: Path) -> None:
    found = discover(rapl_root=powercap, hwmon_root=powercap / "none", nvml_enabled=False,
                     apple_enabled=False)
    choice, why = choose_primary(found.sensors, Placement("cpu"))
    assert why is None and choice is not None
    assert choice.sensors == ["rapl:package-0"] and choice.device == "cpu"
    assert choice.chosen_by == "auto" and "RAPL package zone" in choice.reason
    found.close()


def test_gpu_offload_with_rapl_and_nvml_chooses_the_gpu_llama_cpp_named() -> None:
    found = machine("gpu-server-2x-h100")
    p = parse(CUDA_LOG, offload_supported=True, n_layer=30, system_info=CUDA_INFO)
    placement = Placement(p.accelerator, p.n_gpu_layers_offloaded, p.n_layers,
                          tuple(GpuUse(d.name, d.description, d.pci_bus_id) for d in p.devices))
    choice, _ = choose_primary(found.sensors, placement, env={})
    # CUDA0 is at PCI 0000:2a:00.0, which NVML lists second: matched by bus id, not index
    assert choice is not None and choice.sensors == ["nvml:GPU-a09e77c3:energy"]
    assert choice.device == "cuda:0 GPU-a09e77c3-52d8-1f4b-8e60-3b9d14f2c7a8"
    assert "31 of 31 layers offloaded" in choice.reason
    found.close()


def test_cuda_visible_devices_maps_uuids_and_indices() -> None:
    found = machine("gpu-server-2x-h100")
    on_gpu = Placement("cuda", None)
    by_uuid, _ = choose_primary(found.sensors, on_gpu, env={"CUDA_VISIBLE_DEVICES": "GPU-a09e"})
    assert by_uuid is not None and by_uuid.sensors == ["nvml:GPU-a09e77c3:energy"]
    by_index, _ = choose_primary(found.sensors, on_gpu, env={"CUDA_VISIBLE_DEVICES": "1,0"})
    assert by_index is not None and by_index.sensors == ["nvml:GPU-a09e77c3:energy",
                                                         "nvml:GPU-4f5a2b71:energy"]
    none, why = choose_primary(found.sensors, on_gpu, env={"CUDA_VISIBLE_DEVICES": "MIG-1234"})
    assert none is None and "MIG-1234" in (why or "")
    found.close()


def test_partial_offload_sums_the_gpu_and_the_cpu() -> None:
    found = machine("gpu-server-2x-h100")
    placement = Placement("cuda", 10, 29, (GpuUse("CUDA0", "H100", "0000:18:00.0"),))
    choice, _ = choose_primary(found.sensors, placement, env={})
    assert choice is not None
    assert choice.sensors == ["nvml:GPU-4f5a2b71:energy", "rapl:package-0", "rapl:package-1"]
    assert "the CPU, which ran the other layers" in choice.reason
    found.close()


def test_override_names_sensors_and_records_the_automatic_choice() -> None:
    found = machine("gpu-server-2x-h100")
    on_gpu = Placement("cuda", None)
    chosen = override_primary(found.sensors, ["rapl:package-0"], on_gpu, env={})
    assert chosen.chosen_by == "override" and chosen.sensors == ["rapl:package-0"]
    # What an override covers is what the named sensors cover, not the automatic choice.
    assert chosen.covers == ["cpu", "uncore"]
    both = override_primary(found.sensors, ["nvml:GPU-4f5a2b71:energy", "rapl:package-0"],
                            on_gpu, env={})
    assert both.covers == ["cpu", "uncore", "gpu", "gpu-memory", "board"]
    assert "--energy-sensor" in chosen.reason and "nvml:GPU-4f5a2b71:energy" in chosen.reason
    with pytest.raises(UsageProblem, match="no such sensor nope"):
        override_primary(found.sensors, ["nope"], on_gpu, env={})
    found.close()


def test_no_sensor_for_the_device_is_none_with_a_reason() -> None:
    found = machine("intel-laptop-psys")
    choice, why = choose_primary(found.sensors, Placement("cuda", None), env={})
    assert choice is None and "NVML found no GPU sensor" in (why or "")
    found.close()


def test_pci_ids_of_nvml_and_cuda_compare_equal() -> None:
    assert pci_key("00000000:2A:00.0") == pci_key("0000:2a:00.0") == (0, 0x2A, 0, 0)
    assert pci_key("unknown id") is None and pci_key(None) is None


# --- reading it back: analysis.primary_energy_j ---------------------------------------------


def _two_gpu_file(**changes: object):  # type: ignore[no-untyped-def]
    sensors = [make_sensor("gpu0"), make_sensor("gpu1"), make_sensor("cpu0"),
               make_sensor("wall", scope="wall", kind="power", encloses=["gpu0", "gpu1", "cpu0"]),
               make_sensor("dram", scope="module", encloses=[])]
    primary = PrimaryEnergy(sensors=["gpu0", "gpu1"], device="cuda:0 GPU-a, cuda:1 GPU-b",
                            reason="the model ran on cuda", chosen_by="auto")
    return make_results(sensors=sensors, primary_energy=primary,
                        energy=lambda slot, sensor, window_s: {
                            "gpu0": 300.0, "gpu1": 200.0, "cpu0": 50.0, "wall": 700.0,
                            "dram": 20.0}[sensor.name] * window_s, **changes)


def test_primary_energy_is_the_sum_of_its_sensors() -> None:
    results = _two_gpu_file()
    run = results.runs[0]
    assert primary_sensors(results) == ["gpu0", "gpu1"]
    assert primary_energy_j(results, run) == (pytest.approx(500.0), None)
    # the board column is the sensor that encloses the chip sensors, never the dram zone
    assert board_sensor(results) == "wall"


def test_a_missing_part_makes_it_none_with_the_reason() -> None:
    results = _two_gpu_file()
    run = results.runs[0]
    broken = [w if w.sensor != "gpu1" else make_window("gpu1", energy_j=None,
                                                       start_unix_s=w.start_unix_s)
              for w in run.energy]
    runs = list(results.runs)
    runs[0] = replaced(run, energy=[w.model_dump() for w in broken])
    results = replaced(results, runs=runs)
    energy, why = primary_energy_j(results, results.runs[0])
    assert energy is None and "gpu1" in (why or "")


def test_a_rejected_part_makes_it_none_with_the_rule() -> None:
    results = _two_gpu_file()
    report = validate_results(results, "f.json")

    class OneRejected:
        def rejection_of(self, run_id: str, sensor: str):  # type: ignore[no-untyped-def]
            if sensor == "gpu0":
                return report.findings[0] if report.findings else _Finding()
            return None

    energy, why = primary_energy_j(results, results.runs[0], OneRejected())
    assert energy is None and "gpu0 rejected by" in (why or "")


class _Finding:
    rule = "impossible"
    message = "fixture"


def test_older_files_fall_back_to_the_ranked_chip_sensor() -> None:
    results = make_results()  # no primary_energy: a file from before it was recorded
    assert primary_sensors(results) == ["chip"]
    assert primary_energy_j(results, results.runs[0]) == (pytest.approx(10.0), None)
    none = make_results(primary_energy_reason="no sensor measures the CPU")
    assert primary_energy_j(none, none.runs[0]) == (None, "no sensor measures the CPU")


def test_summary_uses_the_primary_sum() -> None:
    from phase.analysis import summarize

    results = _two_gpu_file()
    summary = summarize(results, validate_results(results, "f.json"), "f.json")
    row = summary.rows[0]
    assert row.chip_mj_per_token == pytest.approx(500.0 / 16 * 1000)
    assert summary.chip_sensor == "gpu0 + gpu1" and summary.board_sensor == "wall"


# --- the counter-edges rule -----------------------------------------------------------------


def _with_edge_error(error_j: float):  # type: ignore[no-untyped-def]
    results = make_results()
    runs = []
    for run in results.runs:
        windows = [replaced(w, edge_error_j=error_j) for w in run.energy]
        runs.append(replaced(run, energy=[w.model_dump() for w in windows]))
    return replaced(results, runs=runs)


def test_counter_edges_rejects_a_window_its_edges_leave_uncertain() -> None:
    tripping = validate_results(_with_edge_error(0.6), "f.json")  # 6% of 10 J
    found = [f for f in tripping.findings if f.rule == "counter-edges"]
    assert len(found) == 3 and all(f.severity == "rejected" for f in found)
    assert "±0.6 J" in found[0].message and found[0].numbers["min_window_s"] == pytest.approx(1.2)
    inside = validate_results(_with_edge_error(0.5), "f.json")  # exactly 5%: stands
    assert not [f for f in inside.findings if f.rule == "counter-edges"]


# --- a real GPU campaign (bench/device_campaign.py on an H200, CUDA build) -------------------

RESULTS = Path(__file__).parent / "fixtures" / "results"


@pytest.mark.parametrize(("name", "edge_rejections"), [("h200-campaign-512", 3),
                                                       ("h200-campaign-2048", 0)])
def test_real_h200_campaign_records_the_gpu_as_primary(name: str, edge_rejections: int) -> None:
    from phase.results import load_raw

    results = load_raw(RESULTS / f"{name}.json")
    p = results.provenance
    assert (p.accelerator, p.n_gpu_layers_offloaded, p.n_layers) == ("cuda", 31, 31)
    assert results.primary_energy is not None
    assert results.primary_energy.sensors == ["nvml:GPU-64a24bf1:energy"]
    assert results.primary_energy.device.startswith("cuda:0 GPU-64a24bf1-")
    for run in results.runs:
        energy, why = primary_energy_j(results, run)
        (window,) = [w for w in run.energy if w.sensor == "nvml:GPU-64a24bf1:energy"]
        assert why is None and energy == window.energy_j and window.edge_error_j
    report = validate_results(results, name)
    edges = [f for f in report.findings if f.rule == "counter-edges"]
    assert len(edges) == edge_rejections
    # the 1 s averaged power reading is rejected as lagged in every run; the counter is not
    lagged = {f.sensor for f in report.findings if f.rule == "sensor-lag"}
    assert lagged == {"nvml:GPU-64a24bf1:power"}
