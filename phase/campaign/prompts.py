"""Prompt files: `<experiment>/prompts/<name>.txt`, with `{{include:FILE}}` for inputs; or a
workload's prompts (phase.workloads) in their place."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from phase import REPO_ROOT
from phase.base.errors import UsageProblem
from phase.results import PromptSpec, ResultsError, WorkloadRecord
from phase.results.names import is_clean_name
from phase.storage.jsonread import read_regular_bytes
from phase.storage.safepath import confined
from phase.workloads.resolve import resolve_workload

_INCLUDE = re.compile(r"\{\{include:([^}]+)\}\}")


def load_prompt(path: Path) -> PromptSpec:
    """A prompt file; `{{include:FILE}}` pulls in a file relative to the prompt's experiment."""
    if not path.is_file():
        raise UsageProblem(f"{path}: prompt file not found")
    if not is_clean_name(path.stem):
        raise UsageProblem(f"{path}: a prompt's name (its file name) holds a control "
                           "character; rename the file")
    text = _read(path)

    def include(match: re.Match[str]) -> str:
        # Relative to the experiment's directory, and inside it.
        target = confined(path.parent.parent, match.group(1).strip(), f"{path}: include")
        if not target.is_file():
            raise UsageProblem(f"{path}: includes {target}, which does not exist")
        return _read(target)

    resolved = path.resolve()
    inside = resolved.is_relative_to(REPO_ROOT)
    source = str(resolved.relative_to(REPO_ROOT)) if inside else str(resolved)
    return PromptSpec(name=path.stem, text=_INCLUDE.sub(include, text).strip(), source=source)


def _read(path: Path) -> str:
    try:
        data = read_regular_bytes(path)  # a FIFO or device is refused, never waited on
    except ResultsError as exc:
        raise UsageProblem(str(exc)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageProblem(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                           f"offset {exc.start}); save it as UTF-8") from None


def load_prompts(prompts_dir: Path, names: Sequence[str]) -> list[PromptSpec]:
    """The named prompts, in order; an unknown or repeated name is bad input."""
    if not names:
        raise UsageProblem("the plan names no prompts")
    if len(set(names)) != len(names):
        raise UsageProblem(f"prompt names repeat: {list(names)}")
    known = {p.stem for p in prompts_dir.glob("*.txt")}
    unknown = [p for p in names if p not in known]
    if unknown:
        raise UsageProblem(
            f"unknown prompt(s) {', '.join(unknown)}: known are {', '.join(sorted(known))}"
        )
    return [load_prompt(prompts_dir / f"{name}.txt") for name in names]


def workload_prompts(spec: str, names: Sequence[str]) -> tuple[list[PromptSpec], WorkloadRecord]:
    """The named prompts of workload `spec` (all of them when `names` is empty), and what the
    results file records of the workload."""
    workload = resolve_workload(spec)
    chosen = workload.select(tuple(names)) if names else workload.prompts
    if len(set(names)) != len(names):
        raise UsageProblem(f"prompt names repeat: {list(names)}")
    prompts = [PromptSpec(name=p.id, text=p.text, source=f"{workload.source}#{p.id}")
               for p in chosen]
    record = WorkloadRecord(name=workload.name, source=workload.source,
                            sha256=workload.sha256, count=workload.count, path=workload.path)
    return prompts, record


def campaign_prompts(prompts_dir: Path, prompts: Sequence[str], workload: str | None
                     ) -> tuple[list[PromptSpec], WorkloadRecord | None]:
    """A plan's prompts: from its workload where it has one, else the experiment's files."""
    if workload is not None:
        return workload_prompts(workload, prompts)
    return load_prompts(prompts_dir, prompts), None
