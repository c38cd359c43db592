"""Applying the rules: a pure function from a results file (plus settings) to a Report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from phase.results import ResultsError, ResultsFile, SummaryFile, load
from phase.validate.chip import choose_chip_sensor, pick_chip
from phase.validate.report import Context, Report
from phase.validate.rules import RAW_RULES, SUMMARY_RULES, schema, serving_gaps, verification
from phase.validate.settings import DEFAULT_SETTINGS, RuleSettings


def validate_results(
    results: ResultsFile | SummaryFile, file: str, settings: RuleSettings = DEFAULT_SETTINGS
) -> Report:
    """Apply every rule to an already parsed results file. Pure: reads, never writes."""
    if isinstance(results, SummaryFile):
        ctx = Context(file)
        found = [f for rule in SUMMARY_RULES for f in rule(results, settings, ctx)]
        return Report(file, settings, found, results)
    candidates = choose_chip_sensor(results)
    chip, findings = pick_chip(results, candidates, settings, Context(file))
    ctx = Context(file, chip)
    for rule in RAW_RULES:
        new = rule(results, settings, ctx)
        ctx.record(new)
        findings += new
    return Report(file, settings, findings, results, chip, candidates,
                  verification.unrecorded(results) + serving_gaps.report_notes(results, settings))


def validate_file(path: str | Path, settings: RuleSettings = DEFAULT_SETTINGS) -> Report:
    """Load and validate one file. A file that cannot be read or does not match the schema
    gives a Report with `results` None and one blocking schema finding naming the JSON path."""
    p = Path(path)
    file = str(path)
    try:
        results = load(p)
    except ResultsError as exc:
        return Report(file, settings, [schema.unreadable(p, Context(file), exc)], None)
    return validate_results(results, file, settings)


def exit_code(reports: Sequence[Report], *, strict: bool = False) -> int:
    """2 when a file could not be read as a results file, 1 when something blocks publishing
    (with strict: when any rule tripped), else 0."""
    if any(r.results is None for r in reports):
        return 2
    if any(r.blocking or (strict and r.has_findings) for r in reports):
        return 1
    return 0
