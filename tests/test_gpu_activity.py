"""Other work on the GPU (issue 29, item 1): NVML's utilisation while this process is idle and
the compute processes besides it, read through a replayed H200 snapshot (the machine's own
answers, with a neighbour added the way NVML would show one), and judged with the CPU load."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from factories import make_results, replaced

from phase.analysis.queries import is_disturbed
from phase.sensors.discovery import discover
from phase.sensors.nvidia.gpu_activity import describe, gpu_activity
from phase.sensors.replay import replay
from phase.validate import validate_results

H200 = Path(__file__).parent / "fixtures/sensors/machines/h200-device-run.json"
OWN = 31337  # this process, as NVML would list it


def _machine(tmp_path: Path, utilization: int | dict[str, object],
             pids: list[int] | dict[str, object]) -> list:
    data = json.loads(H200.read_text())
    data = copy.deepcopy(data)
    gpu = data["nvml"]["gpus"][0]
    gpu["utilization_pct"] = utilization if isinstance(utilization, dict) \
        else {"value": utilization}
    gpu["compute_pids"] = pids if isinstance(pids, dict) else {"value": pids}
    path = tmp_path / "h200.json"
    path.write_text(json.dumps(data))
    machine, roots = replay.machine(replay.load(path))
    found = discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=machine)
    return found.sensors


def test_a_neighbour_on_the_gpu_is_seen(tmp_path: Path) -> None:
    sensors = _machine(tmp_path, 63, [OWN, 4242])
    assert any(s.backend == "nvml" for s in sensors)
    activity = gpu_activity(sensors, own_pid=OWN)
    assert activity is not None
    assert activity.busy == pytest.approx(0.63)
    assert activity.other_processes == 1 and activity.reason is None
    line = describe(activity)
    assert line is not None and "63%" in line and "1 other compute process" in line


def test_an_idle_gpu_alone_says_nothing(tmp_path: Path) -> None:
    activity = gpu_activity(_machine(tmp_path, 0, [OWN]), own_pid=OWN)
    assert activity is not None and (activity.busy, activity.other_processes) == (0.0, 0)
    assert describe(activity) is None


def test_in_another_pid_namespace_one_context_is_taken_as_ours(tmp_path: Path) -> None:
    activity = gpu_activity(_machine(tmp_path, 0, [77, 78]), own_pid=OWN)
    assert activity is not None and activity.other_processes == 1
    assert activity.reason is not None and "pid namespace" in activity.reason


def test_an_nvml_error_is_a_reason_not_a_zero(tmp_path: Path) -> None:
    sensors = _machine(tmp_path, {"code": 3, "error": "Not Supported"}, [OWN])
    activity = gpu_activity(sensors, own_pid=OWN)
    assert activity is not None and activity.busy is None
    assert activity.reason is not None and "utilisation" in activity.reason


def test_no_nvidia_gpu_no_claim() -> None:
    assert gpu_activity([]) is None


@pytest.mark.parametrize(("cpu", "gpu", "threshold", "expected"), [
    (0.1, 0.63, 0.25, True),  # a neighbour kept the GPU busy
    (0.3, None, 0.25, True),  # the CPU's own case
    (0.1, 0.1, 0.25, False),
    (None, None, 0.25, False),
    (0.9, 0.9, None, False),  # not judged
])
def test_disturbed_judges_cpu_and_gpu(cpu: float | None, gpu: float | None,
                                      threshold: float | None, expected: bool) -> None:
    assert is_disturbed(cpu, gpu, threshold) is expected


def _with_loads(disturbed: bool, gpu_busy: float) -> object:
    results = make_results(sensors=[], repeats=2)
    results = replaced(results, config=replaced(results.config, disturbed_load=0.25))
    runs = [replaced(r, foreign_load=0.05, gpu_busy_before=0.0, gpu_other_processes=0)
            for r in results.runs]
    runs[1] = replaced(runs[1], gpu_busy_before=gpu_busy, gpu_other_processes=1,
                       disturbed=disturbed)
    return replaced(results, runs=runs)


def test_a_disturbed_claim_the_loads_do_not_support_blocks() -> None:
    # A GPU kept 70% busy by a neighbour, recorded as undisturbed: the run would count.
    kept = [f for f in validate_results(_with_loads(False, 0.7), "r.json").findings
            if f.rule == "consistency" and f.json_path.endswith(".disturbed")]
    assert kept and "GPU busy 0.7" in kept[0].message
    # A quiet run marked disturbed: it would be left out of every figure.
    hidden = [f for f in validate_results(_with_loads(True, 0.0), "r.json").findings
              if f.rule == "consistency" and f.json_path.endswith(".disturbed")]
    assert hidden and "make it false" in hidden[0].message
