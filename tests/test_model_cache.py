"""The model cache: a stamp never vouches for a changed file (mtime restored or not), and a
read-only shared cache still serves a correct model, hashed, without writing a stamp."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sandbox import assert_one_line_error, run_phase

from phase.models.sources import EMBEDDED, TEST_MODEL, ModelError, resolve

MODEL = EMBEDDED[TEST_MODEL]


def _cache_with_copy(root: Path, test_model_path: Path) -> Path:
    """A cache directory holding a copy of the test model (no stamp); returns the copy."""
    target = root / "models" / MODEL.name / MODEL.filename
    target.parent.mkdir(parents=True)
    shutil.copyfile(test_model_path, target)
    return target


def _stamps(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.verified*"))


def test_an_edit_hidden_by_touch_r_is_detected(tmp_path: Path, test_model_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHASE_CACHE", str(tmp_path))
    copy = _cache_with_copy(tmp_path, test_model_path)
    messages: list[str] = []
    assert resolve(TEST_MODEL, progress=messages.append).sha256 == MODEL.sha256
    assert any("verifying" in m for m in messages) and _stamps(copy.parent)
    messages.clear()
    resolve(TEST_MODEL, progress=messages.append)
    assert messages == []  # unchanged: the stamp vouches for it, no second hash
    # Alter one byte in place (same size, same inode), then restore the mtime (`touch -r`).
    st = copy.stat()
    with copy.open("r+b") as fh:
        fh.seek(st.st_size // 2)
        byte = fh.read(1)
        fh.seek(st.st_size // 2)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert copy.stat().st_mtime_ns == st.st_mtime_ns and copy.stat().st_size == st.st_size
    with pytest.raises(ModelError, match="sha256 mismatch"):
        resolve(TEST_MODEL)


def test_a_read_only_cache_serves_a_correct_model_without_a_stamp(
        tmp_path: Path, test_model_path: Path) -> None:
    cache = tmp_path / "shared"
    copy = _cache_with_copy(cache, test_model_path)
    for _ in range(2):  # no stamp can be written, so each use hashes again, and succeeds
        proc = run_phase(["models", "fetch", TEST_MODEL], readonly=cache,
                         env={"PHASE_CACHE": str(cache)})
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == str(copy)
        assert "verifying" in proc.stderr and "verified sha256" in proc.stderr
        assert _stamps(copy.parent) == []


def test_a_read_only_cache_with_a_wrong_file_refuses_it(tmp_path: Path,
                                                        test_model_path: Path) -> None:
    cache = tmp_path / "shared"
    copy = _cache_with_copy(cache, test_model_path)
    with copy.open("r+b") as fh:
        fh.seek(1000)
        fh.write(b"\0\0\0\0")
    proc = run_phase(["models", "fetch", TEST_MODEL], readonly=cache,
                     env={"PHASE_CACHE": str(cache)})
    assert_one_line_error(proc, 1, str(copy), "sha256 mismatch")


def test_phase_models_fetch_does_not_vouch_for_an_edit_hidden_by_touch_r(
        tmp_path: Path, test_model_path: Path) -> None:
    """The issue's case through the CLI: `phase models fetch` printed "verified" in 0.0 s."""
    copy = _cache_with_copy(tmp_path, test_model_path)
    env = {"PHASE_CACHE": str(tmp_path)}
    first = run_phase(["models", "fetch", TEST_MODEL], env=env)
    assert first.returncode == 0 and _stamps(copy.parent), first.stderr
    st = copy.stat()
    with copy.open("r+b") as fh:
        fh.seek(st.st_size // 3)
        byte = fh.read(1)
        fh.seek(st.st_size // 3)
        fh.write(bytes([byte[0] ^ 0xFF]))  # a real change, whatever the byte was
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = run_phase(["models", "fetch", TEST_MODEL], env=env)
    assert_one_line_error(again, 1, str(copy), "sha256 mismatch")
