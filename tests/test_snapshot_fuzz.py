"""No snapshot makes `phase sensors --replay` print a traceback: a malformed one is refused
with one line naming the file and the JSON path (exit 2, the usage-error code of
phase.base.errors), and any other is replayed or fails with one line."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from phase.cli import run_cli

MACHINES = Path(__file__).parent / "fixtures" / "sensors" / "machines"
ENERGY = "/sys/class/powercap/intel-rapl:0/energy_uj"


def _mig() -> dict[str, Any]:
    return json.loads((MACHINES / "gpu-server-mig.json").read_text())


Edit = Callable[[dict[str, Any]], Any]
# (what is wrong, how to make it so from gpu-server-mig.json, the JSON path the line names)
MALFORMED: list[tuple[str, Edit, str]] = [
    ("not an object", lambda d: [d], "$.format"),
    ("version a string", lambda d: d.update(version="2"), "$.version"),
    ("a newer version", lambda d: d.update(version=3), "$.version"),
    ("no roots", lambda d: d.pop("roots"), "$.roots"),
    ("a root null", lambda d: d["roots"].update(rapl=None), "$.roots.rapl"),
    ("an index as a string", lambda d: d["nvml"]["gpus"][0].update(index="0"),
     "$.nvml.gpus[0].index"),
    ("GPUs out of order", lambda d: d["nvml"]["gpus"].reverse(), "$.nvml"),
    ("a negative time", lambda d: d["fs"]["series"][ENERGY]["changes"][0].__setitem__(0, -1.0),
     f"$.fs.series.{ENERGY}.changes[0][0]"),
    ("times going back", lambda d: d["fs"]["series"][ENERGY]["changes"].reverse(),
     f"$.fs.series.{ENERGY}"),
    ("a counter value as text", lambda d: d["fs"]["series"][ENERGY]["changes"][1]
     .__setitem__(1, "12"), f"$.fs.series.{ENERGY}.changes[1][1]"),
    ("a relative path", lambda d: d["fs"]["files"].update({"sys/x": {"text": "1"}}),
     "$.fs.files.sys/x"),
    ("an unknown key", lambda d: d["nvml"]["gpus"][0].update(typo=1), "$.nvml.gpus[0].typo"),
    ("MIG instances not a list", lambda d: d["nvml"]["gpus"][1]["mig_devices"]
     .update(value="MIG-1"), "$.nvml.gpus[1].mig_devices.value"),
    ("a CUDA index out of place", lambda d: d["cuda"]["devices"][0].update(index=3), "$.cuda"),
    ("a bus id that is none", lambda d: d["cuda"]["devices"][0].update(pci_bus_id="zz"),
     "$.cuda.devices[0].pci_bus_id"),
    ("an absurd interval", lambda d: d["apple"].update(
        system="Darwin", powermetrics={"interval_s": 1e9}), "$.apple.powermetrics.interval_s"),
    ("output before its start", lambda d: d["apple"].update(
        powermetrics={"interval_s": 0.1, "raw": [[-0.5, "x"]]}), "$.apple.powermetrics.raw[0][0]"),
    ("a mode that is none", lambda d: d["fs"]["files"][ENERGY].update(mode="rw"),
     f"$.fs.files.{ENERGY}.mode"),
]


@pytest.mark.parametrize(("what", "edit", "where"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_snapshot_is_one_line_naming_file_and_json_path(
        tmp_path: Path, what: str, edit: Edit, where: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    data = _mig()
    replaced = edit(data)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(replaced if isinstance(replaced, list) else data))
    assert run_cli(["sensors", "--replay", str(path)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "Traceback" not in captured.out + captured.err and len(err.splitlines()) == 1
    assert err.startswith(f"error: {path}: {where}"), err


@pytest.mark.parametrize("text", [
    "",  # empty
    '{"format": "phase-sensors-snapshot", "version": 2, "roots": {',  # truncated
    '{"format": "phase-sensors-snapshot", "version": 2, "taken": 1e400}',  # infinite
    '{"format": "phase-sensors-snapshot", "format": "phase-sensors-snapshot"}',  # duplicate
])
def test_a_snapshot_that_is_not_json_is_one_line_naming_the_file(
        tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "snap.json"
    path.write_text(text)
    assert run_cli(["sensors", "--replay", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}: $") and len(err.splitlines()) == 1
    assert "not a readable snapshot" in err and "Traceback" not in err


ABSURD: list[tuple[str, Edit]] = [
    ("a negative wrap range", lambda d: d["fs"]["files"][ENERGY.replace(
        "energy_uj", "max_energy_range_uj")].update(text="-7")),
    ("counter values past 64 bits", lambda d: d["fs"]["series"][ENERGY].update(
        changes=[[0.0, -5], [0.01, -10**20], [0.02, 10**30]])),
    ("a recording 1e300 s long", lambda d: d["fs"]["series"][ENERGY].update(
        changes=[[0.0, 5], [1e300, 10]])),
    ("a power limit of 1e27 W", lambda d: d["nvml"]["gpus"][0][
        "power_limit_constraints_mw"].update(value=[0, 10**30])),
    ("a CUDA bus id NVML lacks", lambda d: d["cuda"].update(
        devices=[{"index": 0, "pci_bus_id": "0000:99:00.0"}])),  # refused, not guessed
]


@pytest.mark.parametrize(("what", "edit"), ABSURD, ids=[m[0] for m in ABSURD])
def test_absurd_but_well_formed_values_replay_without_a_traceback(
        tmp_path: Path, what: str, edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    data = _mig()
    edit(data)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(data))
    code = run_cli(["sensors", "--replay", str(path), "--json", "--probe", "0.05",
                    "--sample", "0.05"])
    err = capsys.readouterr().err
    assert code == 0 and "Traceback" not in err, err


_VALUES = ["x", -1, -1e9, 10**30, 1e308, None, [], {}, True, 0, 2**63, "", [[0.0, 5]], "/x"]


def _places(node: Any, where: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield where
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _places(v, (*where, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):
            yield from _places(v, (*where, i))


@pytest.mark.parametrize("name", ["gpu-server-mig", "rapl-wrap-in-recording",
                                  "mac-powermetrics-raw", "jetson-agx-orin",
                                  "mac-m3-max-zeus", "gpu-server-one-lost"])
def test_random_damage_never_makes_a_traceback(
        tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(name)  # the same damage each run
    original = (MACHINES / f"{name}.json").read_text()
    for trial in range(6):
        data = json.loads(original)
        place = rng.choice([p for p in _places(data) if p])
        parent = data
        for key in place[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and rng.random() < 0.15:
            del parent[place[-1]]
        else:
            parent[place[-1]] = rng.choice(_VALUES)
        path = tmp_path / f"snap-{trial}.json"
        path.write_text(json.dumps(data))
        code = run_cli(["sensors", "--replay", str(path), "--json", "--probe", "0.05",
                        "--sample", "0.05"])
        err = capsys.readouterr().err.strip()
        assert "Traceback" not in err, (place, err)
        assert code == 0 or (code in (1, 2) and len(err.splitlines()) == 1), (place, err)
