"""The build cache (phase.publish.data.cache) and HTML islands (phase.publish.markup.islands).

Both exist for speed only, so what they must show is that nothing else changes: a site built
from a warm cache is byte for byte the site built without one (with the altered cache's build
of the same site, in tests/test_cache_integrity.py), an island reaches the page
exactly as Markdown would have passed it through, and any change to a file, the settings, a
citing note or a template is a miss, never a stale page.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from test_publish_inputs import CPU_FILE, REPO, Inputs, make_inputs, site_paths

from phase.publish.data.cache import DatasetCache, _trim
from phase.publish.data.datasets import load_dataset
from phase.publish.markup.islands import CLOSE, OPEN, island
from phase.publish.site.build import build_docs, build_site
from phase.results import dump_json, load
from phase.validate import RuleSettings


def test_a_hit_keeps_the_order_of_each_rows_factors(tmp_path: Path) -> None:
    # The committed memory campaign's factors (format, threads, fill) are not in sorted
    # order; a cache that sorted them served rows that matched none of the file's runs.
    from phase.analysis.queries import condition_key, runs_by_condition

    path = REPO / "results" / "memory_bound-x86_64-2c-2026-12-03.json"
    cache = DatasetCache(tmp_path / "cache")
    _, cold = cache.load(path, RuleSettings())
    _, warm = cache.load(path, RuleSettings())
    assert (cache.misses, cache.hits) == (1, 1)
    assert cold is not None and warm is not None and warm.raw is not None
    assert [list(r.factors) for r in warm.summary.rows] == \
        [list(r.factors) for r in cold.summary.rows]
    runs = runs_by_condition(warm.raw)
    assert all(condition_key(row) in runs for row in warm.summary.rows)


def _edit_note(path: Path) -> None:
    path.write_text(dump_json(load(path).model_copy(update={"note": "edited"})))


def test_a_hit_gives_what_a_full_read_gives(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", repo_notes=False)
    path = inputs.results_dir / CPU_FILE
    settings = RuleSettings()
    cache = DatasetCache(tmp_path / "cache")
    _, first = cache.load(path, settings)
    again = DatasetCache(tmp_path / "cache")
    report, hit = again.load(path, settings)
    assert (again.hits, again.misses) == (1, 0)
    expected_report, expected = load_dataset(path, settings)
    assert first is not None and hit is not None and expected is not None
    assert report.findings == expected_report.findings
    assert hit.summary == expected.summary and hit.header == expected.header
    assert hit.n_runs == expected.n_runs == len(load(path).runs)  # type: ignore[union-attr]
    assert "results" not in hit.__dict__  # the runs are not read until asked for
    assert hit.results == expected.results


def test_changed_bytes_or_settings_miss(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", repo_notes=False)
    path = inputs.results_dir / CPU_FILE
    cache = DatasetCache(tmp_path / "cache")
    cache.load(path, RuleSettings())
    other = RuleSettings(variance_max=0.5)
    cache.load(path, other)
    assert cache.misses == 2
    _edit_note(path)
    _, edited = cache.load(path, RuleSettings())
    assert cache.misses == 3 and edited is not None and edited.header.note == "edited"


def _cached_cpu_file(tmp_path: Path) -> tuple[Path, DatasetCache]:
    """The CPU fixture campaign, loaded once through a fresh cache (its entries written)."""
    path = make_inputs(tmp_path / "in", repo_notes=False).results_dir / CPU_FILE
    cache = DatasetCache(tmp_path / "cache")
    cache.load(path, RuleSettings())
    return path, cache


def test_an_unreadable_entry_is_a_miss_and_lost_runs_are_read_again(tmp_path: Path) -> None:
    path, cache = _cached_cpu_file(tmp_path)
    for entry in cache.dir.glob("*.head"):
        entry.write_bytes(b"not an entry")
    again = DatasetCache(tmp_path / "cache")
    _, ds = again.load(path, RuleSettings())
    assert again.misses == 1 and ds is not None
    for entry in cache.dir.glob("*.runs"):
        entry.unlink()
    third = DatasetCache(tmp_path / "cache")
    _, ds = third.load(path, RuleSettings())
    assert third.hits == 1 and ds is not None
    assert ds.results == load(path)


def test_runs_come_from_the_bytes_the_build_read_not_a_file_changed_since(
        tmp_path: Path) -> None:
    path, cache = _cached_cpu_file(tmp_path)
    for entry in cache.dir.glob("*.runs"):
        entry.unlink()
    before = path.read_bytes()
    _, ds = DatasetCache(tmp_path / "cache").load(path, RuleSettings())
    assert ds is not None and "results" not in ds.__dict__
    _edit_note(path)
    assert ds.data == before and ds.sha256 == hashlib.sha256(before).hexdigest()
    # The runs, the header and the raw download are all of the one version the build read.
    assert ds.results.note != "edited" and ds.results.note == ds.header.note


def test_trim_drops_the_least_recently_used_first(tmp_path: Path) -> None:
    import os

    for i, name in enumerate(["old.head", "mid.head", "new.head"]):
        (tmp_path / name).write_bytes(b"x" * 100)
        os.utime(tmp_path / name, (1000 + i, 1000 + i))
    _trim(tmp_path, 250)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mid.head", "new.head"]


@pytest.mark.slow
def test_a_new_citing_version_or_template_change_renders_the_data_page_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHASE_CACHE", str(tmp_path / "cache"))
    inputs = make_inputs(tmp_path / "in", repo_notes=False)
    templates = tmp_path / "templates"
    shutil.copytree(site_paths(tmp_path, inputs).templates_dir, templates)
    paths = site_paths(tmp_path / "a", inputs)
    paths = replace(paths, templates_dir=templates)
    build_docs(paths)
    page = paths.docs_dir / "raw" / f"{CPU_FILE[:-5]}.md"
    before = page.read_text()
    raw_page = templates / "raw_page.md.j2"
    raw_page.write_text(raw_page.read_text().replace("## Findings", "## Findings here"))
    build_docs(paths)
    after = page.read_text()
    assert "## Findings here" in after and "## Findings here" not in before


@pytest.mark.slow  # a whole site: mkdocs build
def test_an_island_reaches_the_page_exactly_as_markdown_passes_html(tmp_path: Path) -> None:
    """The same page built by mkdocs with the island markers (lifted out and put back) and
    without them (Markdown parses the block): the article HTML is the same."""
    html = textwrap.dedent("""\
        <div class="phase-table" data-x="a&amp;b">
        <table><tbody><tr id="run-1"><td><a href="#run-1">1</a></td>
        <td title="x">&lt;script&gt;</td></tr></tbody></table>
        <details><summary>out</summary><pre>line one&#10;line two</pre></details>
        </div>""")
    # No results and no notes: the page under test is the only one that is not hand-written
    # (and the home page), so mkdocs is all each build does.
    inputs = Inputs(tmp_path / "in" / "results", tmp_path / "in" / "notes")
    inputs.results_dir.mkdir(parents=True)
    inputs.notes_dir.mkdir()
    bodies = {}
    for marked in (True, False):
        block = str(island(html)) if marked else "\n\n" + html + "\n\n"
        if marked:
            assert OPEN in block and CLOSE in block
        paths = site_paths(tmp_path / f"site-{marked}", inputs)
        src = tmp_path / f"src-{marked}"
        shutil.copytree(paths.docs_src, src)
        (src / "island.md").write_text("# Island\n\nSome prose before." + block
                                       + "## After\n\nProse after.\n")
        paths = replace(paths, docs_src=src)
        build_site(paths)
        page = (paths.site_dir / "island.html").read_text()
        start = page.index("<article")
        bodies[marked] = page[start:page.index("</article>", start)]
        assert "phase:island" not in bodies[marked]
    assert bodies[True] == bodies[False]
    assert 'title="x">&lt;script&gt;</td>' in bodies[True]


def test_island_blocks_stay_out_of_the_search_index_and_prose_stays_in(built_site) -> None:
    index = (built_site.paths.site_dir / "search" / "search_index.json").read_text()
    assert "Raw data" in index
    assert "phase-runs-table" not in index and "output sha256" not in index
    note = (built_site.paths.site_dir / "notes/speculative-decoding-cpu/index.html").read_text()
    assert "phase:island" not in note and 'class="phase-table"' in note


def test_entries_are_json_and_hold_no_runs_in_the_head(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", repo_notes=False)
    cache = DatasetCache(tmp_path / "cache")
    cache.load(inputs.results_dir / CPU_FILE, RuleSettings())
    (head,) = cache.dir.glob("*.head")
    meta, body = head.read_bytes().split(b"\n", 1)
    entry = json.loads(body)  # JSON: nothing in an entry can run code when it is read
    assert json.loads(meta)["bound"]["results_sha256"] == hashlib.sha256(
        (inputs.results_dir / CPU_FILE).read_bytes()).hexdigest()
    assert entry["header"]["runs"] == [] and entry["n_runs"] > 0


# --- charts: bound to the code that draws them, not to all of phase's ------------------------

CHART = {"$schema": "https://vega.github.io/schema/vega-lite/v5.json",
         "data": {"values": [{"x": 1, "y": 2}, {"x": 2, "y": 3}]},
         "mark": "point", "encoding": {"x": {"field": "x", "type": "quantitative"},
                                       "y": {"field": "y", "type": "quantitative"}}}


def test_a_chart_is_drawn_again_when_what_draws_it_changes_and_only_then(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import struct

    from phase.publish.charts import spec
    from phase.publish.data import cache

    monkeypatch.setenv("PHASE_CACHE", str(tmp_path / "cache"))
    drawn: list[str] = []
    real_draw = spec._draw
    monkeypatch.setattr(spec, "_draw", lambda text: drawn.append(text) or real_draw(text))

    def png(chart: dict) -> bytes:
        spec._png.cache_clear()  # the process's own memory: each call asks the build cache
        return spec.render_png(chart)

    first = png(CHART)
    assert len(drawn) == 1 and first.startswith(b"\x89PNG")
    # Another phase: every other module edited (its code fingerprint), the same drawing code.
    monkeypatch.setattr(cache, "code_fingerprint", lambda: "f" * 64)
    assert png(CHART) == first and len(drawn) == 1
    # What does change the picture misses: the spec's own bytes, the packages' versions, the
    # scale and the code that calls vl-convert.
    moved = {**CHART, "data": {"values": [{"x": 1, "y": 2}, {"x": 2, "y": 4}]}}
    assert png(moved) != first and len(drawn) == 2
    monkeypatch.setattr(spec, "packages", lambda: "altair 0, vl-convert 0")
    assert png(CHART) == first and len(drawn) == 3
    monkeypatch.setattr(spec, "PNG_SCALE", 3.0)
    wider = png(CHART)
    assert len(drawn) == 4
    width = struct.unpack(">I", wider[16:20])[0]  # the PNG header's IHDR
    assert abs(width - 2 * struct.unpack(">I", first[16:20])[0]) <= 1
    worker = tmp_path / "png_worker.py"
    worker.write_text(Path(spec.png_worker.__file__).read_text() + "\n# edited\n")
    monkeypatch.setattr(spec, "DRAWING_MODULES", (Path(spec.__file__), worker))
    spec.drawing_code.cache_clear()
    try:
        assert png(CHART) == wider and len(drawn) == 5
    finally:
        spec.drawing_code.cache_clear()
    # None under a fingerprint of phase's code; the drawing code binds an entry rather than
    # naming it, so the last drawing replaced the entry the older code had written.
    assert [p.name for p in (tmp_path / "cache" / "build-cache").iterdir()] == ["charts"]
    assert len(list((tmp_path / "cache" / "build-cache" / "charts").glob("*.chart-png"))) == 4


def test_the_drawing_code_is_the_code_that_calls_vl_convert() -> None:
    from phase.publish.charts import png_worker, spec

    # Every module that imports vl_convert, or holds what decides the picture, is in it.
    callers = {p.name for p in (REPO / "phase").rglob("*.py") if "vl_convert" in p.read_text()}
    assert callers <= {p.name for p in spec.DRAWING_MODULES} == {"spec.py", "png_worker.py"}
    assert Path(png_worker.__file__) in spec.DRAWING_MODULES
