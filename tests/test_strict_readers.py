"""Issue 31, class 4: one strict reader (phase.storage.jsonread) for every file phase opens as
data: results files (validate, predict, merge, a build's results directory), benchmark files,
meter traces, sensor snapshots and archived manifests. Every reader × every class of bad file
gives one line naming the file and the problem, exit 2 from the CLI, never a traceback or a
hang: a FIFO, /dev/zero, a directory, invalid UTF-8, a duplicate key, nesting 100k deep, NaN,
and a missing file. And a merged file is complete only with every planned run."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from factories import make_results, write_results
from sandbox import TRACEBACK, run_phase
from shard_files import write_shards

from phase.base.errors import PhaseError
from phase.campaign.merge import read_shard
from phase.publish.numbers.bench import load_bench
from phase.results import load, load_raw
from phase.sensors.meter.meter import load_meter

# slow (not in `make test-fast`): every command on every bad file, each a separate `phase` process.
pytestmark = pytest.mark.slow

GOOD = json.dumps(make_results(status="complete").model_dump(mode="json"), indent=1)


def _make(kind: str, path: Path) -> Path:
    """`path` (named *.json) made into one class of bad file."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "utf8":
        path.write_bytes(GOOD.encode()[:40] + b"\xff\xfe" + GOOD.encode()[40:])
    elif kind == "duplicate":
        path.write_text(GOOD.replace('"status": ', '"status": "running", "status": ', 1))
    elif kind == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "nan":
        data = json.loads(GOOD)
        data["runs"][0]["decode_s"] = float("nan")
        path.write_text(json.dumps(data))  # json.dumps writes NaN: what a careless tool does
    elif kind != "missing":
        raise AssertionError(kind)
    return path


KINDS = ["fifo", "dev-zero", "directory", "utf8", "duplicate", "deep", "nan", "missing"]
NEEDLES = {"fifo": "FIFO", "dev-zero": "character device", "directory": "",
           "utf8": "not UTF-8", "duplicate": "duplicate key", "deep": "nested too deeply",
           "nan": "not a finite number", "missing": ""}


def _bench(path: Path) -> Any:
    return load_bench(path.parent)


def _meter(path: Path) -> Any:
    return load_meter(path)


def _replay(path: Path) -> Any:
    from phase.sensors.replay.replay import load as load_snapshot

    return load_snapshot(path)


def _manifest(path: Path) -> Any:
    from phase.publish.archive.store import MANIFEST, Archive

    version = path.parent / "n" / "v1"
    version.mkdir(parents=True)
    path.rename(version / MANIFEST) if os.path.lexists(path) else None
    return Archive(path.parent).manifest("n", 1)


# Every library reader of a file phase did not write in this process.
READERS: dict[str, Callable[[Path], Any]] = {
    "results.load": load, "results.load_raw": load_raw, "merge.read_shard": read_shard,
    "benchpage.load_bench": _bench, "meter.load_meter": _meter, "replay.load": _replay,
    "archive.manifest": _manifest,
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reader", list(READERS))
def test_every_reader_refuses_every_bad_file_in_one_line(tmp_path: Path, reader: str,
                                                         kind: str) -> None:
    if reader == "benchpage.load_bench" and kind == "missing":
        pytest.skip("the bench reader lists its directory: a missing file is no file")
    path = _make(kind, tmp_path / "x.json")
    with pytest.raises(PhaseError) as info:
        READERS[reader](path)
    message = str(info.value)
    # An archived manifest is read from where it lies: v1/manifest.json.
    name = "manifest.json" if reader == "archive.manifest" else "x.json"
    assert "\n" not in message and name in message and NEEDLES[kind] in message, message


def _cli(tmp_path: Path, path: Path) -> dict[str, list[str]]:
    shards = write_shards(tmp_path / "shards", count=2)
    empty = tmp_path / "empty"
    empty.mkdir()
    return {
        "validate": ["validate", str(path)],
        "predict": ["predict", str(path)],
        "merge": ["merge", str(tmp_path / "out.json"), str(shards[0]), str(path)],
        "sensors --meter": ["sensors", "--meter", f"{path}:wall:1.0", "--rapl-root",
                            str(empty), "--hwmon-root", str(empty), "--iio-root", str(empty)],
        "sensors --replay": ["sensors", "--replay", str(path)],
    }


COMMANDS = ["validate", "predict", "merge", "sensors --meter", "sensors --replay"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_every_bad_file(tmp_path: Path, command: str, kind: str) -> None:
    (tmp_path / "shards").mkdir()
    path = _make(kind, tmp_path / "x.json")
    proc = run_phase(_cli(tmp_path, path)[command], timeout=120)
    out = proc.stdout + proc.stderr
    assert TRACEBACK not in out, out
    assert proc.returncode == 2, (proc.returncode, out)
    assert "x.json" in out and NEEDLES[kind] in out, out
    assert not (tmp_path / "out.json").exists()


def test_a_shard_marked_complete_without_all_its_runs_does_not_merge(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2)
    data = json.loads(shards[1].read_text())
    dropped = data["runs"].pop(0)["id"]
    shards[1].write_text(json.dumps(data))
    assert data["status"] == "complete"
    out = tmp_path / "merged.json"
    proc = run_phase(["merge", str(out), *map(str, shards)])
    assert TRACEBACK not in proc.stderr and proc.returncode == 2, proc.stderr
    assert "marked complete but lacks 1 planned run" in proc.stderr and dropped in proc.stderr
    assert not out.exists()


def test_a_merged_file_is_complete_only_with_every_planned_run(tmp_path: Path) -> None:
    """The rule itself, below the refusal: merged() sets the status from the plan."""
    from phase.campaign.merge import merged

    shards = [read_shard(p) for p in write_shards(tmp_path, count=2)]
    assert merged(shards, "m").status == "complete"
    cut = shards[1].results.model_copy(update={"runs": shards[1].results.runs[1:]})
    short = [shards[0], type(shards[1])(shards[1].path, shards[1].sha256, cut)]
    assert merged(short, "m").status == "interrupted"


def test_a_good_file_still_reads(tmp_path: Path) -> None:
    path = write_results(make_results(status="complete"), tmp_path / "ok.json")
    assert load_raw(path).status == "complete"
