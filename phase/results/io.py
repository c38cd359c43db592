"""Reading and writing results files: every failure is one line naming file, JSON path and fix.

Writing is crash-safe: a temporary file in the same directory, fsync, then rename over the
target, so a reader (or a crash) sees either the old complete file or the new complete one.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from phase.results.migrations import ResultsError, migrate
from phase.results.schema import SCHEMA_VERSION, ResultsFile, Run, SummaryFile


def _json_path(loc: tuple[int | str, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def parse(data: Any, path: Path | str = "<data>") -> ResultsFile | SummaryFile:
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: $: expected a JSON object, found {type(data).__name__}")
    data = migrate(data, path)
    model: type[ResultsFile] | type[SummaryFile] = (
        SummaryFile if data.get("kind") == "summary" else ResultsFile
    )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        loc = tuple(p for p in first["loc"] if not str(p).startswith("function-after"))
        raise ResultsError(f"{path}: {_json_path(loc)}: {first['msg']}{more}") from None


def load(path: Path | str) -> ResultsFile | SummaryFile:
    """Read and validate a results file; every failure is one ResultsError line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{p}: no such file") from None
    except OSError as exc:
        raise ResultsError(f"{p}: cannot read: {exc.strerror}") from None
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ResultsError(
            f"{p}: $: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            " (truncated or hand-edited?)"
        ) from None
    except ValueError as exc:
        raise ResultsError(f"{p}: $: {exc}") from None
    return parse(data, p)


def load_raw(path: Path | str) -> ResultsFile:
    result = load(path)
    if not isinstance(result, ResultsFile):
        raise ResultsError(f"{path}: $.kind: this is a summary file; a raw results file is needed")
    return result


def dump_json(model: BaseModel) -> str:
    return model.model_dump_json(indent=1) + "\n"


def atomic_write_text(path: Path | str, text: str) -> None:
    """Write via a temp file in the same directory, fsync, then rename over the target."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        # mkstemp creates 0600; results are meant to be shared, so honour the umask instead.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(p.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class CampaignWriter:
    """Persists a campaign after each finished run; refuses to touch a completed file."""

    def __init__(self, path: Path | str, results: ResultsFile) -> None:
        self.path = Path(path)
        self.results = results
        if results.status == "complete":
            raise ResultsError(f"{self.path}: campaign is complete; results files are immutable")
        self._flush()

    @classmethod
    def resume(cls, path: Path | str) -> CampaignWriter:
        results = load_raw(path)
        if results.status == "complete":
            raise ResultsError(f"{path}: campaign already complete; nothing to resume")
        results.status = "running"
        return cls(path, results)

    def _flush(self) -> None:
        atomic_write_text(self.path, dump_json(self.results))

    def add_run(self, run: Run) -> None:
        if any(r.id == run.id for r in self.results.runs):
            raise ResultsError(f"{self.path}: run {run.id} is already recorded")
        self.results.runs.append(run)
        self._flush()

    def finish(self, status: Literal["complete", "interrupted"] = "complete") -> None:
        self.results.status = status
        self._flush()


def json_schema() -> dict[str, Any]:
    """The JSON Schema committed at results/schema.json (one document for both kinds)."""
    raw = ResultsFile.model_json_schema()
    summary = SummaryFile.model_json_schema()
    defs = {**raw.pop("$defs", {}), **summary.pop("$defs", {})}
    defs["ResultsFile"] = raw
    defs["SummaryFile"] = summary
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "phase results file",
        "description": f"phase results schema version {SCHEMA_VERSION}",
        "oneOf": [{"$ref": "#/$defs/ResultsFile"}, {"$ref": "#/$defs/SummaryFile"}],
        "$defs": defs,
    }


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=1, sort_keys=True) + "\n"
