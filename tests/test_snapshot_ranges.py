"""A replayed snapshot whose raw numbers no machine reads (a negative energy, a counter past 64
bits, 1e30 µW, text that parses to infinity) makes that sensor unreadable, with the reason in
the report, so the chip-energy choice never picks it: for every source of raw numbers a snapshot
supplies (sysfs series and value files, NVML series and facts, zeus, powermetrics' readings
and its raw output through the live parser). Each case first checks that the sensor is the
chip-energy choice on the unaltered machine, so the test fails if the screen lets it through."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from replayed import MACHINES, driven_clock

from phase.campaign import DEFAULT_PLAN
from phase.cli import run_cli
from phase.sensors.replay import replay
from phase.sensors.replay.ranges import screen
from phase.sensors.report import survey_snapshot

RAPL = "/sys/class/powercap/intel-rapl:0/energy_uj"
Edit = Callable[[dict[str, Any]], None]


def _series(match: Callable[[str], bool], value: Callable[[int], Any]) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        for path, series in d["fs"]["series"].items():
            if match(path.rsplit("/", 1)[-1]):
                series["changes"] = [[t, value(v)] for t, v in series["changes"]]
    return edit


def _nvml(*keys: str, value: Callable[[int], Any]) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        for gpu in d["nvml"]["gpus"]:
            for key in keys:
                if gpu.get(key, {}).get("changes"):
                    gpu[key]["changes"] = [[t, value(v)] for t, v in gpu[key]["changes"]]
    return edit


def _rapl_text(d: dict[str, Any]) -> None:
    d["fs"]["files"][RAPL]["text"] = "1e400"
    d["fs"]["series"].pop(RAPL, None)


def _zeus(d: dict[str, Any]) -> None:
    for _t, sample in d["apple"]["zeus"]["changes"]:
        if sample.get("gpu_mj") is not None:
            sample["gpu_mj"] = -sample["gpu_mj"] - 1


def _readings(d: dict[str, Any]) -> None:
    for r in d["apple"]["powermetrics"]["readings"]:
        if r["key"] == "apple:gpu-power":
            r["w"] = 1e30


def _raw(d: dict[str, Any]) -> None:
    pm = d["apple"]["powermetrics"]
    pm["raw"] = [[t, text.replace("<integer>1700</integer>", "<real>1e400</real>")]
                 for t, text in pm["raw"]]


# (id, machine, edit, where the model runs, the sensor it must not pick, the reason's words)
CASES: list[tuple[str, str, Edit, str, str, str]] = [
    ("rapl-negative", "gpu-server-mig", _series(lambda n: n == "energy_uj", lambda v: -v - 1),
     "cpu", "rapl:package-0", "is negative"),
    ("rapl-past-64-bits", "gpu-server-mig",
     _series(lambda n: n == "energy_uj", lambda v: v + 2**64), "cpu", "rapl:package-0",
     "out of range"),
    ("rapl-text-infinite", "gpu-server-mig", _rapl_text, "cpu", "rapl:package-0",
     "'1e400' is not an integer (inf)"),
    ("nvml-energy-1e30", "gpu-server-mig", _nvml("energy_mj", value=lambda v: 10**30), "cuda",
     "nvml:GPU-bb22cc33:energy", "energy_mj 1000000000000000000000000000000 is out of range"),
    ("nvml-power-1e30", "gpu-server-mig",
     _nvml("energy_mj", "power_mw", "power_instant_mw", value=lambda v: -1), "cuda",
     "nvml:", "is negative"),
    ("hwmon-power-1e30-uW", "radeon-7900xtx-raphael",
     _series(lambda n: n.startswith("power"), lambda v: 10**30), "rocm", "amdgpu:", "out of range"),
    ("iio-rail-1e30", "jetson-nano-jp4",
     _series(lambda n: "power" in n, lambda v: 10**30), "cuda", "ina3221:", "out of range"),
    ("hwmon-current-1e30-mA", "jetson-orin-nano",
     _series(lambda n: n.startswith("curr"), lambda v: -(10**30)), "cuda", "ina3221:",
     "out of range"),
    ("zeus-negative-energy", "mac-m3-max-zeus", _zeus, "metal", "apple:gpu", "is negative"),
    ("powermetrics-reading-1e30-W", "mac-powermetrics", _readings, "metal", "apple:gpu-power",
     "1e+30 is out of range"),
    ("powermetrics-output-infinite", "mac-powermetrics-raw", _raw, "metal", "apple:gpu-power",
     "inf is not finite"),
]


def _survey(path: Path) -> dict[str, Any]:
    result = survey_snapshot(path, hz=DEFAULT_PLAN.sample_hz, probe_s=0.2, slow_probe_s=0.2,
                             sample_s=0.2, clock=driven_clock(replay.load(path)))
    return json.loads(json.dumps(result))


def _primary(result: dict[str, Any], where: str) -> list[str]:
    entry = next(p for p in result["primary"] if p["if_model_runs_on"] == where)
    return list(entry["sensors"] or [])


@pytest.mark.parametrize(("machine", "edit", "where", "sensor", "needle"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_hostile_raw_value_makes_its_sensor_unreadable_with_the_reason(
        tmp_path: Path, machine: str, edit: Edit, where: str, sensor: str,
        needle: str) -> None:
    data = json.loads((MACHINES / f"{machine}.json").read_text())
    before = _survey(MACHINES / f"{machine}.json")
    assert any(s.startswith(sensor) for s in _primary(before, where)), before["primary"]
    edit(data)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(data))
    after = _survey(path)
    assert not any(s.startswith(sensor) for s in _primary(after, where)), after["primary"]
    reasons = [u["reason"] for u in after["unavailable"]]
    assert any(needle in r for r in reasons), reasons
    assert any("unreadable" in r for r in reasons), reasons


def test_the_cli_reports_the_reason_and_exits_0(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads((MACHINES / "gpu-server-mig.json").read_text())
    _series(lambda n: n == "energy_uj", lambda v: -v - 1)(data)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(data))
    code = run_cli(["sensors", "--replay", str(path), "--json", "--probe", "0.05",
                    "--sample", "0.05"])
    out = capsys.readouterr()
    assert code == 0 and "Traceback" not in out.err, out.err
    report = json.loads(out.out)
    assert any(u["backend"] == "replay" and f"{RAPL}: unreadable: recorded value" in u["reason"]
               for u in report["unavailable"])
    assert _primary(report, "cpu") == []


def test_every_value_in_range_passes_untouched() -> None:
    for path in sorted(MACHINES.glob("*.json")):
        data = replay.load(path)
        assert data[replay.SCREENED] == [], path.name
        assert screen(data) == []
