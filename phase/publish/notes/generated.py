"""Every campaign becomes a note: raw results files that no authored note cites, grouped by
experiment and host class, each group one note whose versions are its campaigns in date order.

    slug      <experiment>-<host class> (lowercase, [a-z0-9-]); "-quick" for quick previews
    title     the outcome of the experiment's question (its rule, declared in
              `experiments/<experiment>.py`: phase.publish.numbers.outcomes) for the newest
              version not yet archived; else the archived title; else the note template's
              (`templates/experiments/<experiment>.md.j2`, else `default.md.j2`), whose front
              matter holds `title: ... {host_class} ...`
    versions  the versions already in the archive, in their order, then every complete
              campaign not yet archived, oldest first; then, when the newest campaign is
              incomplete (interrupted or still running), that one as a draft: marked with its
              completeness, never frozen, not compared, no headline
    prose     the template's body, rendered per version with facts computed from that
              version's file (`campaign`, `best`, `headline`, `outcome`, `discussed_in`)

Authored notes keep precedence: a file an authored note cites is never put into a new version
of a generated note, and a note source whose slug is a generated note's takes that note over
(its archived versions then have to be its first versions). Quick campaigns
(`results/quick/`) become notes only with `--include-quick`, as previews that are never frozen.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from phase.analysis.formatting import fmt, pct, ratio
from phase.publish.archive.store import Archive, ArchiveError
from phase.publish.data.confirmations import attach, is_confirmation
from phase.publish.data.datasets import Dataset
from phase.publish.notes.revisions import FILE_NAME as REVISIONS_FILE
from phase.publish.notes.revisions import Revisions
from phase.publish.notes.source import (
    ErratumMeta,
    FrontMatter,
    NoteError,
    NoteSource,
    VersionMeta,
    split_front_matter,
)
from phase.publish.numbers.confirmed import headline_with_evidence
from phase.publish.numbers.headline import bests, headline
from phase.publish.numbers.memory import memory_headline
from phase.publish.numbers.outcomes import outcome_of
from phase.results import ResultsError, ResultsFile
from phase.results.host_labels import host_class_of, machine_label
from phase.storage.jsonread import read_regular_text

TEMPLATES_SUBDIR = "experiments"
DEFAULT_TEMPLATE = "default.md.j2"


@dataclass(frozen=True)
class Campaign:
    dataset: Dataset
    header: ResultsFile  # the file without its runs: all that grouping campaigns needs
    quick: bool

    @property
    def raw(self) -> ResultsFile:
        """The whole file (loaded on first use: only a version being rendered needs it)."""
        raw = self.dataset.raw
        assert raw is not None
        return raw

    @property
    def host_class(self) -> str:
        return host_class_of(self.header)

    @property
    def key(self) -> tuple[str, str, bool]:
        return (self.header.experiment, self.host_class, self.quick)

    @property
    def planned_runs(self) -> int:
        c = self.header.config
        return len(c.prompts) * len(c.strategies) * c.repeats

    @property
    def complete(self) -> bool:
        return self.header.status == "complete"

    @property
    def completeness(self) -> str:
        if self.header.config.target_half_width is not None:
            # Adaptive repeats: the planned runs, then as many rounds as the intervals need.
            return (f"{self.dataset.n_runs} runs finished ({self.planned_runs} planned, then "
                    f"adaptive rounds), status {self.header.status}")
        return (f"{self.dataset.n_runs} of {self.planned_runs} runs finished, "
                f"status {self.header.status}")

    @property
    def date(self) -> str:
        return self.header.created.date().isoformat()


def note_slug(experiment: str, host_class: str, quick: bool) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", f"{experiment}-{host_class}".lower()).strip("-")
    return f"{slug}-quick" if quick else slug


@dataclass
class Group:
    slug: str
    versions: list[Campaign] = field(default_factory=list)
    draft: Campaign | None = None
    title: str | None = None  # the archived title, which its archived versions keep
    archived: int = 0  # how many of `versions` are archived (the first ones)
    # Versions that re-issue a campaign (phase.publish.notes.revisions): what each changed.
    changes: dict[int, str] = field(default_factory=dict)
    dates: dict[int, str] = field(default_factory=dict)
    errata: list[ErratumMeta] = field(default_factory=list)


@dataclass
class Generated:
    notes: list[NoteSource]
    datasets: list[list[Dataset]]  # per note, one results file per version
    lines: list[str]  # what the build says about campaigns (drafts, superseded, taken over)


def _claims(archive: Archive, authored: set[str]) -> dict[str, list[tuple[list[str], str]]]:
    """The files each archived generated note's versions were published with (and its title)."""
    out: dict[str, list[tuple[list[str], str]]] = {}
    for slug in archive.slugs():
        if slug in authored:
            continue
        manifests = [archive.manifest(slug, n) for n in archive.versions(slug)]
        if manifests and all(m.source.kind == "generated" for m in manifests):
            out[slug] = [([r.name for r in m.results], m.title) for m in manifests]
    return out


def _revise(groups: dict[str, Group], revisions: Revisions, by_name: dict[str, Campaign],
            claimed: set[str]) -> None:
    """Each declared revision in its place: checked against an archived version of that
    number, else appended as the note's next version."""
    for slug, declared in revisions.items():
        for rev in sorted(declared.versions, key=lambda r: r.version):
            (name,) = rev.results
            campaign = by_name.get(name)
            where = f"{REVISIONS_FILE}: {slug}: version {rev.version}"
            if campaign is None:
                raise NoteError(f"{where}: results {name} is not a campaign in the results "
                                "directory")
            group = groups.setdefault(slug, Group(slug))
            if rev.version <= len(group.versions):
                shown = group.versions[rev.version - 1].dataset.name
                if shown != name:
                    raise NoteError(f"{where}: published with {shown}, not {name}")
            elif rev.version == len(group.versions) + 1:
                group.versions.append(campaign)
                claimed.add(name)
            elif rev.version == len(group.versions) + 2 and name not in claimed:
                # Built without the archive that holds the version it revises (a fresh
                # history): the campaign is shown first as that version, then as this one.
                group.versions += [campaign, campaign]
                claimed.add(name)
            else:
                raise NoteError(f"{where}: the note has {len(group.versions)} version(s); the "
                                f"next is {len(group.versions) + 1}")
            group.changes[rev.version] = rev.changes
            group.dates[rev.version] = rev.date
        if slug in groups:
            groups[slug].errata = list(declared.errata)


def _groups(campaigns: list[Campaign], archive: Archive, authored: set[str],
            lines: list[str], own_results: bool, revisions: Revisions) -> list[Group]:
    by_name = {c.dataset.name: c for c in campaigns}
    groups: dict[str, Group] = {}
    claimed: set[str] = set()
    for slug, versions in _claims(archive, authored).items():
        names_of = [n for names, _ in versions for n in names]
        if not own_results and not any(n in by_name for n in names_of):
            # Another results dir rendered against this archive (nothing is frozen): a note
            # none of whose campaigns is here is left out, as an authored note without its
            # source is; the rule below guards the archive's own results dir.
            lines.append(f"note {slug}: its campaigns are not in this results directory; "
                         "not rendered")
            continue
        group = groups[slug] = Group(slug, title=versions[-1][1], archived=len(versions))
        for number, (names, _) in enumerate(versions, start=1):
            missing = [n for n in names if n not in by_name]
            if missing or len(names) != 1:
                raise ArchiveError(f"published/{slug}/v{number} was published from "
                                   f"{', '.join(names)}, which is not a campaign in the results "
                                   "directory; restore it (a published version keeps its data)")
            group.versions.append(by_name[names[0]])
            claimed.add(names[0])
    _revise(groups, revisions, by_name, claimed)
    fresh = sorted((c for c in campaigns if c.dataset.name not in claimed),
                   key=lambda c: (c.header.created, c.dataset.name))
    for c in fresh:
        slug = note_slug(*c.key)
        if slug in authored:
            lines.append(f"campaign {c.dataset.name}: not in any note (note {slug} is authored; "
                         "cite the file in its source)")
            continue
        group = groups.setdefault(slug, Group(slug))
        if c.complete:
            group.versions.append(c)
        else:
            if group.draft is not None:
                lines.append(f"campaign {group.draft.dataset.name}: incomplete and superseded "
                             f"by {c.dataset.name}; only its data page is published")
            group.draft = c
    for group in groups.values():
        newest = group.versions[-1].header.created if group.versions else None
        if (group.draft is not None and newest is not None
                and group.draft.header.created < newest):
            lines.append(f"campaign {group.draft.dataset.name}: incomplete and older than the "
                         f"note's newest version; only its data page is published")
            group.draft = None
    return [g for g in groups.values() if g.versions or g.draft is not None]


@dataclass(frozen=True)
class Template:
    path: Path
    rel: str  # under templates/
    title: str
    body: str


def load_template(templates_dir: Path, experiment: str) -> Template:
    base = templates_dir / TEMPLATES_SUBDIR
    path = base / f"{experiment}.md.j2"
    if not path.is_file():
        path = base / DEFAULT_TEMPLATE
    try:
        text = read_regular_text(path)
    except ResultsError as exc:
        raise NoteError(f"{exc} (the note template for experiment {experiment}: every "
                        "campaign needs one to become a note)") from None
    data, body = split_front_matter(text, path)
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        raise NoteError(f"{path}: front matter needs a title (with {{host_class}} in it)")
    return Template(path, path.relative_to(templates_dir).as_posix(), title, body)


@dataclass(frozen=True)
class CampaignFacts:
    """What a generated note's prose may say about one campaign, all read from its file."""

    id: str
    name: str
    date: str
    status: str
    complete: bool
    finished_runs: int
    planned_runs: int
    host_class: str
    machine: str
    raw: ResultsFile
    preview: bool


def _facts(c: Campaign) -> CampaignFacts:
    return CampaignFacts(c.header.id, c.dataset.name, c.date, c.header.status, c.complete,
                         c.dataset.n_runs, c.planned_runs, c.host_class,
                         machine_label(c.header), c.raw, c.quick)


def _headline(c: Campaign, rendered_now: bool, confirmations: Mapping[str, Dataset]
              ) -> str | None:
    """A complete version's headline: rendered now, its chosen condition's confirmation (or
    that it is unconfirmed); archived, the headline it was published with."""
    if not c.complete:
        return None
    if rendered_now:
        return headline_with_evidence([c.dataset], confirmations)
    return headline([c.dataset])


def _context(campaigns: list[Campaign], discussed_in: list[tuple[str, str]], archived: int,
             confirmations: Mapping[str, Dataset]) -> Callable[[int], dict[str, Any]]:
    def context(number: int) -> dict[str, Any]:
        c = campaigns[number - 1]
        found = bests([c.dataset]) if c.complete else []
        return {
            "campaign": _facts(c),
            "best": found,
            "headline": _headline(c, number > archived, confirmations),
            # The experiment's question answered by its rule (None for a draft, or an
            # experiment that declares none): the verdict and every trend sentence.
            "outcome": outcome_of(c.dataset) if c.complete else None,
            "discussed_in": discussed_in,
            "fmt": fmt,
            "pct": pct,
            "ratio": ratio,
        }
    return context


def _note(group: Group, template: Template, discussed_in: list[tuple[str, str]],
          confirmations: Mapping[str, Dataset]) -> NoteSource:
    campaigns = group.versions + ([group.draft] if group.draft else [])
    first = campaigns[0]
    quick = first.quick
    title = group.title or (template.title.replace("{experiment}", first.header.experiment)
                            .replace("{host_class}", first.host_class))
    findings: list[str] = []
    versions: list[VersionMeta] = []
    for number, c in enumerate(campaigns, start=1):
        line = _headline(c, number > group.archived, confirmations)
        # A version rendered now (not archived) states its rule's outcome: its title is the
        # newest such version's, and its finding leads with the verdict. An archived
        # version's page is frozen with the title and finding it was published with.
        outcome = outcome_of(c.dataset) if c.complete and number > group.archived else None
        if outcome is not None:
            title = outcome.title
            line = " ".join(s for s in (outcome.headline, line) if s)
        if line is None and c.complete:  # a study without ratios to plain: a memory study's
            line = memory_headline(c.dataset)
        if not c.complete:
            line = f"Draft: incomplete campaign ({c.completeness}); no headline until it completes."
        findings.append(line or "No ratio to plain decoding can be computed from this campaign.")
        changes = group.changes.get(number) or f"Campaign {c.header.id}: {c.dataset.n_runs} runs."
        if not c.complete:
            changes += f" Incomplete: {c.completeness}."
        versions.append(VersionMeta(version=number, date=group.dates.get(number, c.date),
                                    results=[c.dataset.name],
                                    changes=changes, draft=not c.complete))
    if quick and group.title is None:
        title += " (quick preview)"
    # The Makefile measures the speculative experiment unless told EXPERIMENT=NAME.
    exp = first.header.experiment
    make = "make measure" + ("" if exp == "speculative" else f" EXPERIMENT={exp}") \
        + (" QUICK=1" if quick else "")
    reproduce = (f"{make}      # phase measure {first.header.experiment}"
                 + (" --quick" if quick else "") + "\n"
                 + ("make site QUICK=1" if quick else "make site") + "\n")
    meta = FrontMatter(title=title, date=first.date, finding=findings[-1], reproduce=reproduce,
                       versions=versions, errata=group.errata)
    return NoteSource(
        path=template.path, slug=group.slug, meta=meta, body=template.body, kind="generated",
        findings=tuple(findings),
        context=_context(campaigns, discussed_in, group.archived, confirmations),
        incomplete=frozenset(n for n, c in enumerate(campaigns, start=1) if not c.complete),
        preview=quick, source_file=template.rel,
    )


def generated_notes(
    datasets: list[Dataset],
    quick_paths: set[Path],
    cited_by: dict[Path, list[NoteSource]],
    archive: Archive,
    templates_dir: Path,
    authored: set[str],
    own_results: bool = True,
    revisions: Revisions | None = None,
    confirmations: Mapping[str, Dataset] | None = None,
) -> Generated:
    """The generated notes for every raw campaign no authored note cites (see module doc);
    `cited_by` maps each file an authored note cites to those notes, `authored` holds their
    slugs. `own_results` False: the results dir is not the one that feeds the archive, and
    archived notes without a campaign in it are left out instead of refused. `confirmations`:
    the build's attach() of `datasets` (computed here when not given)."""
    lines: list[str] = []
    claimed = {name for versions in _claims(archive, authored).values()
               for names, _ in versions for name in names}
    # Files an archived generated version was published from stay in it, cited or not.
    # A confirmation campaign is evidence for another campaign's headline, not a version.
    if confirmations is None:
        confirmations = attach(datasets)
    campaigns = [Campaign(d, d.raw_header, d.path in quick_paths) for d in datasets
                 if d.raw_header is not None and not is_confirmation(d)
                 and (d.path not in cited_by or d.name in claimed)]
    discussed: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for path, notes in cited_by.items():
        ds = next((d for d in datasets if d.path == path), None)
        header = ds.raw_header if ds is not None else None
        if header is not None:
            key = (header.experiment, host_class_of(header))
            discussed.setdefault(key, []).extend((n.meta.title, n.slug) for n in notes)
    out = Generated([], [], lines)
    for group in _groups(campaigns, archive, authored, lines, own_results, revisions or {}):
        campaigns_of = group.versions + ([group.draft] if group.draft else [])
        first = campaigns_of[0]
        template = load_template(templates_dir, first.header.experiment)
        key = (first.header.experiment, first.host_class)
        related = list(dict.fromkeys(discussed.get(key, [])))
        note = _note(group, template, related, confirmations)
        out.notes.append(note)
        out.datasets.append([c.dataset for c in campaigns_of])
        if group.draft is not None:
            lines.append(f"draft: {group.draft.dataset.name} is incomplete "
                         f"({group.draft.completeness}): shown as v{len(note.meta.versions)} "
                         f"of note {note.slug}, not frozen, no headline")
    return out
