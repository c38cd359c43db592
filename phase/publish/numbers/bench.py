"""Benchmark results (`bench/results/*.json`, written by `make bench`), loaded once per build,
and the figures notes cite from them (`bench(...)` in a note body). The Benchmarks page that
shows them is a page kind (phase.publish.pages.bench).

A benchmark file is read leniently (its shape belongs to bench/, which may add fields), but
what the page and the notes use is checked: a file that lacks it is bad input naming the file
and the field.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup
from pydantic import BaseModel, ConfigDict, ValidationError

from phase.analysis import BENCH_SPREAD, FIGURES, spread
from phase.analysis.bench_rows import BenchRow
from phase.base.errors import PhaseError
from phase.base.escaping import markdown_safe, safe_url
from phase.publish.markup.anchors import _safe
from phase.results import ResultsError
from phase.storage.jsonread import decode_utf8, parse_json, read_regular_bytes

BENCH_GLOBAL = "phase_bench"  # the loaded results, set on the Jinja environment by the build


class BenchSection(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    skipped: str | None = None
    rows: list[BenchRow] = []


class BenchFile(BaseModel):
    model_config = ConfigDict(extra="allow")

    created: str
    machine: dict[str, Any]
    config: dict[str, Any]
    sections: list[BenchSection]


@dataclass(frozen=True)
class BenchResults:
    path: Path
    name: str
    sha256: str
    size_bytes: int
    data: BenchFile

    @property
    def stem(self) -> str:
        return self.name.removesuffix(".json")

    @property
    def rows(self) -> list[BenchRow]:
        return [r for s in self.data.sections for r in s.rows]

    def row(self, item: str, vs: str | None = None) -> BenchRow:
        found = [r for r in self.rows if r.item == item and (vs is None or r.reference_name == vs)]
        if len(found) != 1:
            known = "; ".join(f"{r.item} (vs {r.reference_name})" for r in self.rows)
            what = "no row" if not found else f"{len(found)} rows (name one with vs=...)"
            raise PhaseError(f"{self.name}: {what} {item!r}" + (f" vs {vs!r}" if vs else "")
                             + f"; rows: {known}")
        return found[0]


def load_bench(bench_dir: Path) -> list[BenchResults]:
    """Every benchmark results file, by name; none when the directory does not exist."""
    if not bench_dir.is_dir():
        return []
    out = []
    for path in sorted(bench_dir.glob("*.json")):
        try:
            # Read as every results file is (regular, UTF-8, no duplicate key or NaN).
            data = read_regular_bytes(path)
            parsed = BenchFile.model_validate(parse_json(decode_utf8(data, path), path))
        except ResultsError as exc:
            raise PhaseError(f"{exc}; rerun `make bench`") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise PhaseError(f"{path}: {where}: {first['msg']} (a benchmark results file from "
                             "`make bench` is expected)") from None
        out.append(BenchResults(path, path.name, hashlib.sha256(data).hexdigest(), len(data),
                                parsed))
    return out


def row_anchor(row: BenchRow) -> str:
    return "bench-" + _safe(f"{row.item}--{row.reference_name}")


def show(value: float | None, unit: str) -> str:
    """A figure as the bench's own report writes it (bench/report.py), with its unit."""
    if value is None:
        return "—"
    if unit == "fraction":
        return f"{100 * value:.1f}%"
    text = f"{value:.0f}" if abs(value) >= 100 else (
        f"{value:.1f}" if abs(value) >= 1 else f"{value:.3f}")
    return f"{text} {unit}"


def figure(results: BenchResults, item: str, side: str, vs: str | None, href: str) -> Markup:
    """One benchmark figure for a note, linked to its row on the benchmarks page; the title
    says it is a median of n alternating repeats and gives the spread."""
    row = results.row(item, vs)
    if side not in ("phase", "reference"):
        raise PhaseError(f"bench(): side must be 'phase' or 'reference', not {side!r}")
    value = row.phase if side == "phase" else row.reference
    if value is None:
        raise PhaseError(f"{results.name}: row {item!r} has no {side} figure")
    samples = (row.samples or {}).get("phase" if side == "phase" else row.reference_name, [])
    text = show(value, row.unit).removesuffix(f" {row.unit}")
    relative = spread(samples, BENCH_SPREAD)
    title = (f"{'phase' if side == 'phase' else row.reference_name}, {row.item}: median of "
             f"{len(samples) or 'n/a'} alternating repeats"
             + (f" (lowest {min(samples):.1f}, highest {max(samples):.1f}, spread "
                f"{FIGURES['bench_spread'].show(relative)})" if relative is not None else "")
             + f"; {results.name}")
    return Markup(f'<a class="phase-figure phase-bench-figure" href="{safe_url(href)}#'
                  f'{row_anchor(row)}" title="{markdown_safe(title)}">{markdown_safe(text)}</a>')
