"""One experiment side by side across host classes: `docs/hosts/<experiment>.md`.

Built from whatever raw campaign files of the experiment are published, one pass over them
(so the build stays linear in the number of files). Campaigns are grouped by host class
(`hosts.host_identity_of`: CPU model, cores, memory, GPUs and driver, accelerator build);
per class the newest complete campaign is shown and the others are linked. Each prompt gets
one table with a row per strategy and host class: tokens/s, speed vs plain, chip mJ/token,
energy vs plain and acceptance, from the same derived summaries the notes show (rejected
values left out), each row linked to its runs on the campaign's data page. Where the hosts'
chip figures do not cover the same parts (phase.publish.pages.likeforlike), the page says
which parts differ and marks those figures. Campaigns measured on different builds are refused
unless asked, and every difference between the campaigns shown is stated
(phase.publish.pages.builds). `docs/hosts/index.md` lists the experiments.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2

from phase.analysis import FIGURES, PLAIN, row_value
from phase.analysis.purpose import smoke_reason
from phase.publish.data.confirmations import is_confirmation
from phase.publish.data.datasets import Dataset, page_stem
from phase.publish.markup.anchors import raw_page, run_anchor
from phase.publish.notes.page import Page
from phase.publish.notes.source import NoteSource
from phase.publish.numbers.builds import PairDifferences, Side, compare_sides
from phase.publish.numbers.downloads import cells_frame, frame_files
from phase.publish.numbers.tables import Cell, Link
from phase.publish.pages.base import BuildInputs, NavItem, PageKind, Rendered
from phase.publish.pages.builds import allowed_by_notes, check_builds
from phase.publish.pages.likeforlike import MARK, Coverage, coverage
from phase.results import HostIdentity, ResultsFile, SummaryRow
from phase.results.host_labels import host_class_of, host_identity_of

if TYPE_CHECKING:
    import pandas as pd

ROOT = "../"
INDEX = "hosts/index.md"


@dataclass(frozen=True)
class HostClass:
    """One host class of an experiment and the campaign that speaks for it."""

    key: str  # short digest of the identity: two classes may share a label
    label: str
    machine: str
    hosts: list[str]
    dataset: str
    data_page: str
    created: str
    runs: int
    others: list[tuple[str, str]] = field(default_factory=list)  # (file, data page)


@dataclass(frozen=True)
class CrossRow:
    strategy: str
    host: HostClass
    cells: dict[str, Cell]
    links: list[Link]  # the runs behind the row, on the campaign's data page


@dataclass(frozen=True)
class PromptTable:
    prompt: str
    rows: list[CrossRow]


@dataclass(frozen=True)
class CrossHostPage:
    experiment: str
    path: str  # under the docs dir
    href: str  # from the index page
    hosts: list[HostClass]
    tables: list[PromptTable]
    campaigns: int
    coverage: Coverage  # what each host's chip figure covers, and whether they differ
    # Every pair of the campaigns shown that differs in build or host (phase.analysis.
    # comparable); a pair whose builds differ is here only where that was allowed.
    differences: list[PairDifferences] = field(default_factory=list)

    @property
    def mixed_builds(self) -> bool:
        return any(p.build for p in self.differences)


# The registry's figures each prompt's table shows, as (key, label, hover title): a ratio to
# plain here is to plain decoding on the same host, which the titles say.
SHOWN = ("tokens_per_s", "speed_vs_plain", "chip_mj_per_token", "energy_ratio_vs_plain",
         "acceptance")
COLUMNS = tuple((FIGURES[n].key, FIGURES[n].label, FIGURES[n].host_title) for n in SHOWN)


def _key(raw: ResultsFile) -> str:
    identity = host_identity_of(raw).model_dump()
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:10]


def machine(identity: HostIdentity) -> str:
    """The host class in words: every field of the identity that is known."""
    parts = [identity.cpu_model or "unknown CPU", f"{identity.cpu_cores} cores"]
    if identity.ram_gib is not None:
        parts.append(f"{identity.ram_gib} GiB RAM")
    gpus = ", ".join(identity.gpus) or "no GPU"
    parts.append(gpus + (f" (driver {identity.gpu_driver})" if identity.gpu_driver else ""))
    if identity.accelerator:
        parts.append(f"llama.cpp {identity.accelerator} build")
    return ", ".join(parts)


def _pick(datasets: list[Dataset]) -> tuple[Dataset, list[Dataset]]:
    """The newest complete campaign (else the newest), and the rest."""
    def rank(d: Dataset) -> tuple[bool, str, str]:
        raw = d.raw_header
        assert raw is not None
        return (raw.status == "complete", raw.created.isoformat(), d.name)

    ordered = sorted(datasets, key=rank, reverse=True)
    return ordered[0], ordered[1:]


def _host_class(key: str, label: str, chosen: Dataset, others: list[Dataset]) -> HostClass:
    raw = chosen.raw_header
    assert raw is not None
    names = [h.hostname for h in raw.hosts] or [raw.provenance.hostname]
    return HostClass(
        key=key, label=label, machine=machine(host_identity_of(raw)), hosts=names,
        dataset=chosen.name, data_page=raw_page(chosen.stem, ROOT),
        created=raw.created.date().isoformat(), runs=chosen.n_runs,
        others=[(d.name, raw_page(d.stem, ROOT)) for d in others],
    )


def _cells(rows: list[SummaryRow], row: SummaryRow) -> dict[str, Cell]:
    """A row's cells by column key; `rows` are its host's (plain's row among them)."""
    no_accept = row.acceptance_reason or ("plain decoding drafts nothing"
                                          if row.strategy == PLAIN else None)
    # Why a figure is missing (None: the cell has no title), for when it is.
    missing = {"tokens_per_s": None, "speed_vs_plain": "no plain row on this host",
               "chip_mj_per_token": row.chip_mj_per_token_reason,
               "energy_ratio_vs_plain": "needs chip energy for this row and plain",
               "acceptance": no_accept}
    cells = {}
    for name in SHOWN:
        value = row_value(name, rows, row)
        title = missing[name] if value is None or name == "chip_mj_per_token" else None
        cells[FIGURES[name].key] = Cell(FIGURES[name].show(value), value, title)
    return cells


def _links(ds: Dataset, row: SummaryRow) -> list[Link]:
    raw = ds.raw
    assert raw is not None  # only raw campaigns have a host class
    repeats = {r.id: r.repeat for r in raw.runs}
    page = raw_page(ds.stem, ROOT)
    return [Link(str(repeats.get(run_id, i) + 1), f"{page}#{run_anchor(run_id)}",
                 f"run {run_id} in {ds.name}")
            for i, run_id in enumerate(row.run_ids)]


def _tables(hosts: list[tuple[HostClass, Dataset]]) -> list[PromptTable]:
    prompts: list[str] = []
    strategies: list[str] = []
    by_host: dict[str, dict[tuple[str, str], SummaryRow]] = {}
    host_rows: dict[str, list[SummaryRow]] = {}  # one condition each: plain's row is unique
    for host, ds in hosts:
        rows = {(r.prompt, r.strategy): r for r in ds.summary.rows}
        by_host[host.key] = rows
        host_rows[host.key] = list(rows.values())
        for prompt, strategy in rows:
            prompts += [prompt] if prompt not in prompts else []
            strategies += [strategy] if strategy not in strategies else []
    tables = []
    for prompt in prompts:
        out = []
        for strategy in strategies:
            for host, ds in hosts:
                row = by_host[host.key].get((prompt, strategy))
                if row is None:
                    continue
                out.append(CrossRow(strategy, host,
                                    _cells(host_rows[host.key], row),
                                    _links(ds, row)))
        tables.append(PromptTable(prompt, out))
    return tables


def _records(datasets: list[Dataset]) -> list[Dataset]:
    """The raw campaigns, without the smoke tests of an experiment that has a study, and
    without confirmations: one re-measures a single condition of the campaign it names, on
    that campaign's machine and build, so as a host's newest file it would stand in for the
    whole campaign with its two strategies."""
    raw = [(ds, ds.raw_header) for ds in datasets
           if ds.raw_header is not None and not is_confirmation(ds)]
    studied = {h.experiment for _, h in raw if smoke_reason(h) is None}
    return [ds for ds, h in raw if h.experiment not in studied or smoke_reason(h) is None]


def build_pages(datasets: list[Dataset], *, allow_mixed_builds: bool = False,
                allowed: frozenset[Path] = frozenset()) -> list[CrossHostPage]:
    """One page per experiment that has raw campaign files (summary-only files have no host).

    Refuses (MixedBuildsError) campaigns shown side by side whose builds differ, unless
    `allow_mixed_builds` or both are `allowed` (phase.publish.pages.builds). Smoke tests are
    left out where the experiment has a study: never the record, and on another model."""
    groups: dict[str, dict[str, list[Dataset]]] = {}
    for ds in _records(datasets):
        header = ds.raw_header
        if header is not None:
            groups.setdefault(header.experiment, {}).setdefault(_key(header), []).append(ds)
    pages = []
    for experiment in sorted(groups):
        chosen = []
        for key, members in groups[experiment].items():
            pick, rest = _pick(members)
            assert pick.raw_header is not None
            chosen.append((key, host_class_of(pick.raw_header), pick, rest))
        labels = [label for _, label, _, _ in chosen]
        hosts = [(_host_class(key, label if labels.count(label) == 1 else f"{label} ({key})",
                              pick, rest), pick)
                 for key, label, pick, rest in sorted(chosen, key=lambda c: (c[1], c[0]))]
        pairs = compare_sides([Side(h.label, ds) for h, ds in hosts])
        check_builds(f"the cross-host table of {experiment}", pairs,
                     allow_all=allow_mixed_builds, allowed=allowed)
        tables = _tables(hosts)
        covered = _coverage(hosts, tables)
        pages.append(CrossHostPage(
            experiment=experiment, path=f"hosts/{page_stem(experiment)}.md",
            href=f"{page_stem(experiment)}.md", hosts=[h for h, _ in hosts],
            tables=tables, campaigns=sum(len(m) for m in groups[experiment].values()),
            coverage=covered, differences=pairs,
        ))
    return pages


def _coverage(hosts: list[tuple[HostClass, Dataset]], tables: list[PromptTable]) -> Coverage:
    """Compares what the chip figures of the hosts that have one cover, and marks each such
    figure where they differ (its hover text says what it covers and which parts differ)."""
    chip = FIGURES["chip_mj_per_token"].key
    with_energy = {r.host.key for t in tables for r in t.rows if r.cells[chip].value is not None}
    covered = coverage([(h.key, h.label, ds.raw_header) for h, ds in hosts
                        if ds.raw_header is not None], with_energy)
    for t in tables:
        for r in t.rows:
            cell, title = r.cells[chip], covered.title(r.host.key)
            if cell.value is not None and title is not None:
                r.cells[chip] = Cell(f"{cell.text} {MARK}", cell.value, title)
    return covered


def _hosts_frame(page: CrossHostPage) -> pd.DataFrame:
    return cells_frame(
        ["host class", "machine", "hosts", "campaign", "date", "runs", "also measured"],
        [[h.label, h.machine, " ".join(h.hosts), h.dataset, h.created, h.runs,
          " ".join(name for name, _ in h.others)] for h in page.hosts])


def _prompt_frame(table: PromptTable) -> pd.DataFrame:
    """The exact values behind a prompt's table (the page shows them rounded)."""
    return cells_frame(
        ["prompt", "strategy", "host class", *(key for key, _, _ in COLUMNS), "runs"],
        [[table.prompt, r.strategy, r.host.label, *(r.cells[key].value for key, _, _ in COLUMNS),
          " ".join(link.title.removeprefix("run ").split(" in ")[0] for link in r.links)]
         for r in table.rows])


def render_pages(env: jinja2.Environment, datasets: list[Dataset], *,
                 allow_mixed_builds: bool = False,
                 allowed: frozenset[Path] = frozenset()) -> dict[str, str | bytes]:
    """Every cross-host page and their index, and each table's CSV and JSON, by path under
    the docs dir (mismatched builds refused as `build_pages` says)."""
    pages = build_pages(datasets, allow_mixed_builds=allow_mixed_builds, allowed=allowed)
    out: dict[str, str | bytes] = {}
    for p in pages:
        stem = page_stem(p.experiment)
        downloads = [frame_files(_hosts_frame(p), f"{stem}-hosts", "", "the host classes")]
        downloads += [frame_files(_prompt_frame(t), f"{stem}-prompt{i}", "",
                                  f"this table (prompt {t.prompt})")
                      for i, t in enumerate(p.tables, start=1)]
        for d in downloads:
            out.update({f"hosts/{f.name}": f.data for f in d.files})
        out[p.path] = env.get_template("crosshost.md.j2").render(page=p, columns=COLUMNS,
                                                                 downloads=downloads, mark=MARK)
    out[INDEX] = env.get_template("crosshost_index.md.j2").render(pages=pages)
    return out


class CrossHostKind(PageKind):
    """The page kind: every experiment's cross-host page and their index (hosts/)."""

    name = "hosts"
    dirs = ("hosts",)

    def render(self, build: BuildInputs) -> Rendered:
        out = Rendered()
        allowed = allowed_by_notes(build.notes, build.versions)
        for rel, data in render_pages(build.env, build.published,
                                      allow_mixed_builds=build.allow_mixed_builds,
                                      allowed=allowed).items():
            if isinstance(data, str) and rel.endswith(".md"):
                out.pages.append(Page(rel, data))
            else:
                out.files[rel] = data
        return out

    def nav(self, notes: list[NoteSource]) -> list[NavItem]:
        return [{"Across hosts": INDEX}]
