"""`phase merge` leaves nothing behind on any exit path: its output's `.lock` sidecar (and any
temporary file) is gone whether it wrote OUT, refused the shards, could not read one, or was
stopped by a full disk (a real file-size limit, RLIMIT_FSIZE: the write itself fails with
EFBIG as on a full disk), at the lock's own record or at the output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from sandbox import TRACEBACK, assert_one_line_error, run_phase
from shard_files import write_shards

# slow (not in `make test-fast`): each case is a separate `phase` process.
pytestmark = pytest.mark.slow


def _listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def _differ(paths: list[Path]) -> list[Path]:
    data = json.loads(paths[1].read_text())
    data["campaign_id"] = "another-0123456789ab"
    paths[1].write_text(json.dumps(data))
    return paths


def _unreadable(paths: list[Path]) -> list[Path]:
    paths[0].write_bytes(b"\xff\xfe not json")
    return paths


# (id, how the inputs are spoiled, fsize limit, exit code, what the one line says)
PATHS: list[tuple[str, Callable[[list[Path]], list[Path]], int | None, int, str]] = [
    ("refused", _differ, None, 2, "campaign"),
    ("unreadable-input", _unreadable, None, 2, "not UTF-8"),
    ("missing-input", lambda p: [*p, p[0].with_name("gone.json")], None, 2, "gone.json"),
    ("disk-full-at-the-output", lambda p: p, 64, 1, "cannot write: File too large"),
    ("disk-full-at-the-lock", lambda p: p, 0, 1, "cannot write its lock"),
]


@pytest.mark.parametrize(("spoil", "fsize", "code", "needle"), [p[1:] for p in PATHS],
                         ids=[p[0] for p in PATHS])
def test_every_failure_is_one_line_and_leaves_no_lock(
        tmp_path: Path, spoil: Callable[[list[Path]], list[Path]], fsize: int | None,
        code: int, needle: str) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    paths = spoil(write_shards(inputs, count=2))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    before = (_listing(inputs), _listing(out_dir))
    proc = run_phase(["merge", str(out_dir / "merged.json"), *map(str, paths)], fsize=fsize,
                     timeout=120)
    assert_one_line_error(proc, code, needle)
    assert (_listing(inputs), _listing(out_dir)) == before, "merge left something behind"


def test_a_merge_that_succeeds_leaves_only_its_output(tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in" if (tmp_path / "in").mkdir() is None else tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = run_phase(["merge", str(out_dir / "merged.json"), *map(str, paths)], timeout=120)
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr
    assert _listing(out_dir) == ["merged.json"]


def test_an_existing_output_is_refused_and_keeps_no_lock(tmp_path: Path) -> None:
    paths = write_shards(tmp_path / "in" if (tmp_path / "in").mkdir() is None else tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "merged.json").write_text("precious")
    proc = run_phase(["merge", str(out_dir / "merged.json"), *map(str, paths)], timeout=120)
    assert_one_line_error(proc, 2, "already exists")
    assert _listing(out_dir) == ["merged.json"]
    assert (out_dir / "merged.json").read_text() == "precious"
