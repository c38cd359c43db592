"""Note versions -> Markdown pages (with inline HTML) for mkdocs.

A note source's body is a Jinja template; these functions are what it can call:

    {{ results_table() }}         the results table of every file in this version, with
                                  its CSV and JSON downloads
    {{ charts() }}                every chart;  {{ chart("per_k") }} one of them
    {{ findings() }}              the validation findings, rejected values struck through
    {{ provenance() }}            machine, software, models + sha256, date, commit
    {{ reproduce() }}             the reproduce command (and each campaign's exact command)
    {{ value("code", "draft-4", "tokens_per_s") }}   one figure, for prose (figures.py lists
                                  value_range, step, bench, model_size, baseline_caveats,
                                  interval, resolved)
    {{ cost_curve() }}, {{ cost_prediction() }}, {{ break_even() }}, {{ auto_choices() }}
                                  the cost model (phase.publish.notes.cost_section)
    {{ memory_table() }}, {{ bandwidth_table() }}, {{ roofline() }}, {{ memory_findings() }}
                                  a memory study (phase.publish.notes.memory_section)
    {{ crossover_table() }}, {{ serving_ratios() }}, {{ auto_table() }}, {{ latency_table() }},
    {{ serving_charts() }}, {{ crossover_findings() }}, {{ serving_section() }}
                                  a serving study (phase.publish.notes.serving_section;
                                  appended after the body of a page that calls none of them
                                  where a results file has a concurrency factor)

The front matter's `finding` is rendered with the same calls (the latest version's data on
the home page). Each takes an optional `file="name.json"` to restrict it to one results
file. A page that does not call one of the first five gets it appended, so every page has
all of them. Also available: `has_results`, `version` (its number, for text that only
later versions carry), `rows()` (summary rows), `note_url("slug")` (a link target for
another note), `page_url("bench/index.md")` (a site page), and `file_url(path)` /
`source_link(path)` (a repository file published next to the version's page, with sha256).

Every value that comes from data is HTML-escaped (Jinja autoescape): a prompt named
`<script>` shows as text. A version's page is a pure function of its own version's inputs
(and the previous version's, for the changes table); once published it is served from the
archive (phase.publish.pages.note), whatever later changes to the note, templates or rules.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import jinja2
from markupsafe import Markup, escape

from phase.analysis import condition_key
from phase.analysis.counts import row_acceptance_counts
from phase.analysis.queries import Condition
from phase.base.escaping import finalize, markdown_safe, markdown_text, safe_url
from phase.base.escaping import join as md_join
from phase.publish.charts.spec import ENERGY_KINDS, STRATEGY_KINDS, Chart
from phase.publish.data.confirmations import CONFIRMATIONS_GLOBAL
from phase.publish.data.datasets import Dataset, page_stem
from phase.publish.markup.anchors import raw_page
from phase.publish.markup.islands import island
from phase.publish.markup.values import data_value
from phase.publish.notes.citations import cited_section
from phase.publish.notes.cost_section import cost_calls
from phase.publish.notes.figures import CAVEAT_ID, Figures
from phase.publish.notes.linked import ROOT_GLOBAL, SOURCES_DIR, source_file
from phase.publish.notes.memory_section import memory_calls
from phase.publish.notes.page import Page, PageAssets
from phase.publish.notes.serving_section import ServingCalls, placed, serving_calls
from phase.publish.notes.source import NoteError, NoteSource, VersionMeta
from phase.publish.notes.temperature_section import temperature_calls
from phase.publish.numbers.bench import BENCH_GLOBAL, BenchResults
from phase.publish.numbers.builds import versus
from phase.publish.numbers.changes import compare
from phase.publish.numbers.downloads import findings_frame, results_frame
from phase.publish.numbers.findings import finding_rows
from phase.publish.numbers.provenance import provenance_box
from phase.publish.numbers.tables import build_table
from phase.results import SummaryRow

SECTIONS = ("results_table", "charts", "findings", "provenance", "reproduce")


def environment(templates_dir: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        # Every value is escaped for Markdown, not only for HTML (phase.base.escaping): the pages
        # are Markdown, and `[x](javascript:...)` or `{: onclick=... }` survive HTML escaping.
        finalize=finalize,
    )
    env.filters["pre"] = preformatted
    env.filters["md"] = markdown_text
    env.filters["join"] = md_join
    env.filters["url"] = safe_url
    env.filters["authored"] = authored_markdown
    env.filters["island"] = island
    env.filters["value"] = data_value
    return env


def authored_markdown(text: str) -> Markup:
    """Markdown a note's author wrote (a version's changes): HTML-escaped only, so that its
    Markdown renders. Never for data: a generated note's texts are data."""
    return Markup(escape(text))


def preformatted(text: str) -> Markup:
    """Escaped text for <pre> with newlines as character references, so no blank line can
    end the Markdown HTML block it sits in, whatever the text holds."""
    return Markup(str(escape(text)).replace("\n", "&#10;"))


def block(html: str) -> Markup:
    """An HTML block Markdown leaves alone: blank lines around it, none inside it, marked as
    an island so that the build need not parse it (phase.publish.markup.islands)."""
    return island(html)


KINDS = STRATEGY_KINDS + ENERGY_KINDS  # what charts() draws, questions first

# A dataset's chart is drawn once per build, though two pages show it (a version's frozen page
# and the note's latest page): the cache holds the dataset too, so its id is not reused.
_CHART_CACHE: OrderedDict[tuple[int, str], tuple[Dataset, Chart]] = OrderedDict()
_CHART_CACHE_SIZE = 256


def _chart_of(d: Dataset, kind: str) -> Chart:
    key = (id(d), kind)
    hit = _CHART_CACHE.get(key)
    if hit is not None and hit[0] is d:
        _CHART_CACHE.move_to_end(key)
        return hit[1]
    # Altair is imported here, where a chart is drawn, not with the build (charts/spec.py).
    from phase.publish.charts.energy import build_chart
    from phase.publish.charts.strategy import build_strategy_chart

    chart = build_strategy_chart(d, kind) if kind in STRATEGY_KINDS else build_chart(
        d.summary, kind, _counts_text(d))
    _CHART_CACHE[key] = (d, chart)
    if len(_CHART_CACHE) > _CHART_CACHE_SIZE:
        _CHART_CACHE.popitem(last=False)
    return chart


def _counts_text(d: Dataset) -> dict[Condition, str]:
    """Each condition's accepted/drafted tokens ("412/812"), where its runs are at hand."""
    out = {}
    for row in d.summary.rows:
        counts = row_acceptance_counts(d.raw, row)
        if counts is not None and counts.tried:
            out[condition_key(row)] = counts.text
    return out


class _Calls:
    """The functions a note body calls, bound to one page of one version."""

    def __init__(
        self,
        env: jinja2.Environment,
        note: NoteSource,
        version: VersionMeta,
        datasets: list[Dataset],
        root: str,
        asset_dir: str,
        asset_href: str,
    ) -> None:
        self.env = env
        self.note = note
        self.version = version
        self.datasets = datasets
        self.root = root
        self.assets = PageAssets(env, asset_dir, asset_href)
        self.called: set[str] = set()
        self.cited: list[str] = []  # the notes its text links to, for cited_section
        # The site build sets both globals (phase.publish.site.docs); a bare env has neither.
        bench = cast("list[BenchResults]", env.globals.get(BENCH_GLOBAL, []))
        confirmations = cast("Mapping[str, Dataset]", env.globals.get(CONFIRMATIONS_GLOBAL, {}))
        self.figures = Figures(str(note.path), datasets, bench, root, confirmations=confirmations)
        self.serving = ServingCalls(env, self.assets, self.pick, root)

    def pick(self, file: str | None) -> list[Dataset]:
        """This version's results files, or the one named `file` (a note error if absent)."""
        if file is None:
            return self.datasets
        picked = [d for d in self.datasets if d.name == file]
        if not picked:
            raise NoteError(
                f"{self.note.path}: version {self.version.version} has no results file {file}"
            )
        return picked

    def _render(self, template: str, **ctx: Any) -> Markup:
        return block(self.env.get_template(template).render(**ctx))

    def results_table(self, file: str | None = None) -> Markup:
        self.called.add("results_table")
        tables = [build_table(d, self.root, self.assets.notes) for d in self.pick(file)]
        downloads = {t.dataset: self.assets.downloads(results_frame(t),
                                                      f"{page_stem(t.dataset)}-results",
                                                      f"this table ({t.dataset})")
                     for t in tables}
        return self._render("results_table.html.j2", tables=tables, anchored=False,
                            downloads=downloads)

    def chart(self, kind: str, file: str | None = None) -> Markup:
        self.called.add("charts")
        if kind not in KINDS:
            raise NoteError(f"{self.note.path}: unknown chart {kind!r}; known: {', '.join(KINDS)}")
        return block("\n".join(self.assets.chart(_chart_of(d, kind), d.name)
                               for d in self.pick(file)))

    def charts(self, file: str | None = None) -> Markup:
        return Markup("").join(self.chart(kind, file) for kind in KINDS)

    def findings(self, file: str | None = None) -> Markup:
        self.called.add("findings")
        groups = [(d, finding_rows(d, self.root)) for d in self.pick(file)]
        downloads = {d.name: self.assets.downloads(findings_frame(rows), f"{d.stem}-findings",
                                                   f"the findings ({d.name})")
                     for d, rows in groups}
        # A long list is linked on its data page (the findings section), not repeated.
        pages = {d.name: f"{raw_page(d.stem, self.root)}#findings" for d, _ in groups}
        return self._render("findings.html.j2", groups=groups, downloads=downloads,
                            data_pages=pages)

    def provenance(self, file: str | None = None) -> Markup:
        self.called.add("provenance")
        boxes = [
            provenance_box(d, self.root, self.note.meta.source_provenance)
            for d in self.pick(file)
        ]
        return self._render("provenance.html.j2", boxes=boxes)

    def reproduce(self) -> Markup:
        self.called.add("reproduce")
        boxes = [provenance_box(d, self.root, {}) for d in self.datasets if d.raw is not None]
        return self._render("reproduce.html.j2", command=self.note.meta.reproduce, boxes=boxes)

    def rows(self, file: str | None = None) -> list[SummaryRow]:
        return [r for d in self.pick(file) for r in d.summary.rows]

    def note_url(self, slug: str) -> str:
        """A Markdown link target for another note's latest page (mkdocs checks it exists)."""
        self.cited.append(slug)
        return f"{self.root}notes/{slug}/index.md"

    def page_url(self, page: str) -> str:
        """A Markdown link target for a site page by its path under docs ("bench/index.md")."""
        return f"{self.root}{page}"

    def file_url(self, path: str) -> str:
        """A link target for a repository file (e.g. a prompt's input), published next to this
        version's page so that a frozen page keeps the file it linked to."""
        name, data = source_file(self.env.globals.get(ROOT_GLOBAL), path, str(self.note.path))
        return self.assets.add(f"{SOURCES_DIR}/{name}", data)

    def source_link(self, path: str) -> Markup:
        """The file as a download link named by its repository path, with its sha256."""
        href = self.file_url(path)
        data = self.assets.read(f"{SOURCES_DIR}/{Path(path).name}")
        return Markup(f'<a class="phase-source-link" href="{safe_url(href)}" download>'
                      f"<code>{markdown_safe(path)}</code></a> (sha256 <code>"
                      f"{hashlib.sha256(data).hexdigest()}</code>)")

    def context(self) -> dict[str, Any]:
        f = self.figures
        return {
            "results_table": self.results_table,
            "chart": self.chart,
            "charts": self.charts,
            "findings": self.findings,
            "provenance": self.provenance,
            "reproduce": self.reproduce,
            "value": f.value,
            "interval": f.interval,
            "resolved": f.resolved,
            "direction": f.direction,
            "confirmation": f.confirmation,
            "value_range": f.value_range,
            "step": f.step,
            "bench": f.bench_value,
            "model_size": f.model_size,
            "baseline_caveats": f.baseline_caveats,
            "rows": self.rows,
            "note_url": self.note_url,
            "file_url": self.file_url,
            "page_url": self.page_url,
            "source_link": self.source_link,
            "has_results": bool(self.datasets),
            "version": self.version.version,
            **cost_calls(self.env, self.assets, self.pick, self.root),
            **memory_calls(self.env, self.assets, self.pick, self.root),
            **temperature_calls(self.env, self.assets, self.pick),
            **serving_calls(self.serving),
        }

    def missing_sections(self) -> Markup:
        calls = {"results_table": self.results_table, "charts": self.charts,
                 "findings": self.findings, "provenance": self.provenance,
                 "reproduce": self.reproduce}
        out = Markup("")
        for name in SECTIONS:
            if name not in self.called:
                heading = {"results_table": "Results", "charts": "Charts",
                           "findings": "Findings", "provenance": "Provenance",
                           "reproduce": "Reproduce"}[name]
                out += Markup(f"\n\n## {heading}\n") + calls[name]()
        return out


def _template(env: jinja2.Environment, note: NoteSource, text: str, number: int,
              context: dict[str, Any], what: str) -> Markup:
    try:
        return Markup(env.from_string(text).render(**context))
    except jinja2.TemplateError as exc:
        raise NoteError(f"{note.path}: cannot render {what} of version {number}: {exc}") from None


def render_finding(env: jinja2.Environment, note: NoteSource, datasets: list[Dataset],
                   root: str, note_href: str) -> Markup:
    """The front matter's finding with the latest version's figures, for a page elsewhere (the
    home page): its unstable-baseline marks link to the note's own page."""
    number = len(note.meta.versions)
    calls = _Calls(env, note, note.meta.versions[-1], datasets, root, "", "")
    calls.figures.caveat_href = f"{note_href}#{CAVEAT_ID}"
    return _template(env, note, note.meta.finding, number, calls.context(), "the finding")


def render_version(
    env: jinja2.Environment,
    note: NoteSource,
    number: int,
    by_version: list[list[Dataset]],
    *,
    latest_page: bool,
) -> Page:
    """Version `number`'s page: frozen (`vN/index.md`) or the note's latest (`index.md`),
    without the versions list and errata (`note_tail`), which grow after publication.

    A version's page reads only versions `number` and `number - 1` (for its changes table).
    """
    version = note.meta.versions[number - 1]
    datasets = by_version[number - 1]
    previous = by_version[number - 2] if number > 1 else None
    if number in note.incomplete:
        previous = None  # an incomplete campaign is not compared with anything
    asset_dir = f"notes/{note.slug}/v{number}"
    calls = _Calls(
        env, note, version, datasets,
        root="../../" if latest_page else "../../../",
        asset_dir=asset_dir,
        asset_href=f"v{number}/" if latest_page else "",
    )
    context = calls.context()
    if note.context is not None:
        context.update(note.context(number))
    # A generated note's finding is computed from data (names included), so it is text, never
    # a template; an authored note's may call the figure functions.
    finding = (markdown_safe(note.finding_of(number)) if note.kind == "generated" else
               _template(env, note, note.finding_of(number), number, context, "the finding"))
    body = _template(env, note, note.body, number, context, "the body")
    body = placed(body, calls.serving)  # a serving campaign's section (other notes: as is)
    body_markup = (body + calls.figures.leftover_caveats()
                   + cited_section(env, datasets, calls.cited) + calls.missing_sections())
    text = env.get_template("note.md.j2").render(
        note=note,
        meta=note.meta,
        finding=finding,
        version=version,
        latest_page=latest_page,
        datasets=datasets,
        body=body_markup,
        changes=compare(previous, datasets) if previous is not None else None,
        build_changes=(versus(previous, datasets, f"version {number - 1}", f"version {number}")
                       if previous is not None else []),
        # The same campaign as the version before: its measurements did not change, what is
        # made of them did (the version's `changes` says what); its page keeps its figures.
        same_campaign=previous is not None and [d.sha256 for d in previous]
        == [d.sha256 for d in datasets],
        frozen_href=f"v{number}/index.html",
        latest_href="../index.html",
    )
    path = f"notes/{note.slug}/index.md" if latest_page else f"{asset_dir}/index.md"
    return Page(path, text, calls.assets.files)


def note_tail(env: jinja2.Environment, note: NoteSource, number: int | None) -> str:
    """What follows a page's frozen bytes: on the latest page (`number` None) the versions list
    and every erratum; on version `number`'s page the errata about that version."""
    if number is None:
        versions = [(v, f"v{v.version}/index.html") for v in note.meta.versions]
        errata = note.meta.errata
    else:
        versions, errata = [], [e for e in note.meta.errata if e.version == number]
    return env.get_template("note_tail.md.j2").render(versions=versions, errata=errata)
