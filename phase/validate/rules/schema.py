"""schema (blocking): the file parses and matches the model, and its cross-references hold.

The pydantic model checks shape and types when the file is loaded; a file that fails gets one
blocking finding naming the JSON path (`unreadable`). `check` adds the cross-references the
model cannot express, each of which would break linking or lookups: sensor names declared
once, run ids unique, every energy window, sample trace and `encloses` entry naming a declared
sensor (and no sensor enclosing itself), one window per sensor per run.
"""

from __future__ import annotations

import re
from pathlib import Path

from phase.results import ResultsError, ResultsFile
from phase.validate.registry import Rule
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
    # results.load names the JSON path of every problem, NaN/Infinity included; the file is
    # never opened a second time here (it may be a FIFO, or nested 100k deep).
    return ctx.finding("schema", "blocking", detail, json_path=json_path)


RULE = Rule(order=10, check=check)
