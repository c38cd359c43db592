"""A user's own workload: a JSONL file, one JSON object per line with a "prompt" (required),
"id" and "category" (optional). Every line is checked before anything runs; the first bad one
is one line naming the file, the line and the field: `FILE:LINE: FIELD: what; fix`.

Blank lines are skipped (a trailing newline, or one between groups). Lines without an id are
named `line-N`, N their line number, so a prompt's name says where it is in the file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from phase.storage.errors import StorageError
from phase.storage.jsonread import decode_utf8, parse_json, read_regular_bytes
from phase.workloads.workload import (
    CONTROL_IN_TEXT,
    ID_ALLOWED,
    ID_PATTERN,
    Workload,
    WorkloadError,
    WorkloadPrompt,
)

FORMAT = ('one JSON object per line: {"prompt": "...", "id": "...", "category": "..."}, '
          "id and category optional")
# A workload is prompts, not a data set: a file this large is something else.
MAX_BYTES = 64 << 20


class _Line(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    prompt: Annotated[str, StringConstraints(strip_whitespace=False, min_length=1)]
    id: str | None = None
    category: Annotated[str, Field(min_length=1, max_length=200)] | None = None


def _problem(path: Path, line: int, exc: ValidationError) -> WorkloadError:
    """The first of pydantic's errors as one line naming the field."""
    error = exc.errors()[0]
    field = ".".join(str(p) for p in error["loc"]) or "line"
    kind = error["type"]
    if kind == "missing":
        what = "missing; every line needs a non-empty prompt string"
    elif kind == "extra_forbidden":
        what = "unknown field; allowed are prompt, id and category"
    elif kind == "string_too_short":
        what = "empty; give a non-empty string"
    elif kind == "string_type":
        what = f"a {_json_type(error['input'])}, not a string; give a string"
    else:
        what = f"{error['msg'].lower()}; {FORMAT}"
    return WorkloadError(f"{path}:{line}: {field}: {what}")


def _json_type(value: Any) -> str:
    names = {bool: "boolean", int: "number", float: "number", list: "list", dict: "object",
             type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _parse_line(path: Path, number: int, text: str) -> _Line:
    try:
        json.loads(text)  # only for its column: parse_json below says "line 1" of this line
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"{path}:{number}: line: not JSON ({exc.msg} at column "
                            f"{exc.colno}); {FORMAT}") from None
    except (ValueError, RecursionError):
        pass  # too deep and the like: parse_json says what
    try:
        data = parse_json(text, f"{path}:{number}")
    except StorageError as exc:  # a duplicate key, NaN, runaway nesting
        where, _, detail = str(exc).removeprefix(f"{path}:{number}: ").partition(": ")
        field = where.removeprefix("$").removeprefix(".") or "line"
        raise WorkloadError(f"{path}:{number}: {field}: {detail}") from None
    if not isinstance(data, dict):
        raise WorkloadError(f"{path}:{number}: line: a JSON {_json_type(data)}, not an "
                            f"object; {FORMAT}")
    try:
        line = _Line.model_validate(data)
    except ValidationError as exc:
        raise _problem(path, number, exc) from None
    if not line.prompt.strip():
        raise WorkloadError(f"{path}:{number}: prompt: only whitespace; give the prompt's text")
    for field, value in (("prompt", line.prompt), ("category", line.category)):
        bad = CONTROL_IN_TEXT.search(value or "")
        if bad:
            raise WorkloadError(f"{path}:{number}: {field}: holds the control character "
                                f"U+{ord(bad.group()):04X}; only tab and newline are allowed")
    if line.id is not None and not ID_PATTERN.match(line.id):
        raise WorkloadError(f"{path}:{number}: id: {line.id!r} is not a usable name; "
                            f"allowed: {ID_ALLOWED}")
    return line


def load_jsonl(path: Path, name: str | None = None) -> Workload:
    """The workload in `path`, every line checked (see the module docstring)."""
    try:
        data = read_regular_bytes(path, MAX_BYTES)
        text = decode_utf8(data, path)
    except StorageError as exc:
        raise WorkloadError(f"{exc}; a workload is {FORMAT}") from None
    prompts: list[WorkloadPrompt] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        line = _parse_line(path, number, raw)
        ident = line.id if line.id is not None else f"line-{number}"
        if ident in seen:
            raise WorkloadError(f"{path}:{number}: id: {ident!r} repeats line {seen[ident]}'s; "
                                "ids must be unique")
        seen[ident] = number
        prompts.append(WorkloadPrompt(ident, line.prompt, line.category))
    if not prompts:
        raise WorkloadError(f"{path}: workload: empty, no prompts; a workload is {FORMAT}")
    return Workload(name=name or path.stem, source=f"path:{path}",
                    sha256=hashlib.sha256(data).hexdigest(), prompts=tuple(prompts),
                    path=str(path))
