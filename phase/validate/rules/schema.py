"""schema (blocking): the file parses and matches the model, and its cross-references hold.

The pydantic model checks shape and types when the file is loaded; a file that fails gets one
blocking finding naming the JSON path (`unreadable`). `check` adds the cross-references the
model cannot express, each of which would break linking or lookups: sensor names declared
once, run ids unique, every energy window, sample trace and `encloses` entry naming a declared
sensor (and no sensor enclosing itself), one window per sensor per run.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from phase.results import ResultsError, ResultsFile
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings

_PATH_RE = re.compile(r"^(\$(?:\.[^.\[\s:]+|\[\d+\])*): ")


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    declared: set[str] = set()
    for i, s in enumerate(results.sensors):
        if s.name in declared:
            out.append(ctx.finding(
                "schema", "blocking", f"sensor name {s.name!r} is declared twice",
                sensor=s.name, json_path=f"$.sensors[{i}].name",
            ))
        declared.add(s.name)
    for i, s in enumerate(results.sensors):
        for j, name in enumerate(s.encloses or []):
            if name not in declared or name == s.name:
                problem = ("itself" if name == s.name
                           else f"{name!r}, which $.sensors does not declare")
                out.append(ctx.finding(
                    "schema", "blocking", f"sensor {s.name!r} says it encloses {problem}",
                    sensor=s.name, json_path=f"$.sensors[{i}].encloses[{j}]",
                ))
    seen_ids: set[str] = set()
    for i, run in enumerate(results.runs):
        if run.id in seen_ids:
            out.append(ctx.finding(
                "schema", "blocking",
                f"run id {run.id!r} is used twice; raw-data links would be ambiguous",
                run=run, json_path=f"$.runs[{i}].id",
            ))
        seen_ids.add(run.id)
        in_run: set[str] = set()
        for j, w in enumerate(run.energy):
            where = f"$.runs[{i}].energy[{j}].sensor"
            if w.sensor not in declared:
                out.append(ctx.finding(
                    "schema", "blocking",
                    f"energy window names sensor {w.sensor!r}, which $.sensors does not declare",
                    run=run, sensor=w.sensor, json_path=where,
                ))
            elif w.sensor in in_run:
                out.append(ctx.finding(
                    "schema", "blocking", f"sensor {w.sensor!r} has two energy windows in one run",
                    run=run, sensor=w.sensor, json_path=where,
                ))
            in_run.add(w.sensor)
        for j, trace in enumerate(run.samples):
            if trace.sensor not in declared:
                out.append(ctx.finding(
                    "schema", "blocking",
                    f"sample trace names sensor {trace.sensor!r}, which $.sensors does not declare",
                    run=run, sensor=trace.sensor, json_path=f"$.runs[{i}].samples[{j}].sensor",
                ))
    return out


def unreadable(path: Path, ctx: Context, exc: ResultsError) -> Finding:
    """The blocking finding for a file that cannot be read as a results file."""
    text = str(exc)
    prefix = f"{path}: "
    detail = text[len(prefix) :] if text.startswith(prefix) else text
    match = _PATH_RE.match(detail)
    json_path = match.group(1) if match else None
    # json.loads in results.load stops at the first NaN/Infinity constant without saying where;
    # find it in the document so the finding points at the hand-edited field.
    bad = _non_finite_paths(path)
    if bad:
        json_path = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        detail = f"{json_path}: not a finite number; JSON has no NaN or Infinity{more}"
    return ctx.finding("schema", "blocking", detail, json_path=json_path)


def _non_finite_paths(path: Path) -> list[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))  # Python's json accepts NaN/Infinity
    except (OSError, ValueError):
        return []
    return list(_walk_non_finite(data, "$"))


def _walk_non_finite(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, float) and not math.isfinite(value):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk_non_finite(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk_non_finite(item, f"{path}[{i}]")
