"""Prompt files: `<experiment>/prompts/<name>.txt`, with `{{include:FILE}}` for inputs."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from phase import REPO_ROOT
from phase.errors import UsageProblem
from phase.results import PromptSpec

_INCLUDE = re.compile(r"\{\{include:([^}]+)\}\}")


def load_prompt(path: Path) -> PromptSpec:
    """A prompt file; `{{include:FILE}}` pulls in a file relative to the prompt's experiment."""
    if not path.is_file():
        raise UsageProblem(f"{path}: prompt file not found")
    text = _read(path)

    def include(match: re.Match[str]) -> str:
        target = path.parent.parent / match.group(1).strip()
        if not target.is_file():
            raise UsageProblem(f"{path}: includes {target}, which does not exist")
        return _read(target)

    resolved = path.resolve()
    inside = resolved.is_relative_to(REPO_ROOT)
    source = str(resolved.relative_to(REPO_ROOT)) if inside else str(resolved)
    return PromptSpec(name=path.stem, text=_INCLUDE.sub(include, text).strip(), source=source)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageProblem(f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
                           f"offset {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise UsageProblem(f"{path}: cannot read: {exc.strerror}") from None


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
