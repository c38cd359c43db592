"""Issue 31, class 1: every output phase creates is claimed when the command starts and created
exclusively when done (phase.storage.outputs). For every command that writes a file: an
existing file, a second writer and a file that appears while the command works each get exit 2
naming the file, and the file someone else made is left byte for byte. Run as separate
processes (locks and races are properties of processes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sandbox import PHASE, assert_one_line_error, run_phase
from shard_files import write_shards

from phase.results import json_schema_text
from phase.storage.claim import Claim, lock_path
from phase.storage.outputs import NewFile, place_dir

REPO = Path(__file__).resolve().parent.parent
SMALL = ["--quick", "--no-sensor", "--prompts", "code", "--strategies", "plain",
         "--tokens", "8", "--repeats", "1", "--cooldown", "0", "--idle-window", "0"]
# --no-disturbance: what is checked is where the file lands, not the profile's figures; judged,
# a busy test host's load only repeats blocks (the profile ran 18-33 s instead of a few).
PROFILE = ["profile", "speculative", "--quick", "--no-sensor", "--prompts", "code",
           "--tokens", "8", "--blocks", "1", "--min-block", "0", "--no-disturbance"]
THEIRS = "written by someone else\n"


def _no_sensors(root: Path) -> list[str]:
    empty = root / "empty"
    empty.mkdir(exist_ok=True)
    return ["--rapl-root", str(empty), "--hwmon-root", str(empty), "--iio-root", str(empty)]


# Every command that creates a file, as (id, args given the output path and a work dir).
OUTPUTS: list[tuple[str, Callable[[Path, Path], list[str]]]] = [
    ("measure -o", lambda out, root: ["measure", "speculative", *SMALL, "-o", str(out)]),
    ("profile -o", lambda out, root: [*PROFILE, "-o", str(out)]),
    ("sensors --snapshot", lambda out, root: ["sensors", "--snapshot", str(out),
                                              *_no_sensors(root)]),
    ("merge OUT", lambda out, root: ["merge", str(out),
                                     *map(str, write_shards(root / "shards", count=2))]),
    ("schema --write", lambda out, root: ["schema", "--write", str(out)]),
]
IDS = [case[0] for case in OUTPUTS]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "args"), OUTPUTS, ids=IDS)
def test_an_existing_file_is_refused_and_kept(tmp_path: Path, name: str,
                                              args: Callable[[Path, Path], list[str]]) -> None:
    out = tmp_path / "out.json"
    (tmp_path / "shards").mkdir()
    cmd = args(out, tmp_path)
    out.write_text(THEIRS)
    proc = run_phase(cmd, timeout=300)
    assert_one_line_error(proc, 2, str(out), "already exists")
    assert out.read_text() == THEIRS
    assert not lock_path(out).exists()
    assert "loading" not in proc.stderr  # refused before any model loads


@pytest.mark.slow
@pytest.mark.parametrize(("name", "args"), OUTPUTS, ids=IDS)
def test_a_second_writer_is_refused_naming_the_holder(
        tmp_path: Path, name: str, args: Callable[[Path, Path], list[str]]) -> None:
    out = tmp_path / "out.json"
    (tmp_path / "shards").mkdir()
    cmd = args(out, tmp_path)
    with Claim.take(out):  # another phase process writing this very file
        proc = run_phase(cmd, timeout=300)
    line = assert_one_line_error(proc, 2, str(out), "another phase process is writing")
    assert "pid" in line
    assert not out.exists()


def _wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.005)


def _write_while_it_works(out: Path, cmd: list[str]) -> subprocess.CompletedProcess[str]:
    """Start the command, write OUT once it has claimed it, and wait for it to end."""
    proc = subprocess.Popen([PHASE, *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        _wait_for(lock_path(out), proc)  # the claim is taken: the command is now working
        out.write_text(THEIRS)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


# profile -o runs a real profile of the test model (the file appears while it works).
@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param("profile -o", marks=pytest.mark.model),
                                  "sensors --snapshot"])
def test_a_file_that_appears_meanwhile_is_never_replaced(tmp_path: Path, name: str) -> None:
    """The command claims OUT, works (seconds here, minutes for real), then creates it: a file
    the user made in between is kept and the command says so with exit 2."""
    # The file can land between the claim and the check for an existing name right after it
    # (a snapshot's work is that short; a profile's start is, on a loaded machine): refused
    # there instead, by the same rule. The profile tries again until the file lands while it
    # works, so that path is the one tested.
    for attempt in range(3):
        out = tmp_path / f"out-{attempt}.json"
        cmd = dict(OUTPUTS)[name](out, tmp_path)
        done = _write_while_it_works(out, cmd)
        if name == "sensors --snapshot" or "appeared while phase" not in done.stderr:
            assert_one_line_error(done, 2, str(out), "already exists")
        if name == "sensors --snapshot" or "appeared while phase" in done.stderr:
            break
    late = () if name == "sensors --snapshot" else ("appeared while phase",)
    assert_one_line_error(done, 2, str(out), "already exists", *late)
    assert out.read_text() == THEIRS
    assert not lock_path(out).exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.slow
def test_schema_write_replaces_only_a_phase_schema(tmp_path: Path) -> None:
    out = tmp_path / "schema.json"
    out.write_text(json.dumps({"title": "phase results file", "old": True}))
    proc = run_phase(["schema", "--write", str(out)])
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == json_schema_text()
    os.mkfifo(tmp_path / "fifo.json")
    proc = run_phase(["schema", "--write", str(tmp_path / "fifo.json")], timeout=60)
    assert_one_line_error(proc, 2, "fifo.json", "not a phase results schema")


def test_library_claim_then_create_never_replaces(tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    with NewFile.claim(out, "-o") as new:
        out.write_text(THEIRS)
        with pytest.raises(Exception, match="appeared while phase was working") as info:
            new.write("mine\n")
    assert getattr(info.value, "exit_code", None) == 2
    assert out.read_text() == THEIRS and not lock_path(out).exists()


def test_a_directory_is_placed_only_where_nothing_is(tmp_path: Path) -> None:
    for existing in ("empty", "full"):
        staged = tmp_path / f"staged-{existing}"
        staged.mkdir()
        (staged / "page.md").write_text("new")
        target = tmp_path / existing
        target.mkdir()
        if existing == "full":
            (target / "theirs").write_text(THEIRS)
        with pytest.raises(Exception, match="already exists") as info:
            place_dir(staged, target, "a published version")
        assert getattr(info.value, "exit_code", None) == 2
        assert (staged / "page.md").read_text() == "new"
        assert sorted(p.name for p in target.iterdir()) == ([] if existing == "empty"
                                                            else ["theirs"])
    place_dir(tmp_path / "staged-empty", tmp_path / "fresh", "a published version")
    assert (tmp_path / "fresh" / "page.md").read_text() == "new"


# Where phase may replace a file in place: caches (their own directory under PHASE_CACHE), the
# one-writer machinery itself, and the build's moves between its own staging directories. Anything
# else that renames over a name is the check-then-replace this class forbids.
REPLACERS = {"phase/storage/writing.py", "phase/storage/outputs.py",
             "phase/storage/cache_entry.py", "phase/publish/site/outdirs.py",
             "phase/publish/site/build.py", "phase/models/sources.py",
             "phase/decode/cpu_buffers.py", "phase/decode/variants.py",
             "phase/bandwidth/stream_kernel.py", "phase/results/writer.py",
             "phase/workloads/embedded.py"}  # a verified download into its cache, as models
# os.rename/replace, shutil.move, Path.rename, atomic_write_text, and Path.replace on the
# names phase gives paths (str.replace takes two strings and is not matched).
FILE_RENAME = re.compile(r"\bos\.(rename|replace|renames)\(|\bshutil\.move\(|\.rename\("
                         r"|\batomic_write_text\(|\b\w*(path|tmp|partial|staged|staging|"
                         r"target|entry|out)\.replace\((?!\")")


def test_no_module_renames_over_an_output_outside_the_one_path() -> None:
    stray = []
    for p in sorted((REPO / "phase").rglob("*.py")):
        rel = p.relative_to(REPO).as_posix()
        if rel in REPLACERS:
            continue
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if FILE_RENAME.search(code) and not code.lstrip().startswith(("def ", "from ")):
                stray.append(f"{rel}:{n}: {line.strip()}")
    assert not stray, stray
