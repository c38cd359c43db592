"""Render everything a site needs into one (staging) docs directory.

    validate every results file and every file a note cites (refuse on blocking findings)
    -> the generated notes (one per experiment and host class, from uncited campaigns)
    -> every page kind (phase.publish.pages.PAGE_KINDS) rendered from the same inputs
       (`BuildInputs`): the home page's notes list, every note's pages (archived versions
       served as published, others rendered), a data page per published results file and the
       data index, the cross-host pages, the Benchmarks page (bench/results/)
    -> the hand-written pages copied alongside (by the caller)

Nothing is written outside the docs directory given: the results directory is input only, and
new archive versions are only returned (`BuildResult.to_freeze`), written by the caller once
the whole build succeeded.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from phase.base.errors import PhaseError
from phase.publish.archive.store import Archive, FrozenVersion
from phase.publish.charts.spec import drawing_code, packages, vega_bundle
from phase.publish.data.cache import DatasetCache
from phase.publish.data.confirmations import CONFIRMATIONS_GLOBAL, attach
from phase.publish.data.datasets import Dataset
from phase.publish.notes.citations import NOTES_GLOBAL
from phase.publish.notes.generated import generated_notes
from phase.publish.notes.linked import ROOT_GLOBAL
from phase.publish.notes.render import environment
from phase.publish.notes.revisions import load_revisions
from phase.publish.notes.source import NoteSource, discover_notes, resolve_results
from phase.publish.numbers.bench import BENCH_GLOBAL, load_bench
from phase.publish.pages import PAGE_KINDS
from phase.publish.pages.base import BuildInputs, PageKind, Rendered
from phase.publish.site.paths import GENERATED, VENDOR_DIR, SitePaths
from phase.storage.safepath import confined
from phase.validate import Report, RuleSettings

VEGA_JS = f"{VENDOR_DIR}/vega.js"


def _vega_js(cache: DatasetCache) -> str:
    """The site's Vega bundle, from the build cache while the packages and the code that make
    it are the same: vl-convert assembles its ~0.9 MB in about three CPU seconds, at every
    build (the test suite starts `phase build` dozens of times), though it changes only with
    them."""
    key = packages()
    return cache.memo("vega-js", key, vega_bundle, sha256=hashlib.sha256(key.encode()).hexdigest(),
                      code=drawing_code(), encode=lambda text: text, decode=_text)


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("a vega-js entry holds the bundle's text")
    return value


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


def _write(root: Path, rel: str, data: str | bytes) -> None:
    # Every page, download and asset lands in the staging docs dir under a name made from
    # data (a slug, a file name, an archived asset): none may climb out of it.
    path = confined(root, Path(rel).as_posix(), "generated file")
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")


def copy_hand_written(docs_src: Path, docs_dir: Path,
                      generated: Sequence[str] = GENERATED) -> None:
    """The hand-written pages (everything but the generated parts) into a staging docs dir."""
    if not docs_src.is_dir():
        return
    for src in sorted(docs_src.rglob("*")):
        rel = src.relative_to(docs_src)
        if (src.is_dir() or any(rel.is_relative_to(g) for g in generated)
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
                include_quick: bool = False, freeze: bool = True,
                kinds: Sequence[PageKind] = PAGE_KINDS) -> BuildResult:
    """Render every page of every kind into `docs_dir` (a fresh directory); see the module
    doc. With `freeze`, the versions to publish are returned in `to_freeze`."""
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
    revisions = load_revisions(paths.notes_dir) if paths.notes_dir.is_dir() else {}
    # A campaign's file name -> its headline's confirmation campaign, for every page kind.
    confirmations = attach(by_path.values())
    gen = generated_notes(list(by_path.values()), set(quick), cited_by, archive,
                          paths.templates_dir, {n.slug for n in authored},
                          own_results=not paths.foreign_into_project_archive,
                          revisions=revisions, confirmations=confirmations)
    notes = authored + gen.notes
    versions = [[[by_path[p] for p in files] for files in per_note] for per_note in cited]
    versions += [[[ds] for ds in g_versions] for g_versions in gen.datasets]
    result = BuildResult(reports, list(by_path.values()), notes, lines=list(gen.lines))

    env = environment(paths.templates_dir)
    bench = load_bench(paths.bench_dir)
    # Notes cite bench figures and link repository files from any page: the templates carry them.
    env.globals.update({BENCH_GLOBAL: bench, ROOT_GLOBAL: paths.root})
    # A note states its headline with the confirmation campaign that measured it again.
    env.globals[CONFIRMATIONS_GLOBAL] = confirmations
    # A note citing another reads the latest campaigns behind it (notes/citations.py).
    env.globals[NOTES_GLOBAL] = {n.slug: (n.meta.title, v[-1] if v else [])
                                 for n, v in zip(notes, versions, strict=True)}
    _write(docs_dir, VEGA_JS, _vega_js(cache))
    build = BuildInputs(env=env, settings=settings, templates_dir=paths.templates_dir,
                        archive=archive, cache=cache, notes=notes, versions=versions,
                        datasets=by_path, cited_by=cited_by, bench=bench, freeze=freeze,
                        allow_mixed_builds=paths.allow_mixed_builds,
                        confirmations=confirmations)
    for kind in kinds:
        _write_rendered(docs_dir, kind, kind.render(build), result)
    return result


def _write_rendered(docs_dir: Path, kind: PageKind, out: Rendered, result: BuildResult) -> None:
    """Write what one page kind made and add it to the build's result. A file outside the
    kind's own dirs is refused: in the repository layout it would never reach docs/."""
    files: dict[str, str | bytes] = {}
    for page in out.pages:
        files[page.path] = page.text
        files.update(page.assets)
        result.pages.append(page.path)
    files.update(out.files)
    for rel, data in files.items():
        if not kind.owns(rel):
            raise ValueError(f"page kind {kind.name!r} wrote {rel}, outside its dirs "
                             f"{', '.join(kind.dirs)}")
        _write(docs_dir, rel, data)
    result.to_freeze += out.to_freeze
    result.states.update(out.states)
    result.lines += out.lines
