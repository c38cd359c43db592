"""Every command × every class of bad input, as separate processes: a documented exit code, one
line naming the file, never a traceback, never a hang, and nothing written.

Classes: a results file that is not UTF-8, nested 100k deep, a FIFO, a directory, with a
duplicate key, with a lax type, or missing; an output path in a missing or read-only directory
or naming a directory or an existing file; a model path that is missing or a directory; a
model cache that is a plain file or read-only."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from factories import make_results, write_results
from sandbox import TRACEBACK, assert_one_line_error, run_phase

# slow (not in `make test-fast`): every command x every bad input, each a separate `phase` process.
pytestmark = pytest.mark.slow

SMALL = ["--quick", "--no-sensor", "--prompts", "code", "--strategies", "plain,draft-2",
         "--tokens", "8", "--repeats", "2", "--cooldown", "0", "--idle-window", "0"]


def _bad_files(root: Path) -> dict[str, Path]:
    """One file per class of unreadable results file (each named *.json)."""
    root.mkdir(parents=True, exist_ok=True)
    files = {name: root / f"{name}.json" for name in
             ("utf8", "deep", "fifo", "dir", "duplicate", "lax", "missing")}
    files["utf8"].write_bytes(b'{"schema_version": 2, "id": "\xff\xfe"}')
    files["deep"].write_text("[" * 100_000 + "]" * 100_000)
    os.mkfifo(files["fifo"])
    files["dir"].mkdir()
    good = write_results(make_results(status="interrupted"), root / "good.txt").read_text()
    files["duplicate"].write_text(good.replace('"status": ', '"status": "complete", "status": ', 1))
    data = json.loads(good)
    data["runs"][0]["decode_s"] = "1.5"
    files["lax"].write_text(json.dumps(data))
    return files


READ_CLASSES = ["utf8", "deep", "fifo", "dir", "duplicate", "lax", "missing"]
READ_NEEDLES = {"utf8": "not UTF-8", "deep": "nested too deeply", "fifo": "FIFO",
                "dir": "", "duplicate": "duplicate key", "lax": "$.runs[0].decode_s",
                "missing": ""}


@pytest.mark.parametrize("kind", READ_CLASSES)
def test_validate_names_the_file_and_its_problem(tmp_path: Path, kind: str) -> None:
    path = _bad_files(tmp_path)[kind]
    proc = run_phase(["validate", str(path)])
    assert TRACEBACK not in proc.stdout + proc.stderr
    assert proc.returncode == 2, proc.stdout + proc.stderr
    # The report names the file, then gives the problem on one blocking schema line.
    assert proc.stdout.startswith(f"{path}: "), proc.stdout
    problem = [ln for ln in proc.stdout.splitlines() if "blocking schema" in ln]
    assert len(problem) == 1 and READ_NEEDLES[kind] in problem[0], proc.stdout


@pytest.mark.parametrize("kind", READ_CLASSES)
def test_resume_of_an_unreadable_file_is_one_line_before_loading(tmp_path: Path,
                                                                 kind: str) -> None:
    path = _bad_files(tmp_path)[kind]
    proc = run_phase(["measure", "speculative", *SMALL, "--resume", str(path)])
    assert_one_line_error(proc, 2, str(path), READ_NEEDLES[kind])
    assert "loading" not in proc.stderr and "target:" not in proc.stderr


@pytest.mark.parametrize("kind", [k for k in READ_CLASSES if k != "missing"])
def test_build_refuses_an_unreadable_results_file_without_hanging(tmp_path: Path,
                                                                  kind: str) -> None:
    results = tmp_path / "results"
    path = _bad_files(results)[kind]
    for other in results.iterdir():
        if other != path and other.name != "good.txt":
            os.rename(other, tmp_path / other.name)
    notes = tmp_path / "notes"
    notes.mkdir()
    proc = run_phase(["build", "--results-dir", str(results), "--notes-dir", str(notes),
                      "--docs-dir", str(tmp_path / "docs")])
    assert TRACEBACK not in proc.stdout + proc.stderr
    assert proc.returncode == 1, proc.stderr
    assert path.name in proc.stderr


@dataclass(frozen=True)
class WriteCase:
    """A command writing to a bad place: `args(root)` builds the command line."""

    id: str
    args: Callable[[Path], list[str]]
    code: int
    needle: str
    readonly: str | None = None  # a directory under root made read-only for the command
    env: Callable[[Path], dict[str, str]] = field(default=lambda root: {})


def _ro(root: Path) -> Path:
    path = root / "ro"
    path.mkdir(exist_ok=True)
    return path


WRITE_CASES = [
    WriteCase("schema-no-dir", lambda r: ["schema", "--write", f"{r}/nodir/x.json"], 2,
              "nodir does not exist"),
    WriteCase("schema-read-only-dir", lambda r: ["schema", "--write", f"{_ro(r)}/x.json"], 2,
              "x.json: cannot write", readonly="ro"),
    WriteCase("schema-onto-a-directory", lambda r: ["schema", "--write", str(_ro(r))], 2,
              "ro"),
    WriteCase("measure-no-dir",
              lambda r: ["measure", "speculative", *SMALL, "-o", f"{r}/nodir/x.json"], 2,
              "does not exist"),
    WriteCase("measure-read-only-dir",
              lambda r: ["measure", "speculative", *SMALL, "-o", f"{_ro(r)}/x.json"], 2,
              "cannot write in", readonly="ro"),
    WriteCase("measure-existing-file",
              lambda r: ["measure", "speculative", *SMALL, "-o", str(_existing(r))], 2,
              "already exists"),
    WriteCase("verify-missing-model", lambda r: ["models", "verify", "./missing.gguf"], 2,
              "missing.gguf: no such file"),
    WriteCase("verify-a-directory", lambda r: ["models", "verify", str(_ro(r))], 2,
              "not a regular file"),
    WriteCase("cache-is-a-plain-file", lambda r: ["models", "fetch", "gemma3-270m"], 2,
              "cannot create the model cache",
              env=lambda r: {"PHASE_CACHE": str(_existing(r))}),
    WriteCase("cache-is-read-only", lambda r: ["models", "fetch", "gemma3-270m"], 2,
              "cannot create the model cache", readonly="ro",
              env=lambda r: {"PHASE_CACHE": str(_ro(r))}),
    WriteCase("prompt-file-not-utf8",
              lambda r: ["generate", "--prompt-file", str(_latin1(r)), "--tokens", "1"], 2,
              "prompt.txt: not UTF-8"),
]


def _existing(root: Path) -> Path:
    path = root / "existing.json"
    path.write_text("precious")
    return path


def _latin1(root: Path) -> Path:
    path = root / "prompt.txt"
    path.write_bytes("caf\u00e9".encode("latin-1"))
    return path


@pytest.mark.parametrize("case", WRITE_CASES, ids=[c.id for c in WRITE_CASES])
def test_writing_to_a_bad_place_is_one_line_and_writes_nothing(tmp_path: Path,
                                                              case: WriteCase) -> None:
    args = case.args(tmp_path)
    env = case.env(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    readonly = tmp_path / case.readonly if case.readonly else None
    proc = run_phase(args, readonly=readonly, env=env, cwd=tmp_path)
    assert_one_line_error(proc, case.code, case.needle)
    assert "loading" not in proc.stderr
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    if (tmp_path / "existing.json").exists():
        assert (tmp_path / "existing.json").read_text() == "precious"
