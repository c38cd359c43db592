"""Issue 31, class 5: a sensors snapshot is checked against its schema
(phase.sensors.replay.snapshot_schema) before a replay uses any of it.

The class, not the examples: every field of real snapshots (one per backend: RAPL and NVML,
Jetson IIO, Apple's zeus and powermetrics) is replaced in turn by a value of every other JSON
type, by NaN-like and out-of-range numbers, and by equal change times; each mutant is either
refused with one SnapshotError line naming the JSON path, or replays (discovery, update
periods, a reading per sensor) without any other exception. Then the CLI on a few of them:
exit 2, one line, never a traceback or a hang."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from replayed import driven_clock
from sandbox import TRACEBACK, assert_one_line_error, run_phase

from phase.base.errors import PhaseError
from phase.sensors import discover
from phase.sensors.replay import replay
from phase.sensors.report import survey

# slow (not in `make test-fast`): each wrong snapshot replayed by a separate `phase` process.
pytestmark = pytest.mark.slow

MACHINES = Path(__file__).parent / "fixtures" / "sensors" / "machines"
FIXTURES = ["gpu-server-one-lost", "jetson-nano-jp4", "mac-m3-max-zeus", "mac-powermetrics",
            "amd-zen", "gpu-server-mig", "mac-powermetrics-raw"]  # the last two: version 2
# Values of the wrong type or out of range for some field, as a careless or hostile editor
# would write them. Strings that Python would happily int() are included on purpose.
WRONG: list[Any] = ["x", "12", "", 1, -1, 1.5, 10**30, None, True, [], {}, [[0.0, 1], [0.0, 2]],
                    {"changes": "x"}]
# A dict keyed by sysfs paths holds dozens of alike entries: mutate the first two of each.
KEYED = ("kinds", "dirs", "files", "series", "env", "host", "build")


def _paths(node: Any, where: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in the snapshot worth mutating (the root excluded)."""
    if where:
        yield where
    if isinstance(node, dict):
        items = list(node.items())
        if where and where[-1] in KEYED:
            items = items[:2]
        for key, value in items:
            yield from _paths(value, (*where, key))
    elif isinstance(node, list):
        for i, value in enumerate(node[:2]):
            yield from _paths(value, (*where, i))


def _set(data: Any, where: tuple[Any, ...], value: Any) -> Any:
    """`data` with the value at `where` replaced; `data` is left as it was. Only the dicts and
    lists along the path are copied: the rest is shared, and never changed (a mutant is
    written out and read back)."""
    if not where:
        return value
    out = copy.copy(data)
    out[where[0]] = _set(data[where[0]], where[1:], value)
    return out


def _replay_fully(data: dict[str, Any]) -> None:
    """What `phase sensors --replay` does with an accepted snapshot, briefly."""
    clock = driven_clock(data)
    machine, roots = replay.machine(data, clock)
    found = discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=machine)
    survey(found, hz=50.0, sample_s=None, probe_s=0.02, slow_probe_s=0.03,
           build=data.get("build", {}).get("accelerator") or "cpu", env=data.get("env", {}),
           clock=clock)


def _mutants(name: str) -> Iterator[tuple[str, Any]]:
    data = json.loads((MACHINES / f"{name}.json").read_text())
    for where in _paths(data):
        if where[0] in ("format", "version"):
            continue  # their own messages; checked below
        for value in WRONG:
            yield ".".join(map(str, where)) + f" = {value!r}"[:60], _set(data, where, value)


def _replay_problem(label: str, loaded: dict[str, Any]) -> str | None:
    try:
        _replay_fully(loaded)
    except PhaseError:
        return None  # a domain error with its own message is how a replay may fail
    except Exception as exc:  # the assertion is that nothing else escapes
        return f"{label}: {type(exc).__name__}: {exc}"
    return None


@pytest.mark.parametrize("name", FIXTURES)
def test_every_wrong_field_is_refused_or_replays_cleanly(tmp_path: Path, name: str) -> None:
    refused = 0
    accepted: list[tuple[str, dict[str, Any]]] = []
    for label, data in _mutants(name):
        path = tmp_path / "s.json"
        path.write_text(json.dumps(data))
        try:
            accepted.append((label, replay.load(path)))
        except replay.SnapshotError as exc:
            assert "\n" not in str(exc) and str(path) in str(exc), str(exc)
            refused += 1
    # Side by side: a powermetrics replay waits for its recorded plists on the real clock
    # (tests/replayed.py), 10 s of waiting for one fixture's mutants one after another.
    with ThreadPoolExecutor(max_workers=8) as pool:
        failures = [f for f in pool.map(lambda m: _replay_problem(*m), accepted) if f]
    assert not failures, "\n".join(failures)
    assert refused > 50, (refused, len(accepted))  # the mutations did reach the schema


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_counter_values_and_times_are_refused(tmp_path: Path, value: str) -> None:
    text = (MACHINES / "gpu-server-one-lost.json").read_text()
    data = json.loads(text)
    gpu = data["nvml"]["gpus"][0]
    gpu["energy_mj"]["changes"][1][1] = "__VALUE__"
    gpu["power_mw"]["changes"][0][0] = "__TIME__"
    for marker in ("__VALUE__", "__TIME__"):
        other = "__TIME__" if marker == "__VALUE__" else "__VALUE__"
        path = tmp_path / f"{marker}.json"
        path.write_text(json.dumps(data).replace(f'"{marker}"', value)
                        .replace(f'"{other}"', "0"))
        with pytest.raises(replay.SnapshotError, match=r"not a finite number|finite"):
            replay.load(path)


def test_equal_change_times_are_refused(tmp_path: Path) -> None:
    data = json.loads((MACHINES / "amd-zen.json").read_text())
    series = next(iter(data["fs"]["series"].values()))
    series["changes"] = [[0.5, 100], [0.5, 200], [0.5, 300]]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    with pytest.raises(replay.SnapshotError, match="strictly increase"):
        replay.load(path)


def _bad_snapshots(root: Path) -> dict[str, Path]:
    base = json.loads((MACHINES / "gpu-server-one-lost.json").read_text())
    cases = {
        "fs-a-list": _set(base, ("fs",), []),
        "gpu-without-index": _set(base, ("nvml", "gpus", 0), {"name": {"value": "H100"}}),
        "euid-a-string": _set(base, ("apple", "euid"), "root"),
        "no-roots": {k: v for k, v in base.items() if k != "roots"},
        "counter-a-string": _set(base, ("nvml", "gpus", 0, "energy_mj", "changes", 0, 1), "7"),
        "equal-times": _set(base, ("nvml", "gpus", 0, "power_mw", "changes"),
                            [[0.1, 5], [0.1, 6]]),
        "nul-in-a-path": _set(base, ("roots", "rapl"), "/sys/class/\u0000powercap"),
    }
    out = {}
    for name, data in cases.items():
        out[name] = root / f"{name}.json"
        out[name].write_text(json.dumps(data))
    out["fifo"] = root / "fifo.json"
    os.mkfifo(out["fifo"])
    return out


CLI_CASES = ["fs-a-list", "gpu-without-index", "euid-a-string", "no-roots", "counter-a-string",
             "equal-times", "nul-in-a-path", "fifo"]


@pytest.mark.parametrize("case", CLI_CASES)
def test_replay_of_a_bad_snapshot_is_one_line_exit_2(tmp_path: Path, case: str) -> None:
    path = _bad_snapshots(tmp_path)[case]
    proc = run_phase(["sensors", "--replay", str(path)], timeout=60)
    assert TRACEBACK not in proc.stdout + proc.stderr
    assert_one_line_error(proc, 2, str(path))


def test_the_fixtures_themselves_pass_the_schema() -> None:
    for path in sorted(MACHINES.glob("*.json")):
        assert replay.load(path)["format"] == "phase-sensors-snapshot", path
