"""Note versions -> Markdown pages (with inline HTML) for mkdocs.

A note source's body is a Jinja template; these functions are what it can call:

    {{ results_table() }}         the results table of every file in this version
    {{ charts() }}                all three charts;  {{ chart("per_k") }} one of them
    {{ findings() }}              the validation findings, rejected values struck through
    {{ provenance() }}            machine, software, models + sha256, date, commit
    {{ reproduce() }}             the reproduce command (and each campaign's exact command)
    {{ value("code", "draft-4", "tokens_per_s") }}   one formatted figure, for prose

Each takes an optional `file="name.json"` to restrict it to one results file. A page that
does not call one of the first five gets it appended, so every page has all of them. Also
available: `has_results`, `version` (its number), `rows()` (summary rows) and
`note_url("slug")` (a link target for another note, right from any version's page).

Every value that comes from data is HTML-escaped (Jinja autoescape): a prompt named
`<script>` shows as text. A version's page is a pure function of its own version's inputs
(and the previous version's, for the changes table); once published it is served from the
archive (phase.publish.versions), whatever later changes to the note, templates or rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from phase.results import SummaryRow

from .changes import compare
from .charts import KINDS, build_chart, html_safe_json, render_png
from .datasets import Dataset
from .findings import finding_rows
from .notes import NoteError, NoteSource, VersionMeta
from .provenance import provenance_box
from .tables import build_table, fmt, pct, ratio

SECTIONS = ("results_table", "charts", "findings", "provenance", "reproduce")


def environment(templates_dir: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["pre"] = preformatted
    env.filters["md"] = markdown_text
    return env


# Inline Markdown syntax (the text sits mid-line, so line-start markers like # - + need none).
_MD_SPECIAL = {c: f"&#{ord(c)};" for c in "\\`*_{}[]()|~<>&\"'!"}


def markdown_text(text: str) -> Markup:
    """Text placed where Markdown is parsed: HTML-escaped and with every character Markdown
    could treat as syntax turned into a character reference, so it shows exactly as given."""
    plain = text.unescape() if isinstance(text, Markup) else str(text)
    return Markup("".join(_MD_SPECIAL.get(c, c) for c in plain))


def preformatted(text: str) -> Markup:
    """Escaped text for <pre> with newlines as character references, so no blank line can
    end the Markdown HTML block it sits in, whatever the text holds."""
    return Markup(str(escape(text)).replace("\n", "&#10;"))


def block(html: str) -> Markup:
    """An HTML block Markdown leaves alone: blank lines around it, none inside it."""
    lines = [line for line in html.splitlines() if line.strip()]
    return Markup("\n\n" + "\n".join(lines) + "\n\n")


@dataclass
class Page:
    """One rendered page plus the files it refers to (chart PNGs), by path under docs_dir."""

    path: str
    text: str
    assets: dict[str, bytes] = field(default_factory=dict)


VALUE_METRICS: dict[str, Callable[[float | None], str]] = {
    "tokens_per_s": fmt,
    "acceptance": pct,
    "chip_mj_per_token": fmt,
    "energy_ratio_vs_plain": ratio,
    "board_mj_per_token": fmt,
    "cpu_ms_per_token": fmt,
    "tokens_per_s_spread": lambda v: pct(v, 1),
    "chip_energy_spread": lambda v: pct(v, 1),
}


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
        self.asset_dir = asset_dir  # where PNGs are written, under docs_dir
        self.asset_href = asset_href  # how this page refers to that directory
        self.assets: dict[str, bytes] = {}
        self.called: set[str] = set()
        self.chart_count = 0

    def _pick(self, file: str | None) -> list[Dataset]:
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
        tables = [build_table(d, self.root) for d in self._pick(file)]
        return self._render("results_table.html.j2", tables=tables, anchored=False)

    def chart(self, kind: str, file: str | None = None) -> Markup:
        self.called.add("charts")
        if kind not in KINDS:
            raise NoteError(f"{self.note.path}: unknown chart {kind!r}; known: {', '.join(KINDS)}")
        parts = []
        for d in self._pick(file):
            c = build_chart(d.summary, kind)
            png = None
            if c.spec is not None:
                name = f"{c.kind}-{c.key}.png"
                self.assets[f"{self.asset_dir}/{name}"] = render_png(c.spec)
                png = f"{self.asset_href}{name}"
            self.chart_count += 1
            parts.append(
                self.env.get_template("chart.html.j2").render(
                    chart=c,
                    dataset=d.name,
                    element_id=f"chart-{self.chart_count}-{c.kind}",
                    png=png,
                    spec=Markup(html_safe_json(c.spec)) if c.spec is not None else None,
                )
            )
        return block("\n".join(parts))

    def charts(self, file: str | None = None) -> Markup:
        return Markup("").join(self.chart(kind, file) for kind in KINDS)

    def findings(self, file: str | None = None) -> Markup:
        self.called.add("findings")
        groups = [(d, finding_rows(d, self.root)) for d in self._pick(file)]
        return self._render("findings.html.j2", groups=groups)

    def provenance(self, file: str | None = None) -> Markup:
        self.called.add("provenance")
        boxes = [
            provenance_box(d, self.root, self.note.meta.source_provenance)
            for d in self._pick(file)
        ]
        return self._render("provenance.html.j2", boxes=boxes)

    def reproduce(self) -> Markup:
        self.called.add("reproduce")
        boxes = [provenance_box(d, self.root, {}) for d in self.datasets if d.raw is not None]
        return self._render("reproduce.html.j2", command=self.note.meta.reproduce, boxes=boxes)

    def rows(self, file: str | None = None) -> list[SummaryRow]:
        return [r for d in self._pick(file) for r in d.summary.rows]

    def value(self, prompt: str, strategy: str, metric: str, file: str | None = None) -> str:
        show = VALUE_METRICS.get(metric)
        if show is None:
            raise NoteError(
                f"{self.note.path}: value(): unknown metric {metric!r}; "
                f"known: {', '.join(VALUE_METRICS)}"
            )
        for row in self.rows(file):
            if row.prompt == prompt and row.strategy == strategy:
                return show(getattr(row, metric))
        raise NoteError(
            f"{self.note.path}: value(): version {self.version.version} has no row "
            f"{prompt} × {strategy}"
        )

    def note_url(self, slug: str) -> str:
        """A Markdown link target for another note's latest page (mkdocs checks it exists)."""
        return f"{self.root}notes/{slug}/index.md"

    def context(self) -> dict[str, Any]:
        return {
            "results_table": self.results_table,
            "chart": self.chart,
            "charts": self.charts,
            "findings": self.findings,
            "provenance": self.provenance,
            "reproduce": self.reproduce,
            "value": self.value,
            "rows": self.rows,
            "note_url": self.note_url,
            "has_results": bool(self.datasets),
            "version": self.version.version,
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
    meta = note.meta.model_copy(update={"finding": note.finding_of(number)})
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
    try:
        body = env.from_string(note.body).render(**context)
    except jinja2.TemplateError as exc:
        raise NoteError(f"{note.path}: cannot render version {number}: {exc}") from None
    body_markup = Markup(body) + calls.missing_sections()
    text = env.get_template("note.md.j2").render(
        note=note,
        meta=meta,
        version=version,
        latest_page=latest_page,
        datasets=datasets,
        body=body_markup,
        changes=compare(previous, datasets) if previous is not None else None,
        frozen_href=f"v{number}/index.html",
        latest_href="../index.html",
    )
    path = f"notes/{note.slug}/index.md" if latest_page else f"{asset_dir}/index.md"
    return Page(path, text, calls.assets)


def note_tail(env: jinja2.Environment, note: NoteSource, number: int | None) -> str:
    """What follows a page's frozen bytes: on the latest page (`number` None) the versions list
    and every erratum; on version `number`'s page the errata about that version."""
    if number is None:
        versions = [(v, f"v{v.version}/index.html") for v in note.meta.versions]
        errata = note.meta.errata
    else:
        versions, errata = [], [e for e in note.meta.errata if e.version == number]
    return env.get_template("note_tail.md.j2").render(versions=versions, errata=errata)
