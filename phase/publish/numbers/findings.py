"""Validation findings -> rows of a note's findings list.

A rejected value is shown struck through next to its reason; it is never dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass

from phase.analysis import energy_mj_per_token, energy_window
from phase.publish.data.datasets import Dataset
from phase.publish.markup.anchors import raw_page, row_anchor, run_anchor
from phase.publish.numbers.tables import Cell, Link
from phase.results import ResultsFile
from phase.validate import SEVERITIES, Finding


@dataclass(frozen=True)
class FindingRow:
    severity: str
    rule: str
    # A finer class within the rule (equivalence: near-tie, mismatch, unclassified).
    category: str | None
    condition: str | None
    link: Link | None
    sensor: str | None
    value: Cell | None
    message: str


def _value(raw: ResultsFile | None, f: Finding) -> Cell | None:
    if f.severity != "rejected" or f.sensor is None:
        return None
    if f.run_id is None:
        return Cell(f"every reading of {f.sensor}", None, f.message, struck=True)
    if raw is None:
        return None
    run = next((r for r in raw.runs if r.id == f.run_id), None)
    if run is None:
        return None
    w = energy_window(run, f.sensor)
    per_token = energy_mj_per_token(run, f.sensor)
    if w is None or w.energy_j is None or per_token is None:
        return None
    return Cell(f"{w.energy_j:.4g} J ({per_token:.1f} mJ/token)", per_token, f.message, True)


def finding_rows(ds: Dataset, root: str) -> list[FindingRow]:
    raw = ds.raw
    page = raw_page(ds.stem, root)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    rows = []
    for f in sorted(ds.report.findings, key=lambda f: order[f.severity]):
        link = None
        if f.run_id is not None:
            # Labelled by the run's id, the link needs no title saying it again.
            link = Link(f.run_id, f"{page}#{run_anchor(f.run_id)}", "")
        elif f.prompt is not None and f.strategy is not None and raw is None:
            link = Link("row", f"{page}#{row_anchor(f.prompt, f.strategy, f.levels)}",
                        "summary row")
        condition = (
            f"{f.prompt} × {f.strategy}" + "".join(f" × {n}={v}" for n, v in f.levels)
            if f.prompt is not None and f.strategy is not None else None
        )
        rows.append(
            FindingRow(
                severity=f.severity,
                rule=f.rule,
                category=f.category,
                condition=condition,
                link=link,
                sensor=f.sensor,
                value=_value(raw, f),
                message=f.message,
            )
        )
    return rows
