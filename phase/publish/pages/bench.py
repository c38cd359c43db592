"""The Benchmarks page (bench/index.md): every file under bench/results/, loaded by the build
(phase.publish.numbers.bench, which also gives notes the figures they cite from it).

Each file gets a table (every row: phase's figure, the reference, ratio, target, result, spread
over repeats, n), each row anchored so that a note's figure links to it, its JSON as a download
and the table as CSV and JSON, all with sha256.
"""

from __future__ import annotations

from typing import Any

from phase.analysis import FIGURES
from phase.analysis.bench_rows import NOISY, BenchRow
from phase.base.errors import PhaseError
from phase.publish.notes.page import Page
from phase.publish.notes.source import NoteSource
from phase.publish.numbers.bench import BenchResults, row_anchor, show
from phase.publish.numbers.downloads import TableDownloads, cells_frame, frame_files
from phase.publish.pages.base import BuildInputs, NavItem, PageKind, Rendered
from phase.results import ResultsError
from phase.storage.jsonread import read_same_bytes

PAGE_DIR = "bench"
HEADER = ["item", "phase", "reference", "vs", "ratio", "target", "result", "spread", "n",
          "detail"]


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


def table_rows(results: BenchResults) -> list[dict[str, Any]]:
    """Rows for the page: shown text plus an anchor each."""
    out = []
    for r in results.rows:
        out.append({
            "anchor": row_anchor(r),
            "cells": [r.item, show(r.phase, r.unit), show(r.reference, r.unit), r.reference_name,
                      _ratio(r), r.target or "", _verdict(r),
                      "" if r.noise is None else FIGURES["bench_spread"].show(r.noise),
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
    if m.get("native_tools"):
        parts.append(f"llama.cpp tools {m['native_tools']}")
    return ", ".join(parts)


class BenchKind(PageKind):
    """The Benchmarks page and its downloads (bench/); the page exists with no results too,
    saying there are none."""

    name = "bench"
    dirs = (PAGE_DIR,)

    def render(self, build: BuildInputs) -> Rendered:
        assets: dict[str, bytes] = {}
        files = []
        for r in build.bench:
            downloads = table_downloads(r)
            for f in downloads.files:
                assets[f"{PAGE_DIR}/{f.name}"] = f.data
            try:  # strictly, and the bytes load_bench validated
                assets[f"{PAGE_DIR}/{r.name}"] = read_same_bytes(r.path, r.sha256)
            except ResultsError as exc:
                raise PhaseError(str(exc)) from None
            files.append({"results": r, "machine": machine_line(r), "rows": table_rows(r),
                          "header": HEADER, "downloads": downloads})
        text = build.env.get_template("bench_page.md.j2").render(files=files)
        return Rendered([Page(f"{PAGE_DIR}/index.md", text, assets)])

    def nav(self, notes: list[NoteSource]) -> list[NavItem]:
        return [{"Benchmarks": f"{PAGE_DIR}/index.md"}]
