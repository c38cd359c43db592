"""What an experiment file (experiments/<name>.py) declares: its `EXPERIMENT` object.

One loader for the campaign side (which runs the experiment) and the publishing side (which
reads the question it asks), which may not import each other.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def declared_experiment(path: Path, prefix: str) -> object | None:
    """The file's `EXPERIMENT`, loaded as module `<prefix>_<stem>`; None where it cannot be
    loaded as a module or declares nothing."""
    spec = importlib.util.spec_from_file_location(f"{prefix}_{path.stem}", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    # No __pycache__ beside a user's experiment file: phase leaves only what it was asked for.
    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = writes
    return getattr(module, "EXPERIMENT", None)
