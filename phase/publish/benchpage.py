"""Benchmark results (`bench/results/*.json`, written by `make bench`) published as a site page,
and the figures notes cite from them (`bench(...)` in a note body).

A benchmark file is read leniently (its shape belongs to bench/, which may add fields), but
what the page and the notes use is checked: a file that lacks it is bad input naming the file
and the field. Each file gets a table (every row: phase's figure, the reference, ratio, target,
result, spread over repeats, n), its JSON as a download and the table as CSV and JSON, all
with sha256.
"""

from __future__ import annotations

import hashlib
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup
from pydantic import BaseModel, ConfigDict, ValidationError

from phase.errors import PhaseError
from phase.escaping import markdown_safe, safe_url
from phase.results import ResultsError
from phase.results.jsonread import decode_utf8, parse_json, read_regular_bytes
from phase.results.safepath import confined

from .anchors import _safe
from .downloads import TableDownloads, cells_frame, frame_files

PAGE_DIR = "bench"
BENCH_GLOBAL = "phase_bench"  # the loaded results, set on the Jinja environment by the build
NOISY = 0.10  # bench/report.py's threshold: a spread above it means rerun on a quiet machine


class BenchRow(BaseModel):
    model_config = ConfigDict(extra="allow")

    section: str
    item: str
    phase: float | None
    reference: float | None
    reference_name: str
    unit: str
    ratio: float | None = None
    target: str | None = None
    passed: bool | None = None
    detail: str = ""
    samples: dict[str, list[float]] | None = None
    noise: float | None = None

    @property
    def n(self) -> int | None:
        """Repeats behind phase's figure (the longest sample list where names differ)."""
        if not self.samples:
            return None
        return max(len(v) for v in self.samples.values())


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


def _verdict(row: BenchRow) -> str:
    if row.target is None:
        return "info"
    if row.passed is None:
        return "n/a"
    word = "pass" if row.passed else "FAIL"
    return f"{word} (noisy)" if row.noise is not None and row.noise > NOISY else word


def _ratio(row: BenchRow) -> str:
    if row.ratio is None:
        return "—"
    if row.unit == "fraction":
        return f"{100 * row.ratio:+.1f} pts"
    return f"{row.ratio:.3f}×"


HEADER = ["item", "phase", "reference", "vs", "ratio", "target", "result", "spread", "n",
          "detail"]


def table_rows(results: BenchResults) -> list[dict[str, Any]]:
    """Rows for the page: shown text plus an anchor each."""
    out = []
    for r in results.rows:
        out.append({
            "anchor": row_anchor(r),
            "cells": [r.item, show(r.phase, r.unit), show(r.reference, r.unit), r.reference_name,
                      _ratio(r), r.target or "", _verdict(r),
                      "" if r.noise is None else f"{100 * r.noise:.0f}%",
                      "" if r.n is None else str(r.n), r.detail],
        })
    return out


def table_downloads(results: BenchResults) -> TableDownloads:
    records = [[r.section, r.item, r.phase, r.reference, r.reference_name, r.unit, r.ratio,
                r.target, r.passed, r.noise, r.n, r.detail] for r in results.rows]
    frame = cells_frame(["section", "item", "phase", "reference", "vs", "unit", "ratio",
                         "target", "passed", "spread", "n", "detail"], records)
    return frame_files(frame, f"{results.stem}-table", "", f"table of {results.name}")


def machine_line(results: BenchResults) -> str:
    m = results.data.machine
    parts = [str(m.get("cpu_model") or "unknown CPU"),
             f"{m.get('physical_cores', '?')} cores", f"{m.get('threads_used', '?')} threads used"]
    if m.get("native_build"):
        parts.append(f"native llama.cpp {m['native_build']}")
    return ", ".join(parts)


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
    title = (f"{'phase' if side == 'phase' else row.reference_name}, {row.item}: median of "
             f"{len(samples) or 'n/a'} alternating repeats"
             + (f" (lowest {min(samples):.1f}, highest {max(samples):.1f}, spread "
                f"{(max(samples) - min(samples)) / statistics.median(samples):.0%})"
                if len(samples) > 1 else "")
             + f"; {results.name}")
    return Markup(f'<a class="phase-figure phase-bench-figure" href="{safe_url(href)}#'
                  f'{row_anchor(row)}" title="{markdown_safe(title)}">{markdown_safe(text)}</a>')


def write_bench_page(docs_dir: Path, env: Any) -> str:
    """Write the benchmarks page and its downloads under docs_dir/bench; returns the page's
    path relative to docs_dir. The results come from the environment (BENCH_GLOBAL)."""
    out: dict[str, str | bytes] = {}
    files = []
    for r in env.globals.get(BENCH_GLOBAL, []):
        downloads = table_downloads(r)
        for f in downloads.files:
            out[f"{PAGE_DIR}/{f.name}"] = f.data
        try:
            data = read_regular_bytes(r.path)  # the bytes load_bench validated, or an error
        except ResultsError as exc:
            raise PhaseError(str(exc)) from None
        if hashlib.sha256(data).hexdigest() != r.sha256:
            raise PhaseError(f"{r.path}: changed while the site was being built; build again")
        out[f"{PAGE_DIR}/{r.name}"] = data
        files.append({"results": r, "machine": machine_line(r), "rows": table_rows(r),
                      "header": HEADER, "downloads": downloads})
    out[f"{PAGE_DIR}/index.md"] = env.get_template("bench_page.md.j2").render(files=files)
    for rel, data in out.items():
        target = confined(docs_dir, rel, "benchmarks page file")  # names come from data
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            target.write_bytes(data)
        else:
            target.write_text(data, encoding="utf-8")
    return f"{PAGE_DIR}/index.md"
