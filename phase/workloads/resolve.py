"""A workload by name (an embedded set) or by path (a user's JSONL file)."""

from __future__ import annotations

from pathlib import Path

from phase.workloads.embedded import NAMES, PYPI, load_edit, load_pypi
from phase.workloads.jsonl import load_jsonl
from phase.workloads.workload import Workload, WorkloadError


def resolve_workload(spec: str) -> Workload:
    """`humaneval`, `mt-bench`, `edit`, or a path to a .jsonl file."""
    if spec in PYPI:
        return load_pypi(PYPI[spec])
    if spec == "edit":
        return load_edit()
    path = Path(spec).expanduser()
    if path.exists() or path.suffix == ".jsonl" or "/" in spec:
        return load_jsonl(path)
    raise WorkloadError(f"workload: unknown name {spec!r}; known are {', '.join(NAMES)}, or "
                        "give a path to a .jsonl file (one JSON object with a prompt per line)")
