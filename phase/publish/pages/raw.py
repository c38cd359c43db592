"""One data page per results file: every run (anchored by run id), the JSON download, sha256.

Table rows in notes link here, so a reader can go from any number to the runs behind it.
Summary-only files get the same page with their rows (anchored by prompt and strategy) and a
plain statement that the raw runs are not in this repository.

`RawKind` is the page kind: a data page per published results file (with the file, its derived
summary and every table as downloads), then the data index.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment

from phase.analysis.formatting import DASH, fmt, pct
from phase.base.errors import PhaseError
from phase.publish.data.cache import DatasetCache, decode_bytes, encode_bytes, tree_fingerprint
from phase.publish.data.datasets import Dataset
from phase.publish.markup.anchors import note_page, run_anchor
from phase.publish.notes.page import Page
from phase.publish.notes.source import NoteSource
from phase.publish.numbers.downloads import (
    TableDownloads,
    TableFile,
    data_table,
    findings_frame,
    frame_files,
)
from phase.publish.numbers.findings import FindingRow, finding_rows
from phase.publish.numbers.profile_blocks import ProfileView, profile_view
from phase.publish.numbers.provenance import ProvenanceBox, provenance_box
from phase.publish.numbers.rungroups import RunGroup, run_groups
from phase.publish.numbers.tables import Cell, Table, build_table
from phase.publish.pages.base import BuildInputs, NavItem, PageKind, Rendered
from phase.results import ResultsFile, Run, SummaryFile, dump_json

ROOT = "../"  # data pages live in raw/
# Longer texts (model outputs, prompts) are cut on the page, with a pointer to the raw file:
# one page must stay readable however much a run generated.
SHOWN_CHARS = 20_000


@dataclass(frozen=True)
class Shown:
    """A text as the page shows it: its first SHOWN_CHARS characters and how many were left
    out (the whole text is in the downloadable results file)."""

    text: str
    omitted_chars: int = 0


def shown(text: str) -> Shown:
    if len(text) <= SHOWN_CHARS:
        return Shown(text)
    return Shown(text[:SHOWN_CHARS], len(text) - SHOWN_CHARS)


@dataclass(frozen=True)
class RunRow:
    anchor: str
    id: str
    cells: list[Cell]
    energy: list[Cell]
    output_sha256: str
    output_text: Shown


@dataclass(frozen=True)
class UsedBy:
    title: str
    version: int
    href: str


@dataclass(frozen=True)
class Download:
    name: str
    href: str
    sha256: str
    size_bytes: int


@dataclass(frozen=True)
class RawPage:
    title: str
    dataset: str
    kind: str
    download: Download
    summary_download: Download | None
    identity: list[tuple[str, str]]
    provenance: ProvenanceBox
    findings: list[FindingRow]
    settings: dict[str, object]
    prompts: list[tuple[str, Shown]]
    run_columns: list[str]
    sensors: list[str]
    runs: list[RunRow]
    summary_table: Table | None
    used_by: list[UsedBy] = field(default_factory=list)
    # The cost profile's blocks, which the cost-model tables of notes link to.
    profile: ProfileView | None = None
    # CSV and JSON of each table on the page: "runs" or "rows", and "findings".
    downloads: dict[str, TableDownloads] = field(default_factory=dict)
    # The runs of each condition (and the other sets a note's row names), which the notes'
    # rows link to once instead of linking each run.
    groups: list[RunGroup] = field(default_factory=list)

    @property
    def table_files(self) -> list[TableFile]:
        return [f for d in self.downloads.values() for f in d.files]


# Fewer, combined columns, so that the table fits a 1280 px window with every figure in view.
RUN_COLUMNS = [
    "repeat · order", "prompt × strategy", "tokens", "tokens/s", "prefill / decode s", "steps",
    "accepted / drafted", "accepted", "CPU s", "matches plain", "passes",
]


def _run_cells(run: Run) -> list[Cell]:
    if run.matches_plain is None:
        match = Cell(DASH, None, run.matches_plain_reason)
    elif run.matches_plain:
        match = Cell("yes")
    else:
        match = Cell(f"no, from token {run.first_divergence}", run.first_divergence)
    return [
        Cell(f"{run.repeat} · {run.order}", None, f"repeat {run.repeat}, run {run.order} in "
             "the order the campaign ran"),
        Cell(f"{run.prompt} × {run.strategy}"
             + "".join(f" × {name}={level}" for name, level in run.factors.items()), None,
             None if run.k is None else f"k = {run.k} (tokens proposed per step at most)"),
        Cell(str(run.tokens), run.tokens),
        Cell(fmt(run.tokens_per_s, 2), run.tokens_per_s),
        Cell(f"{fmt(run.prefill_s, 3)} / {fmt(run.decode_s, 3)}", run.decode_s),
        Cell(str(run.steps), run.steps),
        Cell(f"{run.accepted} / {run.drafted}", run.accepted),
        Cell(pct(run.acceptance, 1), run.acceptance, run.acceptance_reason),
        Cell(fmt(run.cpu_s, 3), run.cpu_s),
        match,
        _passes_cell(run),
    ]


def _passes_cell(run: Run) -> Cell:
    """How many back-to-back passes of the decode its energy window held (one in files whose
    windows were not sized): energy per token divides the window by all of their tokens."""
    if len(run.passes) <= 1:
        return Cell("1", 1, "one decode in the energy window")
    tokens = sum(p.tokens for p in run.passes)
    seconds = sum(p.decode_s for p in run.passes)
    return Cell(str(len(run.passes)), len(run.passes),
                f"{len(run.passes)} passes of the same decode in one energy window: {tokens} "
                f"tokens in {seconds:.3f} s of decoding; the figures in this row are the first "
                "pass's, energy per token is the window's over all passes' tokens")


def _energy_cells(ds: Dataset, run: Run, sensors: list[str]) -> list[Cell]:
    out = []
    for name in sensors:
        window = next((w for w in run.energy if w.sensor == name), None)
        if window is None:
            out.append(Cell(DASH, None, "no window for this sensor"))
        elif window.energy_j is None:
            out.append(Cell(DASH, None, window.energy_reason))
        else:
            finding = ds.report.rejection_of(run.id, name)
            text = f"{window.energy_j:.4g}"
            if finding is not None:
                out.append(Cell(text, window.energy_j, f"rejected ({finding.rule}): "
                                f"{finding.message}", struck=True))
            else:
                out.append(Cell(text, window.energy_j))
    return out


def _run_rows(ds: Dataset, raw: ResultsFile, sensors: list[str]) -> list[RunRow]:
    """Every run in the order it ran, anchored by run id."""
    return [
        RunRow(
            anchor=run_anchor(run.id),
            id=run.id,
            cells=_run_cells(run),
            energy=_energy_cells(ds, run, sensors),
            output_sha256=run.output_sha256,
            output_text=shown(run.output_text),
        )
        for run in sorted(raw.runs, key=lambda r: r.order)
    ]


def _campaign_identity(raw: ResultsFile) -> list[tuple[str, str]]:
    """What a raw file's page says of its campaign, after the file's own identity."""
    rows = [("created", raw.created.isoformat()), ("status", raw.status),
            ("runs", str(len(raw.runs))), ("tokens per run", str(raw.config.tokens)),
            ("repeats", str(raw.config.repeats)), ("seed", str(raw.config.seed)),
            ("shuffled", "yes" if raw.config.shuffle else "no")]
    if raw.config.blocked_by is not None:
        rows.append(("in blocks of", f"one {raw.config.blocked_by} level per block"))
    workload = raw.config.workload
    if workload is not None:  # the prompts came from a workload: which, and pinned how
        rows.append(("workload", f"{workload.name}: {workload.count} prompts from "
                                 f"{workload.source}, sha256 {workload.sha256}"))
    return rows


def build_raw_page(
    ds: Dataset,
    extra_provenance: dict[str, str],
    used_by: list[tuple[str, str, int]],
    summary_download: Download | None = None,
) -> RawPage:
    """`used_by` holds (title, slug, version) of every note version that cites this file."""
    results = ds.results
    download = Download(ds.name, ds.name, ds.sha256, ds.size_bytes)
    users = [UsedBy(title, v, note_page(slug, ROOT, v)) for title, slug, v in used_by]
    identity = [("id", results.id), ("experiment", results.experiment),
                ("note", results.note or DASH), ("schema version", str(ds.schema_version))]
    findings = finding_rows(ds, ROOT)
    # CSV and JSON of each table: the findings, and the runs (raw) or rows (summary).
    downloads = {"findings": frame_files(findings_frame(findings), f"{ds.stem}-findings", "",
                                         f"the findings ({ds.name})"),
                 "runs" if ds.raw is not None else "rows": data_table(ds)}
    common: dict[str, Any] = {
        "dataset": ds.name,
        "download": download,
        "summary_download": summary_download,
        "provenance": provenance_box(ds, ROOT, extra_provenance),
        "findings": findings,
        "downloads": downloads,
        "settings": ds.report.settings.as_dict(),
        "used_by": users,
    }
    raw = ds.raw
    if raw is None:
        summary = ds.summary
        identity += [("kind", "summary only" if summary.summary_only else "derived summary"),
                     ("source", summary.source)]
        return RawPage(
            title=f"Data: {ds.stem}",
            kind="summary",
            identity=identity,
            prompts=[],
            run_columns=[],
            sensors=[],
            runs=[],
            summary_table=build_table(ds, ROOT),
            **common,
        )
    identity += _campaign_identity(raw)
    sensors = [s.name for s in raw.sensors]
    return RawPage(
        title=f"Raw data: {ds.stem}",
        kind="raw",
        identity=identity,
        prompts=[(p.name, shown(p.text)) for p in raw.config.prompts],
        run_columns=RUN_COLUMNS,
        sensors=sensors,
        runs=_run_rows(ds, raw, sensors),
        summary_table=None,
        profile=profile_view(raw.profile), groups=run_groups(raw),
        **common,
    )


@dataclass(frozen=True)
class RawPageMemo:
    """Data pages from the build cache: a page is a function of its file (sha256, path,
    settings), the notes citing it, the provenance those add, and the templates."""

    cache: DatasetCache
    templates: str  # tree_fingerprint of the templates directory

    def page(self, env: Environment, ds: Dataset, extra: dict[str, str],
             used: list[tuple[str, str, int]], summary: Download | None
             ) -> tuple[str, list[tuple[str, bytes]]]:
        def make() -> tuple[str, list[tuple[str, bytes]]]:
            page = build_raw_page(ds, extra, used, summary)
            text = env.get_template("raw_page.md.j2").render(page=page, page_dataset=ds)
            return text, [(d.name, d.data) for d in page.table_files]

        key = [ds.sha256, str(ds.path), ds.report.settings.as_dict(), extra, used, summary,
               self.templates]
        return self.cache.memo("raw-page", key, make, sha256=ds.sha256, encode=_encode_page,
                               decode=_decode_page)


def _encode_page(page: tuple[str, list[tuple[str, bytes]]]) -> dict[str, Any]:
    text, files = page
    return {"text": text, "files": [[name, encode_bytes(data)] for name, data in files]}


def _decode_page(data: Any) -> tuple[str, list[tuple[str, bytes]]]:
    text = data["text"]
    if not isinstance(text, str):
        raise TypeError("text")
    return text, [(str(name), decode_bytes(blob)) for name, blob in data["files"]]


class RawKind(PageKind):
    """One data page per published results file, then the data index (raw/)."""

    name = "raw"
    dirs = ("raw",)

    def render(self, build: BuildInputs) -> Rendered:
        published = build.published
        _check_names(published)
        memo = RawPageMemo(build.cache, tree_fingerprint(build.templates_dir))
        pages = []
        for ds in published:
            assets: dict[str, bytes] = {}
            summary = _summary_download(ds, assets)
            text, table_files = memo.page(build.env, ds, _extra_provenance(ds, build.cited_by),
                                          build.used_by.get(ds.path, []), summary)
            # The very bytes that were validated (not a file swapped since): read once.
            assets[f"raw/{ds.name}"] = ds.data
            assets.update({f"raw/{name}": data for name, data in table_files})
            pages.append(Page(f"raw/{ds.stem}.md", text, assets))
        index = build.env.get_template("raw_index.md.j2").render(datasets=published)
        return Rendered([*pages, Page("raw/index.md", index)])

    def nav(self, notes: list[NoteSource]) -> list[NavItem]:
        return [{"Data": "raw/index.md"}]


def _summary_download(ds: Dataset, assets: dict[str, bytes]) -> Download | None:
    """A raw file's derived summary, offered as a download next to it (put into `assets`
    from memory: the results directory is input only)."""
    if not ds.is_raw:
        return None
    name = f"summary-{ds.path.stem}.json"
    data = dump_json(ds.summary).encode()
    assets[f"raw/{name}"] = data
    return Download(name, name, hashlib.sha256(data).hexdigest(), len(data))


def _check_names(datasets: list[Dataset]) -> None:
    seen: dict[str, Dataset] = {}
    for ds in datasets:
        for key in (ds.stem, ds.name):
            other = seen.get(key)
            if other is not None and other is not ds:
                raise PhaseError(f"{ds.path} and {other.path} would share the data page {key}; "
                                 "rename one")
            seen[key] = ds


def _extra_provenance(ds: Dataset, cited_by: dict[Path, list[NoteSource]]) -> dict[str, str]:
    """A transcribed file's provenance comes from the first note that cites it."""
    if not isinstance(ds.header, SummaryFile):
        return {}
    notes = cited_by.get(ds.path, [])
    return notes[0].meta.source_provenance if notes else {}
