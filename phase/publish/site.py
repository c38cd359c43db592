"""Orchestration: validate every results file, render the notes, build and serve the site.

    build_docs(paths)   validate (refuse on blocking findings) -> summaries (in memory) ->
                        docs_dir/{notes,raw,assets/vendor} (generated, git-ignored)
    build_site(paths)   build_docs + `mkdocs build --strict` (mkdocs' own Python API) -> site_dir
    serve(paths.site_dir)

Every directory is configurable through SitePaths, so tests build into temporary directories and
never touch the repository's docs/, site/ or results/.
"""

from __future__ import annotations

import functools
import hashlib
import html
import http.server
import logging
import shutil
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jinja2 import Environment

from phase import REPO_ROOT
from phase.errors import PhaseError
from phase.results import SummaryFile, dump_json
from phase.validate import Report, RuleSettings, format_finding

from .benchpage import BENCH_GLOBAL, load_bench, write_bench_page
from .charts import vega_bundle
from .datasets import Dataset, load_dataset
from .notes import NoteError, NoteSource, discover_notes, resolve_results
from .rawpages import Download, build_raw_page
from .render import block, environment, note_entries, render_note
from .sources import ROOT_GLOBAL

# Paths under docs_dir that the build owns: removed and rewritten on every build.
GENERATED = ("notes", "raw", "bench", "assets/vendor")
HOME_SNIPPET = "notes/_list.md"
VEGA_JS = "assets/vendor/vega.js"


@dataclass(frozen=True)
class SitePaths:
    root: Path
    notes_dir: Path
    templates_dir: Path
    results_dir: Path
    docs_src: Path  # hand-written pages (the repository's docs/)
    docs_dir: Path  # what mkdocs reads: hand-written + generated
    site_dir: Path
    mkdocs_yml: Path
    bench_dir: Path  # benchmark results (`make bench`), published as the Benchmarks page

    @classmethod
    def default(cls, root: Path = REPO_ROOT, **overrides: Path | None) -> SitePaths:
        """The repository's layout; any path given (not None) replaces the default."""
        paths = cls(
            root=root,
            notes_dir=root / "phase" / "notes",
            templates_dir=root / "templates",
            results_dir=root / "results",
            docs_src=root / "docs",
            docs_dir=root / "docs",
            site_dir=root / "site",
            mkdocs_yml=root / "mkdocs.yml",
            bench_dir=root / "bench" / "results",
        )
        given = {k: Path(v) for k, v in overrides.items() if v is not None}
        return replace(paths, **given)


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
    notes: list[NoteSource]
    pages: list[str] = field(default_factory=list)  # written, relative to docs_dir
    findings: dict[str, str] = field(default_factory=dict)  # rendered finding, by note slug

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


def _write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")


def _prepare_docs_dir(paths: SitePaths) -> None:
    docs = paths.docs_dir
    docs.mkdir(parents=True, exist_ok=True)
    for name in GENERATED:
        target = docs / name
        if target.is_dir():
            shutil.rmtree(target)
    if docs.resolve() == paths.docs_src.resolve() or not paths.docs_src.is_dir():
        return
    for src in sorted(paths.docs_src.rglob("*")):
        rel = src.relative_to(paths.docs_src)
        if src.is_dir() or any(rel.is_relative_to(g) for g in GENERATED):
            continue
        dest = docs / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)


def validate_all(
    paths: SitePaths, notes: list[NoteSource], settings: RuleSettings
) -> tuple[list[Report], dict[Path, Dataset], list[list[list[Path]]]]:
    """Validate every results file and every file a note cites; blocking findings raise."""
    cited = [[resolve_results(n, v, paths.results_dir) for v in n.meta.versions] for n in notes]
    files = list(results_files(paths.results_dir))
    for per_note in cited:
        for per_version in per_note:
            files += [p for p in per_version if p not in files]
    reports: list[Report] = []
    datasets: dict[Path, Dataset] = {}
    for path in files:
        report, ds = load_dataset(path, settings)
        reports.append(report)
        if ds is not None:
            datasets[path] = ds
    blocked = [r for r in reports if r.blocking]
    if blocked:
        raise BlockedError(blocked)
    # A campaign with no finished run yet has nothing to publish: notes show "no results yet".
    cited = [[[p for p in files if p in datasets] for files in per_note] for per_note in cited]
    return reports, datasets, cited


def build_docs(paths: SitePaths, settings: RuleSettings | None = None) -> BuildResult:
    """Validate every results file (refuse on blocking findings), then render the notes, one
    data page per published results file, the data index and the home page's notes list."""
    settings = settings or RuleSettings()
    notes = discover_notes(paths.notes_dir) if paths.notes_dir.is_dir() else []
    reports, by_path, cited = validate_all(paths, notes, settings)
    result = BuildResult(reports, list(by_path.values()), notes)

    _prepare_docs_dir(paths)
    env = environment(paths.templates_dir)
    env.globals.update({BENCH_GLOBAL: load_bench(paths.bench_dir), ROOT_GLOBAL: paths.root})
    _write(paths.docs_dir / VEGA_JS, vega_bundle())
    used_by = _render_notes(paths.docs_dir, env, notes, by_path, cited, result)
    published = _published(by_path, used_by)
    _check_names(published)
    for ds in published:
        page = build_raw_page(ds, _extra_provenance(ds, notes, cited),
                              used_by.get(ds.path, []), _summary_download(paths.docs_dir, ds))
        text = env.get_template("raw_page.md.j2").render(page=page, page_dataset=ds)
        _write(paths.docs_dir / "raw" / ds.name, ds.path.read_bytes())
        for download in page.table_files:
            _write(paths.docs_dir / "raw" / download.name, download.data)
        rel = f"raw/{ds.stem}.md"
        _write(paths.docs_dir / rel, text)
        result.pages.append(rel)

    index = env.get_template("raw_index.md.j2").render(datasets=published)
    _write(paths.docs_dir / "raw/index.md", index)
    result.pages.append("raw/index.md")
    result.pages.append(write_bench_page(paths.docs_dir, env))
    home = block(env.get_template("home_list.html.j2").render(
        entries=note_entries(notes, "", result.findings)))
    _write(paths.docs_dir / HOME_SNIPPET, str(home).strip() + "\n")
    return result


UsedBy = dict[Path, list[tuple[str, str, int]]]


def _render_notes(
    docs: Path,
    env: Environment,
    notes: list[NoteSource],
    by_path: dict[Path, Dataset],
    cited: list[list[list[Path]]],
    result: BuildResult,
) -> UsedBy:
    """Every version of every note; returns (title, slug, version) of the notes citing each file."""
    used_by: UsedBy = {}
    for note, per_version in zip(notes, cited, strict=True):
        by_version = [[by_path[p] for p in files] for files in per_version]
        for number, files in enumerate(per_version, start=1):
            for p in files:
                used_by.setdefault(p, []).append((note.meta.title, note.slug, number))
        pages = render_note(env, note, by_version)
        result.findings[note.slug] = str(pages[-1].finding)
        for page in pages:
            _write(docs / page.path, page.text)
            result.pages.append(page.path)
            for rel, data in page.assets.items():
                _write(docs / rel, data)
    return used_by


def _summary_download(docs: Path, ds: Dataset) -> Download | None:
    """A raw file's derived summary, offered as a download next to it (written into the docs
    dir from memory: the results directory is input only)."""
    if ds.raw is None:
        return None
    name = f"summary-{ds.path.stem}.json"
    data = dump_json(ds.summary).encode()
    _write(docs / "raw" / name, data)
    return Download(name, name, hashlib.sha256(data).hexdigest(), len(data))


def _published(by_path: dict[Path, Dataset], used_by: UsedBy) -> list[Dataset]:
    """Raw and transcribed files get a data page; a derived summary file (left in a results
    directory by an older phase) only when a note cites it."""
    return [ds for path, ds in by_path.items() if not ds.derived_summary or path in used_by]


def _check_names(datasets: list[Dataset]) -> None:
    seen: dict[str, Dataset] = {}
    for ds in datasets:
        for key in (ds.stem, ds.name):
            other = seen.get(key)
            if other is not None and other is not ds:
                raise PhaseError(f"{ds.path} and {other.path} would share the data page {key}; "
                                 "rename one")
            seen[key] = ds


def _extra_provenance(
    ds: Dataset, notes: list[NoteSource], cited: list[list[list[Path]]]
) -> dict[str, str]:
    """A transcribed file's provenance comes from the first note that cites it."""
    if not isinstance(ds.results, SummaryFile):
        return {}
    for note, per_version in zip(notes, cited, strict=True):
        if any(ds.path in files for files in per_version):
            return note.meta.source_provenance
    return {}


# --- mkdocs -------------------------------------------------------------------------------


def nav(paths: SitePaths, notes: list[NoteSource]) -> list[Any]:
    # Titles are escaped here because mkdocs' theme templates do not escape nav titles.
    items: list[Any] = [{"Home": "index.md"}]
    if notes:
        items.append({"Notes": [{html.escape(n.meta.title): f"notes/{n.slug}/index.md"}
                                for n in notes]})
    items.append({"Data": "raw/index.md"})
    items += [{"Benchmarks": "bench/index.md"}] if (paths.docs_dir / "bench").is_dir() else []
    for title, page in (("About", "about.md"), ("Results format", "results-format.md"),
                        ("Architecture", "architecture.md")):
        if (paths.docs_dir / page).is_file():
            items.append({title: page})
    return items


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def mkdocs_build(paths: SitePaths, notes: list[NoteSource]) -> None:
    """`mkdocs build --strict` through mkdocs' Python API, with this build's directories."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    collect = _Collect()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(collect)
    try:
        config = load_config(
            str(paths.mkdocs_yml),
            docs_dir=str(paths.docs_dir),
            site_dir=str(paths.site_dir),
            strict=True,
            nav=nav(paths, notes),
        )
        snippets = config["mdx_configs"].setdefault("pymdownx.snippets", {})
        snippets["base_path"] = [str(paths.docs_dir)]
        build(config)
    except MkDocsException as exc:
        detail = "; ".join(collect.messages) or str(exc)
        raise PhaseError(f"mkdocs build --strict failed: {detail}") from None
    finally:
        logger.removeHandler(collect)


def build_site(paths: SitePaths, settings: RuleSettings | None = None) -> BuildResult:
    result = build_docs(paths, settings)
    mkdocs_build(paths, result.notes)
    return result


def _brief(report: Report) -> list[str]:
    """Rejected values in full (they change what is published); warnings counted per rule."""
    lines = [format_finding(f) for f in report.findings if f.severity == "rejected"]
    per_rule = Counter(f.rule for f in report.findings if f.severity == "warning")
    if per_rule:
        counted = ", ".join(f"{n} {rule}" for rule, n in sorted(per_rule.items()))
        lines.append(f"{report.file}: warnings: {counted} (details: phase validate {report.file})")
    return lines


def describe(result: BuildResult) -> list[str]:
    """Lines for the CLI: what was validated and rendered."""
    lines = [line for r in result.reports if r.has_findings for line in _brief(r)]
    c = result.counts
    lines.append(
        f"validated {len(result.reports)} results file(s): {c['rejected']} rejected value(s), "
        f"{c['warning']} warning(s), no blocking findings"
    )
    for note in result.notes:
        versions = ", ".join(f"v{v.version}" + (" (draft)" if v.draft else "")
                             for v in note.meta.versions)
        lines.append(f"note {note.slug}: {versions}")
    published = {d.path for d in result.datasets}
    for r in result.reports:
        if Path(r.file) not in published:
            lines.append(f"skipped {r.file}: no finished runs yet")
    return lines


# --- serving ------------------------------------------------------------------------------


@contextmanager
def serving(site_dir: Path, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve site_dir over HTTP in a background thread; yields the base URL."""
    if not (site_dir / "index.html").is_file():
        raise PhaseError(f"{site_dir}/index.html does not exist; run `phase site` first")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site_dir))
    server = http.server.ThreadingHTTPServer((host, port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def serve(site_dir: Path, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve until interrupted (what `phase serve` runs)."""
    if not (site_dir / "index.html").is_file():
        raise PhaseError(f"{site_dir}/index.html does not exist; run `phase site` first")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site_dir))
    with http.server.ThreadingHTTPServer((host, port), handler) as server:
        server.serve_forever()


__all__ = [
    "BlockedError",
    "BuildResult",
    "NoteError",
    "SitePaths",
    "build_docs",
    "build_site",
    "describe",
    "mkdocs_build",
    "serve",
    "serving",
]
