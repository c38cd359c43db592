"""A change of structure changes no byte a reader sees.

The site is built twice from the same inputs (the committed results, bench results, note
sources and archive of ``REFERENCE``): once by phase's code as it was at ``REFERENCE``, once by
the code in this checkout. Every generated page, download, chart and archived version must be
byte for byte the same, and the results schema may only have grown (optional fields added
by a new schema version), never changed what it defined.

REFERENCE's build is kept in the phase cache (``_reference_build``): its code never changes,
so a later run builds only this checkout's.

``REFERENCE`` is the commit after which pages are expected to stay put. The structure refactor
of publish/, decode/ and the figure registry was held to 8200220 (the commit before it); the
reference then moved to 7465f45, whose schema 6 stamps the derived summaries on the raw data
pages, and to bde5111 for schema 7 (a run's foreign load) likewise, then to 9070f3f:
data is escaped for Markdown (a bench row's "[10]" became "&#91;10&#93;", the same text in a
browser) and a merged shard's file must be a bare file name (a schema pattern), then to
e0fe534: the cost-model tables' rows link to their sources and data pages show the cost
profile's blocks (issue 30), and to the merge of that with 7fa847a: schema 8, every figure
the median of the undisturbed runs with its bootstrap 95% interval (tables, charts, prose),
the CPU note's version 3, and each run's passes on its data page; then to 9472c06, where
the cost tables' source links got their own class and the provenance box an embedded
model's format from its GGUF header; then to 32ecdf8: schema 9 (what a chip figure covers)
stamps the derived summaries, and so their digests on the raw data pages, and the cross-host
template (a warning where hosts' chip figures cover different parts) changes the template
digests in the archive's manifests; then to e99220f: schema 10 (experiments over factors, whose
fields are never written where an experiment has none) stamps the derived summaries, and so
their digests on the raw data pages, and nothing else; then to d7e632e: the results table
template's columns for extra factors change its digest in the archive's manifests, and no
page; then to 8c981ac: experiments/default.md.j2 (best lines per level, a blank line between
them) likewise changes only its digest in the manifests; then to a1c9155, the merge of that
with 659058c, where the validation settings every raw data page lists name the AMD and
Intel sensor backends as publishable; then to 5445be2, after the second and third studies
(memory-bound decoding, sampled speculative decoding): schema 11 stamps the derived summaries,
and so their digests on the raw data pages, and their note templates
(experiments/memory_bound.md.j2, experiments/speculative_sampling.md.j2,
temperature_table.html.j2) add template digests to the archive's manifests; no page
otherwise; then to e4fa1bd, where the temperature tables got their downloads (a new digest of
temperature_table.html.j2 in the manifests, no page of the committed notes); then to
cb454ab, after issue 44's claims work: schema 12, Student t intervals on log ratios with
the Benjamini-Hochberg correction, titles and findings from each experiment's declared rule,
counts behind every rate, headlines stated with their confirmation, builds compared only where
comparable, and new versions of three notes with errata on the ones they correct; then to
6ce2d0f (issue 44, a note page under 150 KB): a note's row links once to its runs, listed
under one anchor of the data page (which gains that list), chart specs keep 7 significant
digits, and a finding's run link has no title; then to 672c922 (the rest of that item):
a column empty in every row is not drawn, a column's key is on its heading, cells' data-value
and chart specs keep 6 significant digits, an unstable badge has no title (one note per
table says what it means), and a note links to its data page's cost profile and, past 12
findings, to its findings instead of repeating them; then to b60f6ac: a cost-prediction table
of a file with factors has a levels column, each row links to its own condition's runs, and a
table past 12 rows draws the 12 with the largest error (its downloads keep every row); and
6fe73f0 (issue 46, workloads): schema 13 (config.workload, never written where a campaign ran
its experiment's own prompts) stamps the derived summaries, and so their digests on the raw
data pages, and nothing else; then to 73c5689, the merge of the two; then to 082ca5c:
schema 14 (the serving study's records, never written where runs serve one request)
stamps the derived summaries likewise, and nothing else; then to c0e8033: schema 15 (a
campaign's stated duration, never written by the campaigns before it) stamps the derived
summaries, and so their digests on the raw data pages, and nothing else; then to f2836fc:
auto's comparator in the serving note is chosen per repeat on the other repeats (the
auto-floor table, its downloads and the finding change); then to cdd3617: a page that
hides its table of contents (every note page) no longer writes it into the navigation
drawer, and every page's template output shifts by the blank lines around it; then to
bfb89a3: auto's floor in the serving note is its lowest ratio to any rival, with an interval
that holds whichever is fastest (the auto-floor table, its caption, downloads and the
finding change); then to d46b1ee: that table links each condition's runs once (its
links change); then to 981a9f4: schema 16 (config.blocked_by, never written by the
campaigns before it) stamps the derived summaries, and so their digests on the raw data
pages; the cross-host table no longer takes a confirmation for its campaign (the sampling
study's host row and its three prompts' tables); chart data leave out null fields, which
renames the charts that had them in every note version; a zero-width interval is not drawn
under its value; a t interval's hover title is shorter; then to adf28d4: schema 17
(config.serving.order_seed) stamps the derived summaries, and so their digests on the raw
data pages; then to 8c8cb26: the chart scripts (vega.js, charts.js) are named only by
the pages that draw a chart, so every page's script tags change. A change
that alters pages on purpose (a new column)
moves it again, to its own commit, and says so in its commit message.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib import metadata
from io import BytesIO
from pathlib import Path

import pytest

from phase.models.sources import cache_dir

REPO = Path(__file__).resolve().parent.parent
REFERENCE = "8c8cb269707c3d83d0a3cee36481c1eb0ca1375e"
# What a build reads besides phase's code: taken from REFERENCE for both builds. The archive
# (published/) starts empty, so that every note version is rendered by the code under test
# rather than served from its frozen bytes.
# The hand-written pages in docs/ are inputs too: a refactor redraws docs/architecture.md.
INPUTS = ("results", "bench/results", "phase/notes", "docs")
# What a build's code is made of: REFERENCE's for the old build, this checkout's for the new.
CODE = ("phase", "templates", "experiments", "overrides", "mkdocs.yml")
# mkdocs stamps these with the build's time.
VOLATILE = {"sitemap.xml.gz"}
# A frozen version's manifest records when it was frozen and a digest of phase's own code,
# which a refactor changes by definition; every other field must match.
MANIFEST_VOLATILE = ("frozen_at", "code_sha256")
RUN_CLI = "import sys; from phase.cli import main; sys.argv[0] = 'phase'; main()"

pytestmark = pytest.mark.slow


def _git_tree(ref: str, dest: Path) -> None:
    data = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", ref],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def _checkout_code(dest: Path) -> None:
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard",
         "--", *CODE], check=True, capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _env(root: Path) -> dict[str, str]:
    # The run's own cache (PHASE_CACHE, or ~/.cache/phase), as `make site` uses it: every entry
    # is bound to the fingerprint of the code that derived it (a chart's, to its drawing
    # code), so neither build reads what the other's code derived, and only what vl-convert
    # draws (about a third of each build) outlives a run: REFERENCE's code never changes,
    # and the current code's charts are the ones every other build of these notes draws.
    return {**os.environ, "PYTHONPATH": str(root)}


def _build(root: Path, inputs: Path) -> None:
    shutil.rmtree(root / "published", ignore_errors=True)
    for rel in INPUTS:
        shutil.rmtree(root / rel, ignore_errors=True)
        if (inputs / rel).exists():
            shutil.copytree(inputs / rel, root / rel)
    done = subprocess.run([sys.executable, "-c", RUN_CLI, "site"], cwd=root, env=_env(root),
                          capture_output=True, text=True)
    assert done.returncode == 0, f"build in {root} failed:\n{done.stdout}\n{done.stderr}"


# What a build leaves that the test compares (and the schema, in SCHEMA_FILE).
PARTS = ("docs", "site", "published")
SCHEMA_FILE = "schema.json"


def _reference_key() -> str:
    """What REFERENCE's build depends on besides REFERENCE itself: the interpreter, every
    installed distribution (mkdocs, Material, Jinja, Altair, vl-convert...) and what this test
    takes from where."""
    dists = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())
    facts = [REFERENCE, sys.version, *dists, repr((INPUTS, CODE, PARTS, RUN_CLI))]
    return hashlib.sha256("\n".join(facts).encode()).hexdigest()[:32]


def _reference_build(tmp_path: Path, inputs: Path) -> Path:
    """REFERENCE's build: its code never changes, so a build is kept in the phase cache
    ($PHASE_CACHE/test-pages-reference/KEY, keyed by _reference_key) and later runs compare
    against it instead of building REFERENCE again (about half this test's time). A new entry
    appears whole or not at all (renamed into place), and one that lacks a part is built
    again."""
    home = cache_dir() / "test-pages-reference"
    kept = home / _reference_key()
    if all((kept / part).is_dir() for part in PARTS) and (kept / SCHEMA_FILE).is_file():
        return kept
    reference = tmp_path / "reference"
    shutil.copytree(inputs, reference)
    _build(reference, inputs)
    (reference / SCHEMA_FILE).write_text(_schema(reference))
    try:
        home.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=home))
    except OSError:  # a cache that cannot be written: this run's build serves alone
        return reference
    try:
        for part in PARTS:
            shutil.copytree(reference / part, staging / part, symlinks=True)
        shutil.copy2(reference / SCHEMA_FILE, staging / SCHEMA_FILE)
        staging.rename(kept)
    except OSError:  # no room, or another run kept it first: this run's build serves
        shutil.rmtree(staging, ignore_errors=True)
    # Entries for an earlier REFERENCE (or other packages) are never read again (about 60 MB
    # each); another run's staging directory is left to it.
    for old in home.iterdir():
        if old != kept and not old.name.startswith(".staging-"):
            shutil.rmtree(old, ignore_errors=True)
    return reference


def _content(path: Path) -> bytes:
    if path.name != "manifest.json":
        return path.read_bytes()
    manifest = json.loads(path.read_bytes())
    for key in MANIFEST_VOLATILE:
        assert key in manifest, f"{path}: no {key}"
        del manifest[key]
    return json.dumps(manifest, sort_keys=True).encode()


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): _content(p) for p in sorted(root.rglob("*"))
            if p.is_file() and p.name not in VOLATILE}


def _schema(root: Path) -> str:
    return subprocess.run([sys.executable, "-c", RUN_CLI, "schema"], cwd=root, env=_env(root),
                          check=True, capture_output=True, text=True).stdout


def _widened(before: dict, after: dict | None) -> bool:
    """An enum that only gained values (a new factor kind; a constant that became one of
    several, as a serving load 'closed' gained 'open'): every older file still reads."""
    if after is None or "enum" not in after:
        return False
    if "const" in before:  # a constant is a one-value enum
        before = {**{k: v for k, v in before.items() if k != "const"},
                  "enum": [before["const"]]}
    if "enum" not in before:
        return False
    rest = {k: v for k, v in after.items() if k != "enum"}
    return (rest == {k: v for k, v in before.items() if k != "enum"}
            and set(before["enum"]) <= set(after["enum"]))


def _assert_schema_extends(before: dict, after: dict) -> None:
    """The results contract may grow (a new schema version adds optional fields or enum
    values, so every older file still reads) but never change what it already defined."""
    for name, model in before["$defs"].items():
        now = after["$defs"].get(name)
        assert now is not None, f"results schema: {name} is gone"
        for field, definition in model.get("properties", {}).items():
            if field != "schema_version":
                found = now["properties"].get(field)
                assert found == definition or _widened(definition, found), \
                    f"{name}.{field} changed"
        added = set(now.get("required", [])) - set(model.get("required", []))
        assert not added, f"{name}: new required fields {sorted(added)}"


def test_pages_and_schema_unchanged_since_reference(tmp_path: Path) -> None:
    inputs = tmp_path / "inputs"
    _git_tree(REFERENCE, inputs)
    reference = _reference_build(tmp_path, inputs)
    current = tmp_path / "current"
    _checkout_code(current)
    _build(current, inputs)

    _assert_schema_extends(json.loads((reference / SCHEMA_FILE).read_text()),
                           json.loads(_schema(current)))
    for version in ("v1", "v2"):
        assert (current / "published" / "speculative-decoding-cpu" / version).is_dir()
    for part in PARTS:
        before, after = _tree(reference / part), _tree(current / part)
        assert len(before) > 20, f"{part}/: the reference build wrote almost nothing"
        assert sorted(after) == sorted(before), f"{part}/: files added or missing"
        changed = [name for name in before if before[name] != after[name]]
        assert not changed, f"{part}/: {len(changed)} files differ, e.g. {changed[:5]}"
