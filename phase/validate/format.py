"""Reports as text for a terminal: one line per finding, data-derived text escaped."""

from __future__ import annotations

from phase.results import ResultsFile
from phase.validate.report import Finding, Report


def _clean(text: str) -> str:
    """Data-derived text for a terminal: control characters shown escaped, not interpreted."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.4g}"


def format_finding(f: Finding) -> str:
    where = []
    if f.json_path:
        where.append(f.json_path)
    if f.run_id is not None:
        where.append(f"run {f.run_id}")
    if f.prompt is not None or f.strategy is not None:
        where.append(f"{f.prompt} × {f.strategy}"
                     + "".join(f" × {name}={level}" for name, level in f.levels))
    if f.sensor is not None:
        where.append(f"sensor {f.sensor}")
    numbers = " ".join(f"{k}={_number(v)}" for k, v in f.numbers.items())
    rule = f"{f.rule} ({f.category})" if f.category else f.rule
    line = f"  {f.severity:<8} {rule:<12} "
    line += f"[{', '.join(where)}] " if where else ""
    line += f.message
    line += f"  ({numbers})" if numbers else ""
    return _clean(line)


def format_report(report: Report) -> str:
    counts = report.counts()
    tally = ", ".join(f"{n} {sev}" for sev, n in counts.items())
    lines = []
    results = report.results
    if results is None:
        lines.append(f"{report.file}: cannot be read as a results file")
    else:
        size = (
            f"{len(results.runs)} runs"
            if isinstance(results, ResultsFile)
            else f"{len(results.rows)} summary rows"
        )
        chip = f", chip sensor {report.chip_sensor}" if report.chip_sensor else ""
        lines.append(f"{report.file}: {results.kind} {results.id}, {size}{chip}: {tally}")
    lines.extend(format_finding(f) for f in report.findings)
    lines.extend(f"  note     {note}" for note in report.notes)
    if report.blocking:
        lines.append("  => blocked: this file cannot be published")
    elif report.has_findings:
        lines.append("  => publishable, with the findings above shown on the page")
    else:
        lines.append("  => ok: every rule passed")
    return "\n".join(_clean(line) for line in lines)
