"""The home page's list of notes: every note, authored and generated, newest first, with its
host class, date and a headline computed from its newest complete version's data.

`HomeKind` is the page kind: the list is a snippet (notes/_list.md) that the hand-written
home page (docs/index.md) includes; it is not a page itself (mkdocs.yml excludes it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from markupsafe import Markup

from phase.publish.data.datasets import Dataset
from phase.publish.markup.anchors import note_page
from phase.publish.notes.render import block, render_finding
from phase.publish.notes.source import NoteSource
from phase.publish.numbers.confirmed import headline_with_evidence
from phase.publish.pages.base import BuildInputs, NavItem, PageKind, Rendered
from phase.results.host_labels import host_class_of

DASH = "—"
HOME_SNIPPET = "notes/_list.md"


@dataclass(frozen=True)
class NoteEntry:
    title: str
    slug: str
    date: str  # the latest version's
    first_date: str
    host_class: str
    host_title: str | None  # what the machine was, where no host class is recorded
    headline: str  # computed from data, or why there is none
    finding: str | None  # an authored note's own one-line finding
    href: str
    versions: list[tuple[int, str, str]]  # (number, date, href)
    errata: int
    draft: bool
    generated: bool


def _host(datasets: list[Dataset]) -> tuple[str, str | None]:
    classes = list(dict.fromkeys(host_class_of(d.raw_header) for d in datasets
                                if d.raw_header))
    if classes:
        return ", ".join(classes), None
    machines = [d.summary.machine for d in datasets if d.summary.machine]
    return "not recorded", (machines[0] if machines else None)


def _headline(note: NoteSource, by_version: list[list[Dataset]],
              confirmations: Mapping[str, Dataset]) -> tuple[str, bool]:
    """The newest complete version's headline (an incomplete campaign is never headlined):
    its chosen condition's confirmation, or that it is unconfirmed; and whether the latest
    version is such a draft."""
    count = len(by_version)
    draft = count in note.incomplete
    complete = [n for n in range(count, 0, -1) if n not in note.incomplete]
    line = (headline_with_evidence(by_version[complete[0] - 1], confirmations)
            if complete else None)
    if line:
        return line, draft
    if not complete:
        return f"No headline: {note.finding_of(count)}", draft
    return "No headline: no ratio to plain decoding in this note's data", draft


def _inline_code(html: str) -> str:
    """Markdown's `code` in a finding rendered for the home page, which is HTML (a note's page
    renders the same finding as Markdown)."""
    return re.sub(r"`([^`<>]+)`", r"<code>\1</code>", html)


def note_entry(note: NoteSource, by_version: list[list[Dataset]], root: str,
               finding: str | None = None,
               confirmations: Mapping[str, Dataset] | None = None) -> NoteEntry:
    """`finding`: the authored note's finding rendered with its latest data (figure calls
    computed), else its front matter's text."""
    line, draft = _headline(note, by_version, confirmations or {})
    host, host_title = _host([d for files in by_version for d in files])
    return NoteEntry(
        title=note.meta.title,
        slug=note.slug,
        date=note.latest.date,
        first_date=note.meta.date,
        host_class=host,
        host_title=host_title,
        headline=line,
        finding=(Markup(_inline_code(finding)) if finding is not None else note.meta.finding)
        if note.kind == "authored" else None,
        href=note_page(note.slug, root),
        versions=[(v.version, v.date, note_page(note.slug, root, v.version))
                  for v in note.meta.versions],
        errata=len(note.meta.errata),
        draft=draft or note.latest.draft,
        generated=note.kind == "generated",
    )


def home_entries(notes: list[tuple[NoteSource, list[list[Dataset]]]], root: str,
                 findings: dict[str, str] | None = None,
                 confirmations: Mapping[str, Dataset] | None = None) -> list[NoteEntry]:
    """Newest first: by the latest version's date, then the first publication's. `findings`:
    authored notes' rendered findings by slug; `confirmations`: by the file they confirm."""
    rendered = findings or {}
    entries = [note_entry(n, by_version, root, rendered.get(n.slug), confirmations)
               for n, by_version in notes]
    return sorted(entries, key=lambda e: (e.date, e.first_date, e.slug), reverse=True)


class HomeKind(PageKind):
    """The notes list on the home page, and the home page first in the navigation."""

    name = "home"
    dirs = ("notes",)

    def render(self, build: BuildInputs) -> Rendered:
        notes = list(zip(build.notes, build.versions, strict=True))
        findings = {n.slug: str(render_finding(build.env, n, by_version[-1], "",
                                               note_page(n.slug, "")))
                    for n, by_version in notes if n.kind == "authored" and by_version}
        entries = home_entries(notes, "", findings, build.confirmations)
        home = block(build.env.get_template("home_list.html.j2").render(entries=entries))
        return Rendered(files={HOME_SNIPPET: str(home).strip() + "\n"})

    def nav(self, notes: list[NoteSource]) -> list[NavItem]:
        return [{"Home": "index.md"}]
