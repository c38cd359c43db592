"""What a test run builds once for all its pytest-xdist workers (each worker is a pytest session
of its own, so a session-scoped fixture alone would build it once per worker)."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def run_lock(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """An exclusive lock shared by every worker process of this test run; yields the run's
    shared temporary directory (the workers' base temps are its children under xdist)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield shared


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str,
                 make: Callable[[Path], object]) -> Path:
    """The directory `name`, filled by make(dir) once per test run, however many workers ask:
    the first builds it while the others wait on the lock, then all read the same files. Only
    for what tests read and never change (a test that changes it must copy it first)."""
    with run_lock(tmp_path_factory, name) as shared:
        target = shared / name
        done = shared / f"{name}.done"
        if not done.exists():
            if target.exists():  # a build that failed half-way in an earlier worker
                shutil.rmtree(target)
            target.mkdir()
            make(target)
            done.touch()
    return target
