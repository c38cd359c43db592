"""What changed between two versions of a note: results files and the figures they give.

Files are matched by name; a file that left is paired with one that arrived when both come from
the same experiment on the same machine (a re-run), so their figures are compared row by row.
"""

from __future__ import annotations

from dataclasses import dataclass

from phase.analysis import FIGURES, row_value
from phase.analysis.counts import rate_with_counts, row_acceptance_counts
from phase.analysis.formatting import DASH
from phase.publish.data.datasets import Dataset
from phase.results import SummaryRow


@dataclass(frozen=True)
class Change:
    item: str
    metric: str
    before: str
    after: str
    change: str


# Every figure a note's results table reports (and its prose can cite), in table order; each
# is labelled and written as the registry says.
METRICS = ("tokens_per_s", "speed_vs_plain", "acceptance", "chip_mj_per_token",
           "energy_ratio_vs_plain", "board_mj_per_token", "cpu_ms_per_token", "cpu_vs_plain",
           "tokens_per_s_spread", "chip_energy_spread", "n")


def _figure(rows: list[SummaryRow], row: SummaryRow, name: str) -> float | None:
    """A row's figure; the "vs plain" ratios divide by plain decoding's row for the prompt."""
    value = row_value(name, rows, row)
    return None if value is None else float(value)


def _rel(before: float | None, after: float | None) -> str:
    if before is None or after is None:
        return "now missing" if after is None else "now measured"
    if before == 0:
        return DASH
    return f"{(after - before) / before:+.1%}"


def _shown(ds: Dataset, row: SummaryRow, name: str, value: float | None) -> str:
    """A figure as the change table writes it; an acceptance with the counts behind it."""
    if name == "acceptance":
        return rate_with_counts(value, row_acceptance_counts(ds.raw, row), FIGURES[name].show)
    return FIGURES[name].show(value)


def _compare_rows(label: str, old_ds: Dataset, new_ds: Dataset) -> list[Change]:
    old, new = old_ds.summary.rows, new_ds.summary.rows
    out: list[Change] = []
    old_by = {(r.prompt, r.strategy): r for r in old}
    new_by = {(r.prompt, r.strategy): r for r in new}
    for key, row in new_by.items():
        item = f"{label}: {key[0]} × {key[1]}"
        before = old_by.get(key)
        if before is None:
            out.append(Change(item, "condition", DASH, "added", "added"))
            continue
        for name in METRICS:
            a, b = _figure(old, before, name), _figure(new, row, name)
            shown_a, shown_b = _shown(old_ds, before, name, a), _shown(new_ds, row, name, b)
            if shown_a != shown_b:
                out.append(Change(item, FIGURES[name].label, shown_a, shown_b, _rel(a, b)))
    for key in old_by:
        if key not in new_by:
            out.append(Change(f"{label}: {key[0]} × {key[1]}", "condition", "present",
                              "removed", "removed"))
    return out


def _size(ds: Dataset) -> str:
    raw = ds.raw
    return f"{len(raw.runs)} runs" if raw is not None else f"{len(ds.summary.rows)} rows"


def compare(previous: list[Dataset], current: list[Dataset]) -> list[Change]:
    prev = {d.name: d for d in previous}
    cur = {d.name: d for d in current}
    out: list[Change] = []
    for name in cur:
        if name in prev:
            out += _compare_rows(name, prev[name], cur[name])
    gone = [d for n, d in prev.items() if n not in cur]
    arrived = [d for n, d in cur.items() if n not in prev]
    for new in arrived:
        twin = next(
            (old for old in gone
             if (old.summary.experiment, old.summary.machine)
             == (new.summary.experiment, new.summary.machine)),
            None,
        )
        if twin is not None:
            gone.remove(twin)
            out.append(Change(new.name, "results file", twin.name, new.name, "replaced"))
            out += _compare_rows(new.name, twin, new)
        else:
            out.append(Change(new.name, "results file", DASH, _size(new), "added"))
    for old in gone:
        out.append(Change(old.name, "results file", _size(old), DASH, "removed"))
    return out
