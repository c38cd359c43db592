"""Reading results files: every failure is one line naming file, JSON path and fix.

Files are read strictly, so `phase validate` and the published JSON Schema
(`results/schema.json`) agree: a regular UTF-8 file (jsonread), no duplicate keys, and types
checked as JSON types (pydantic strict mode on JSON input: `"1.5"` or `true` is not a number,
`true` is not a schema version). Writing lives in `writing` (exclusive, atomic, run by run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from phase.results.migrations import ResultsError, migrate
from phase.results.names import control_characters
from phase.results.schema import ResultsFile
from phase.results.summary import SummaryFile
from phase.results.version import SCHEMA_VERSION
from phase.storage.jsonread import parse_json, read_regular_text


def _json_path(loc: tuple[int | str, ...]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def parse(data: Any, path: Path | str = "<data>") -> ResultsFile | SummaryFile:
    """Validate a parsed JSON value (of any schema version) as a results or summary file."""
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: $: expected a JSON object, found {type(data).__name__}")
    data = migrate(data, path)
    control_characters(data, path)  # names are printable, before any reaches a page or chart
    model: type[ResultsFile] | type[SummaryFile] = (
        SummaryFile if data.get("kind") == "summary" else ResultsFile
    )
    try:
        # Strict validation of JSON input: JSON's own types, as the JSON Schema states them
        # (a datetime is an ISO string, an integer is accepted where a number is expected; a
        # number too large for a float arrives as Infinity and is refused with its path).
        return model.model_validate_json(json.dumps(data), strict=True)
    except ValueError as exc:
        if not isinstance(exc, ValidationError):
            raise ResultsError(f"{path}: $: {exc}") from None
        raise ResultsError(first_problem(exc, path)) from None


def first_problem(exc: ValidationError, path: Path | str) -> str:
    """A pydantic error as one line: `<file>: <JSON path>: <problem> (and N more problems)`."""
    first = exc.errors()[0]
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    loc = tuple(p for p in first["loc"] if not str(p).startswith("function-after"))
    return f"{path}: {_json_path(loc)}: {first['msg']}{more}"


def load(path: Path | str) -> ResultsFile | SummaryFile:
    """Read and validate a results file; every failure is one ResultsError line."""
    p = Path(path)
    return parse(parse_json(read_regular_text(p), p), p)


def load_raw(path: Path | str) -> ResultsFile:
    result = load(path)
    if not isinstance(result, ResultsFile):
        raise ResultsError(f"{path}: $.kind: this is a summary file; a raw results file is needed")
    return result


def dump_json(model: BaseModel) -> str:
    return model.model_dump_json(indent=1) + "\n"


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
