"""Inputs for the publishing tests: small results files, note sources, a site build.

The builders here are shared by test_publish.py, test_site.py and test_browser.py (the session
fixture `built_site` in conftest.py calls `build_test_site`). The tests at the bottom pin down
that the inputs really trigger what the other tests rely on (a rejected board value, an
unstable condition, a rejected chip value, no energy at all), so a change in the validation
rules cannot silently turn those tests into no-ops.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import yaml
from factories import (
    RunSlot,
    diverge,
    make_results,
    make_sensor,
    replaced,
    speculate,
    write_results,
)

from phase.publish.site.build import SitePaths, build_site
from phase.results import ResultsFile, UnavailableBackend
from phase.validate import validate_results

REPO = Path(__file__).resolve().parent.parent
XSS_PROMPT = "<script>alert('prompt')</script>"
XSS_OUTPUT = "before <script>alert('output')</script> after"
GPU_FILE = "speculative-fixture-gpu.json"
CPU_FILE = "speculative-fixture-cpu.json"
SEED_SUMMARY = "summary-speculative-7b.json"

SPEED = {"plain": 2.0, "draft-2": 1.5, "draft-4": 1.2, "ngram": 2.1}  # decode seconds
ACCEPT = {"draft-2": 0.75, "draft-4": 0.5, "ngram": 0.25}


def _speculative(results: ResultsFile) -> ResultsFile:
    """Give draft and n-gram runs the trace and drafted/accepted counts a real campaign
    records."""
    runs = [speculate(run, ACCEPT[run.strategy]) if run.strategy in ACCEPT else run
            for run in results.runs]
    return replaced(results, runs=runs)


def gpu_results() -> ResultsFile:
    """Chip counter + fast board sensor. Planted: a chip reading of 0 J (rejected) in
    XSS × draft-4, a board reading below the chip's in one code × draft-2 run (rejected), an
    unstable condition (code × ngram repeats differ by 20%), a run whose output diverges from
    plain, and markup in a prompt name and an output."""
    sensors = [
        make_sensor("gpu", scope="chip", kind="counter"),
        make_sensor("board", scope="board", kind="power", smoothing_s=0.02),
    ]

    def decode_s(slot: RunSlot) -> float:
        base = SPEED[slot.strategy]
        if slot.prompt == "code" and slot.strategy == "ngram":
            return base * (1.0 + 0.1 * slot.repeat)  # 0%, 10%, 20%: unstable
        return base * (1.0 + 0.005 * slot.repeat)

    def energy(slot: RunSlot, sensor, window_s: float) -> float:
        chip = 30.0 * window_s
        if sensor.name == "gpu":
            if slot.prompt == XSS_PROMPT and slot.strategy == "draft-4" and slot.repeat == 1:
                return 0.0  # a counter that did not move
            return chip
        if slot.prompt == "code" and slot.strategy == "draft-2" and slot.repeat == 0:
            # Board below chip: impossible. (Planted on a mid-length condition, so the ratio
            # board/chip does not also correlate with window length and trip lag-confound;
            # in one run only, so the board is the reading out of line with its own other
            # runs and the enclosure rule can tell which sensor is wrong.)
            return chip * 0.9
        return chip * 1.5

    results = make_results(
        sensors=sensors,
        prompts=["code", XSS_PROMPT],
        strategies=list(SPEED),
        repeats=3,
        decode_s=decode_s,
        energy=energy,
        id="fixture-gpu",
        experiment="speculative",
        note="speculative-decoding-cpu",
    )
    results = _speculative(results)
    runs = list(results.runs)
    for i, run in enumerate(runs):
        if run.prompt == XSS_PROMPT and run.strategy == "draft-2" and run.repeat == 0:
            runs[i] = replaced(run, output_text=XSS_OUTPUT)
        if run.prompt == "code" and run.strategy == "draft-4" and run.repeat == 2:
            runs[i] = diverge(run, 7, gap_verify=0.02, gap_reference=0.03)  # a near-tie
    return replaced(results, runs=runs)


def cpu_results() -> ResultsFile:
    """A host with no energy sensor at all: energy is missing, with the reason."""
    results = make_results(
        sensors=[],
        prompts=["code", "prose"],
        strategies=list(SPEED),
        repeats=3,
        decode_s=lambda slot: SPEED[slot.strategy] * (1.0 + 0.01 * slot.repeat),
        id="fixture-cpu",
        experiment="speculative",
        note="speculative-decoding-cpu",
        sensors_unavailable=[
            UnavailableBackend(backend="rapl", reason="energy_uj is readable by root only"),
            UnavailableBackend(backend="nvml", reason="no NVIDIA driver"),
        ],
    )
    return _speculative(results)


VERSIONED_NOTE = """---
title: Fixture note with two versions
date: 2026-01-15
finding: A note whose second version adds a results file.
reproduce: make measure
versions:
  - version: 1
    date: 2026-01-15
    results: [{gpu}]
    changes: First version.
{v2}errata: []
---

Some prose about {{{{ "the data" }}}}.

{{{{ results_table() }}}}

{{{{ charts() }}}}
"""

V2 = """  - version: 2
    date: 2026-02-01
    results: [{gpu}, {cpu}]
    changes: Adds the CPU-host campaign.
"""


def versioned_note(versions: int) -> str:
    v2 = V2.format(gpu=GPU_FILE, cpu=CPU_FILE) if versions >= 2 else ""
    return VERSIONED_NOTE.format(gpu=GPU_FILE, v2=v2)


@dataclass
class Inputs:
    results_dir: Path
    notes_dir: Path


def make_inputs(base: Path, *, versions: int = 2, repo_notes: bool = True) -> Inputs:
    """A results dir (the seed's transcribed summary + both fixture campaigns) and a notes
    dir (the repository's notes + a two-version fixture note)."""
    results_dir = base / "results"
    notes_dir = base / "notes"
    results_dir.mkdir(parents=True)
    notes_dir.mkdir(parents=True)
    shutil.copyfile(REPO / "results" / SEED_SUMMARY, results_dir / SEED_SUMMARY)
    write_results(gpu_results(), results_dir / GPU_FILE)
    write_results(cpu_results(), results_dir / CPU_FILE)
    if repo_notes:
        # The repository's notes are built from the repository's own raw campaigns.
        for note in (REPO / "phase" / "notes").glob("*.md"):
            shutil.copyfile(note, notes_dir / note.name)
        for raw in repo_raw_files():
            shutil.copyfile(raw, results_dir / raw.name)
    note = versioned_note(versions)
    if repo_notes:
        # The fixtures' made-up builds and models stand beside the committed campaigns on the
        # cross-host table: allowed, as the repository's CPU note allows its own.
        note = note.replace("\nversions:\n", "\nmixed_builds: true\nversions:\n", 1)
    (notes_dir / "2026-01-fixture-versions.md").write_text(note)
    return Inputs(results_dir, notes_dir)


def repo_raw_files() -> list[Path]:
    """The committed raw campaign files (not summaries, not the schema)."""
    return sorted(p for p in (REPO / "results").glob("*.json")
                  if p.name != "schema.json" and not p.name.startswith("summary-"))


def note_results(slug_file: str) -> list[str]:
    """The results files the latest version of a repository note lists."""
    text = (REPO / "phase" / "notes" / slug_file).read_text(encoding="utf-8")
    meta = yaml.safe_load(text.split("---", 2)[1])
    return list(meta["versions"][-1]["results"])


def site_paths(base: Path, inputs: Inputs, published: Path | None = None) -> SitePaths:
    """Temporary directories for everything a build writes, the archive included (a test
    never publishes into the repository's published/)."""
    return SitePaths.default(
        REPO,
        results_dir=inputs.results_dir,
        notes_dir=inputs.notes_dir,
        docs_dir=base / "docs",
        site_dir=base / "site",
        published_dir=published or base / "published",
    )


def snapshot(root: Path) -> dict[str, str]:
    """Every file and directory under root (and symlinks as their target), hashed."""
    return {str(p.relative_to(root)): "link:" + os.readlink(p) if p.is_symlink()
            else hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


@dataclass
class BuiltSite:
    """A built site's directories. (Not its BuildResult: the `built_site` fixture's build may
    have run in another pytest-xdist worker; a test that needs the result builds its own.)"""

    paths: SitePaths
    inputs: Inputs

    @property
    def results_before(self) -> dict[str, Any]:
        """The results dir as it was just before the build: snapshot() and its mtime."""
        return json.loads((self.inputs.results_dir.parent / RESULTS_BEFORE).read_text())


RESULTS_BEFORE = "results-before-build.json"


def build_test_site(base: Path) -> BuiltSite:
    inputs = make_inputs(base / "in")
    # For test_site_safety: the build must leave its input as it found it, to the byte.
    before = {"tree": snapshot(inputs.results_dir),
              "mtime_ns": inputs.results_dir.stat().st_mtime_ns}
    (base / "in" / RESULTS_BEFORE).write_text(json.dumps(before))
    paths = site_paths(base, inputs)
    build_site(paths)
    return BuiltSite(paths, inputs)


def built_test_site(base: Path) -> BuiltSite:
    """The site build_test_site(base) built earlier (maybe in another process)."""
    inputs = Inputs(base / "in" / "results", base / "in" / "notes")
    return BuiltSite(site_paths(base, inputs), inputs)


# --- the inputs do what the other tests rely on -------------------------------------------


def test_gpu_fixture_plants_the_findings_the_page_tests_need() -> None:
    report = validate_results(gpu_results(), GPU_FILE)
    assert not report.blocking
    assert report.chip_sensor == "gpu"
    xss_draft4 = [r.id for r in gpu_results().runs
                  if r.prompt == XSS_PROMPT and r.strategy == "draft-4"]
    assert report.rejection_of(xss_draft4[1], "gpu") is not None
    assert report.rejection_of(xss_draft4[0], "gpu") is None
    assert report.rejection_of("r0-code-draft-2", "board") is not None
    assert report.rejection_of("r0-code-draft-2", "gpu") is None
    assert report.rejection_of("r1-code-draft-2", "board") is None
    assert report.rejection_of("r0-code-plain", "board") is None
    assert ("code", "ngram", ()) in report.unstable_conditions()
    assert ("code", "plain", ()) not in report.unstable_conditions()
    assert any(f.rule == "equivalence" for f in report.findings)


def test_cpu_fixture_has_no_energy() -> None:
    results = cpu_results()
    report = validate_results(results, CPU_FILE)
    assert not report.blocking
    assert report.chip_sensor is None
    assert all(not run.energy for run in results.runs)


# --- reading rendered pages back ------------------------------------------------------------


@dataclass
class ParsedCell:
    text: str
    value: str | None
    title: str | None
    struck: bool
    low: str | None = None  # data-low, data-high: the 95% interval's ends
    high: str | None = None
    interval: str = ""  # the interval's line under the value
    marks: list[str] = field(default_factory=list)  # hrefs of the links in the cell (notes)


@dataclass
class ParsedRow:
    prompt: str
    strategy: str
    cls: str
    cells: dict[str, ParsedCell]
    links: list[str]


class _TableParser(HTMLParser):
    """Rows of the results tables in a page: {dataset: {(prompt, strategy): ParsedRow}}."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, dict[tuple[str, str], ParsedRow]] = {}
        self.dataset: str | None = None
        self.row: ParsedRow | None = None
        self.cell: tuple[str, dict[str, str | None]] | None = None
        self.text: list[str] = []
        self.interval: list[str] | None = None
        self.struck = False
        # The table's column keys, from its headings (data-key on a <th>; None for a label
        # column), and the index of the row's next cell.
        self.keys: list[str | None] = []
        self.column = 0
        self.marks: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "div" and "phase-table" in (a.get("class") or "").split():
            self.dataset = a.get("data-dataset")
            self.tables.setdefault(self.dataset or "", {})
            self.keys = []
        elif tag == "th" and self.dataset is not None and self.row is None:
            self.keys.append(a.get("data-key"))
        elif tag == "tr" and self.dataset is not None and "data-prompt" in a:
            self.row = ParsedRow(a["data-prompt"] or "", a["data-strategy"] or "",
                                 a.get("class") or "", {}, [])
            self.column = 0
        elif tag == "td" and self.row is not None:
            key = self.keys[self.column] if self.column < len(self.keys) else None
            self.column += 1
            if key is not None:
                self.cell = (key, a)
                self.text, self.struck, self.interval, self.marks = [], False, None, []
        elif tag == "span" and self.cell is not None and a.get("class") == "phase-ci":
            self.interval = []
        elif tag == "del" and self.cell is not None:
            self.struck = True
        elif tag == "a" and self.row is not None and "phase-raw-link" in (a.get("class") or ""):
            self.row.links.append(a.get("href") or "")
        elif tag == "a" and self.cell is not None:
            self.marks.append(a.get("href") or "")

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            (self.interval if self.interval is not None else self.text).append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self.cell is not None and self.row is not None:
            key, a = self.cell
            self.row.cells[key] = ParsedCell("".join(self.text), a.get("data-value"),
                                             a.get("title"), self.struck, a.get("data-low"),
                                             a.get("data-high"), "".join(self.interval or []),
                                             self.marks)
            self.cell = None
        elif tag == "tr" and self.row is not None and self.dataset is not None:
            self.tables[self.dataset][(self.row.prompt, self.row.strategy)] = self.row
            self.row = None
        elif tag == "table":
            self.dataset = None if self.row is None else self.dataset


def parse_tables(text: str) -> dict[str, dict[tuple[str, str], ParsedRow]]:
    parser = _TableParser()
    parser.feed(text)
    return parser.tables


_GROUP = re.compile(r'<tr id="([^"]+)" class="phase-run-group">(.*?)</tr>', re.S)
_GROUP_RUN = re.compile(r'<a class="phase-group-run" href="#([^"]+)">')


def landed_runs(docs_dir: Path, page: Path, hrefs: list[str]) -> list[str]:
    """The run anchors a row's links land on: a link to a group of the data page stands for
    the runs that group lists there (each of which must be a run on that page), a link to a
    run for itself. `page` is the page the links are on, under `docs_dir` (Markdown)."""
    out: list[str] = []
    for href in hrefs:
        target, _, anchor = href.partition("#")
        data = (page.parent / target).resolve()
        text = data.with_suffix(".md").read_text(encoding="utf-8")
        assert data.with_suffix(".md").is_relative_to(docs_dir.resolve()), href
        ids = set(re.findall(r'id="([^"]+)"', text))
        assert anchor in ids, f"{href}: no such anchor on {data.name}"
        groups = {a: _GROUP_RUN.findall(body) for a, body in _GROUP.findall(text)}
        runs = groups.get(anchor, [anchor])
        assert runs and all(r.startswith("run-") and r in ids for r in runs), (href, runs)
        out += runs
    return out
