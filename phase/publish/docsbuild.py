"""Render everything a site needs into one (staging) docs directory.

    validate every results file and every file a note cites (refuse on blocking findings)
    -> the generated notes (one per experiment and host class, from uncited campaigns)
    -> every note's pages: archived versions served as published, others rendered
    -> one data page per published results file (+ its derived summary and every table as
       CSV/JSON), the data index, the cross-host page, the Benchmarks page (bench/results/)
    -> the home page's notes list; the hand-written pages copied alongside

Nothing is written outside the docs directory given: the results directory is input only, and
new archive versions are only returned (`BuildResult.to_freeze`), written by the caller once
the whole build succeeded.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment

from phase.errors import PhaseError
from phase.results import SummaryFile, dump_json
from phase.results.jsonread import read_regular_bytes
from phase.results.safepath import confined
from phase.validate import Report, RuleSettings

from .anchors import note_page
from .archive import Archive, FrozenVersion
from .benchpage import BENCH_GLOBAL, load_bench, write_bench_page
from .charts import vega_bundle
from .crosshost import render_pages as crosshost_pages
from .dataset_cache import DatasetCache, decode_bytes, encode_bytes, tree_fingerprint
from .datasets import Dataset
from .generated import generated_notes
from .home import home_entries
from .notes import NoteSource, discover_notes, resolve_results
from .paths import GENERATED, SitePaths
from .rawpages import Download, build_raw_page
from .render import block, environment, render_finding
from .sources import ROOT_GLOBAL
from .versions import note_pages

HOME_SNIPPET = "notes/_list.md"
VEGA_JS = "assets/vendor/vega.js"


class BlockedError(PhaseError):
    """Some results file has blocking findings; nothing was published."""

    def __init__(self, reports: list[Report]) -> None:
        self.reports = reports
        names = ", ".join(Path(r.file).name for r in reports)
        super().__init__(f"blocking findings in {names}; nothing was published "
                         "(run `phase validate` on the file for details)")


@dataclass
class BuildResult:
    reports: list[Report]
    datasets: list[Dataset]
    notes: list[NoteSource]  # authored, then generated
    pages: list[str] = field(default_factory=list)  # written, relative to the docs dir
    to_freeze: list[FrozenVersion] = field(default_factory=list)
    frozen: list[Path] = field(default_factory=list)  # archive dirs this build wrote
    states: dict[str, list[str]] = field(default_factory=dict)  # note slug -> per version
    lines: list[str] = field(default_factory=list)  # what to tell the user

    @property
    def counts(self) -> dict[str, int]:
        out = {"blocking": 0, "rejected": 0, "warning": 0}
        for r in self.reports:
            for sev, n in r.counts().items():
                out[sev] += n
        return out


def results_files(results_dir: Path) -> list[Path]:
    """Every results file in the directory (schema.json is the JSON Schema, not results)."""
    if not results_dir.is_dir():
        return []
    return sorted(p for p in results_dir.glob("*.json") if p.name != "schema.json")


def _write(root: Path, rel: str | Path, data: str | bytes) -> None:
    # Every page, download and asset lands in the staging docs dir under a name made from
    # data (a slug, a file name, an archived asset): none may climb out of it.
    path = confined(root, Path(rel).as_posix(), "generated file")
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")


def copy_hand_written(docs_src: Path, docs_dir: Path) -> None:
    """The hand-written pages (everything but the generated parts) into a staging docs dir."""
    if not docs_src.is_dir():
        return
    for src in sorted(docs_src.rglob("*")):
        rel = src.relative_to(docs_src)
        if (src.is_dir() or any(rel.is_relative_to(g) for g in GENERATED)
                or any(part.startswith(".") for part in rel.parts)):
            continue
        dest = docs_dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)


def validate_all(
    paths: SitePaths, notes: list[NoteSource], settings: RuleSettings, extra: list[Path],
    cache: DatasetCache | None = None,
) -> tuple[list[Report], dict[Path, Dataset], list[list[list[Path]]]]:
    """Validate every results file (and `extra`, the quick ones when previewed) and every file a
    note cites; blocking findings raise."""
    cited = [[resolve_results(n, v, paths.results_dir) for v in n.meta.versions] for n in notes]
    files = list(results_files(paths.results_dir)) + extra
    for per_note in cited:
        for per_version in per_note:
            files += [p for p in per_version if p not in files]
    reports: list[Report] = []
    datasets: dict[Path, Dataset] = {}
    cache = cache or DatasetCache()
    for path in files:
        report, ds = cache.load(path, settings)
        reports.append(report)
        if ds is not None:
            datasets[path] = ds
    blocked = [r for r in reports if r.blocking]
    if blocked:
        raise BlockedError(blocked)
    # A campaign with no finished run yet has nothing to publish: notes show "no results yet".
    cited = [[[p for p in files if p in datasets] for files in per_note] for per_note in cited]
    return reports, datasets, cited


def render_docs(paths: SitePaths, docs_dir: Path, settings: RuleSettings,
                include_quick: bool = False, freeze: bool = True) -> BuildResult:
    """Render every page into `docs_dir` (a fresh directory); see the module doc. With
    `freeze`, the versions to publish are returned in `to_freeze`."""
    authored = discover_notes(paths.notes_dir) if paths.notes_dir.is_dir() else []
    quick = results_files(paths.quick_dir) if include_quick else []
    cache = DatasetCache()
    reports, by_path, cited = validate_all(paths, authored, settings, quick, cache)
    archive = Archive(paths.published_dir)
    cited_by: dict[Path, list[NoteSource]] = {}
    for note, per_note in zip(authored, cited, strict=True):
        for files in per_note:
            for p in files:
                cited_by.setdefault(p, []).append(note)
    gen = generated_notes(list(by_path.values()), set(quick), cited_by, archive,
                          paths.templates_dir, {n.slug for n in authored})
    notes = authored + gen.notes
    versions = [[[by_path[p] for p in files] for files in per_note] for per_note in cited]
    versions += [[[ds] for ds in g_versions] for g_versions in gen.datasets]
    result = BuildResult(reports, list(by_path.values()), notes, lines=list(gen.lines))

    env = environment(paths.templates_dir)
    env.globals.update({BENCH_GLOBAL: load_bench(paths.bench_dir), ROOT_GLOBAL: paths.root})
    _write(docs_dir, VEGA_JS, vega_bundle())
    used_by: dict[Path, list[tuple[str, str, int]]] = {}
    for note, by_version in zip(notes, versions, strict=True):
        built = note_pages(env, note, by_version, archive, templates_dir=paths.templates_dir,
                           settings=settings, freeze=freeze)
        for page in built.pages:
            _write(docs_dir, page.path, page.text)
            result.pages.append(page.path)
            for rel, data in page.assets.items():
                _write(docs_dir, rel, data)
        result.to_freeze += built.to_freeze
        result.states[note.slug] = built.states
        result.lines += built.notices
        for number, files in enumerate(by_version, start=1):
            for ds in files:
                used_by.setdefault(ds.path, []).append((note.meta.title, note.slug, number))

    published = [ds for path, ds in by_path.items() if not ds.derived_summary or path in used_by]
    result.pages += _raw_pages(env, docs_dir, published, used_by, cited_by,
                               RawPageMemo(cache, tree_fingerprint(paths.templates_dir)))
    for rel, data in crosshost_pages(env, published).items():
        _write(docs_dir, rel, data)
        result.pages += [rel] if rel.endswith(".md") else []
    result.pages.append(write_bench_page(docs_dir, env))
    findings = {n.slug: str(render_finding(env, n, by_version[-1], "", note_page(n.slug, "")))
                for n, by_version in zip(notes, versions, strict=True)
                if n.kind == "authored" and by_version}
    entries = home_entries(list(zip(notes, versions, strict=True)), "", findings)
    home = block(env.get_template("home_list.html.j2").render(entries=entries))
    _write(docs_dir, HOME_SNIPPET, str(home).strip() + "\n")
    return result


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


def _raw_pages(env: Environment, docs_dir: Path, published: list[Dataset],
               used_by: dict[Path, list[tuple[str, str, int]]],
               cited_by: dict[Path, list[NoteSource]], memo: RawPageMemo) -> list[str]:
    """One data page per published results file (with the file, its derived summary and its
    tables as downloads), then the data index; returns the pages written."""
    _check_names(published)
    pages = []
    for ds in published:
        text, table_files = memo.page(env, ds, _extra_provenance(ds, cited_by),
                                      used_by.get(ds.path, []), _summary_download(docs_dir, ds))
        raw = read_regular_bytes(ds.path)  # strictly, and the very bytes validated
        if hashlib.sha256(raw).hexdigest() != ds.sha256:
            raise PhaseError(f"{ds.path}: changed while the site was being built; build again")
        _write(docs_dir, "raw/" + ds.name, raw)
        for name, data in table_files:
            _write(docs_dir, "raw/" + name, data)
        rel = f"raw/{ds.stem}.md"
        _write(docs_dir, rel, text)
        pages.append(rel)
    _write(docs_dir, "raw/index.md",
           env.get_template("raw_index.md.j2").render(datasets=published))
    return [*pages, "raw/index.md"]


def _summary_download(docs: Path, ds: Dataset) -> Download | None:
    """A raw file's derived summary, offered as a download next to it (written into the docs
    dir from memory: the results directory is input only)."""
    if not ds.is_raw:
        return None
    name = f"summary-{ds.path.stem}.json"
    data = dump_json(ds.summary).encode()
    _write(docs, "raw/" + name, data)
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
