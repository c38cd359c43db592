"""The built site in headless Chromium (Debian's /usr/bin/chromium driven by Playwright):
every chart drawn, no console errors, no request leaving the machine, raw-data links resolve,
over http://127.0.0.1 and from file://."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urlsplit

import pytest

from phase.publish.site.build import serving

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

# CI sets PHASE_REQUIRE_BROWSER=1 (and installs chromium): there a missing browser is a failure,
# not a skip, so the browser test can never silently stop running.
_REQUIRED = os.environ.get("PHASE_REQUIRE_BROWSER") == "1"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists() and not _REQUIRED,
                       reason="Debian chromium is not installed at /usr/bin/chromium "
                       "(apt-get install -y chromium)"),
]

# Per chart: how it settled, and how many data marks (points, lines, rules) Vega drew; axes,
# grids and legends have other roles and do not count.
CHARTS_JS = """() => Array.from(document.querySelectorAll('.phase-chart')).map(el => ({
  id: el.id,
  kind: el.getAttribute('data-kind'),
  drawn: el.getAttribute('data-drawn'),
  marks: el.querySelectorAll('.phase-chart-view svg g.role-mark path, '
    + '.phase-chart-view svg g.role-mark line').length,
  fallbackHidden: el.querySelector('.phase-chart-fallback').hidden,
}))"""


class Watch:
    """Console errors, uncaught page errors and requests that are not to the site itself."""

    def __init__(self, allowed: tuple[str, ...]) -> None:
        self.allowed = allowed
        self.errors: list[str] = []
        self.outside: list[str] = []

    def attach(self, page) -> None:
        page.on("console", lambda m: self.errors.append(f"{page.url}: {m.text}")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"{page.url}: {e}"))
        page.on("response", lambda r: self.errors.append(f"HTTP {r.status} {r.url}")
                if r.status >= 400 else None)
        # A request cut short by the next navigation (ERR_ABORTED, e.g. the favicon) is not
        # a broken resource; anything else that fails is.
        page.on("requestfailed", lambda r: self.errors.append(f"failed {r.url}: {r.failure}")
                if r.url.startswith(self.allowed) and "ERR_ABORTED" not in (r.failure or "")
                else None)

    def route(self, route) -> None:
        url = route.request.url
        if url.startswith(self.allowed):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        yield browser
        browser.close()


def _open(browser, allowed: tuple[str, ...], **options):
    context = browser.new_context(service_workers="block", **options)
    watch = Watch(allowed)
    context.route("**/*", watch.route)
    page = context.new_page()
    watch.attach(page)
    return context, page, watch


def _charts_drawn(page) -> list[dict]:
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.phase-chart'))"
        ".every(el => el.hasAttribute('data-drawn'))",
        timeout=20_000,
    )
    return page.evaluate(CHARTS_JS)


def _pages(site: Path) -> list[str]:
    return sorted(str(p.relative_to(site)) for p in site.rglob("*.html") if p.name != "404.html")


# What one visit of a page collects for the tests below: its element ids (raw-data links land
# on them), its table downloads and tables, and the chart slots that say why nothing is drawn.
PAGE_JS = """() => ({
  ids: Array.from(document.querySelectorAll('[id]')).map(e => e.id),
  rawLinks: Array.from(document.querySelectorAll('a.phase-raw-link')).map(a => a.href),
  groups: Object.fromEntries(Array.from(document.querySelectorAll('tr.phase-run-group'))
    .map(tr => [tr.id, Array.from(tr.querySelectorAll('a.phase-group-run'))
      .map(a => a.hash.slice(1))])),
  downloads: Array.from(document.querySelectorAll('a.phase-table-download'))
    .map(a => [a.href, a.dataset.sha256, a.textContent]),
  tables: document.querySelectorAll('.phase-table table, .phase-runs-table table, '
    + '.phase-findings table, .phase-bench-table table').length,
  missing: Array.from(document.querySelectorAll('.phase-chart-missing')).map(e => e.innerText),
  body: document.body.innerText,
  outputs: document.querySelector('.phase-outputs')?.textContent ?? null,
  table: document.querySelector('.phase-table')?.innerText ?? null,
})"""


@dataclass
class Visited:
    """Every page of the built site seen once, over http at 1280 px, as a reader gets it."""

    base: str
    pages: dict[str, dict[str, Any]]  # page -> PAGE_JS's answer, its charts and its tables
    served: dict[str, tuple[int, str]]  # each table download: (HTTP status, its body's sha256)
    raw_link_right: float  # the rightmost raw-data link of the CPU note's results table
    watch: Watch
    dialogs: list[str]  # what any page's scripts tried to show in a dialog (alert, confirm)
    searched: list[str]  # the pages whose search worker was the real one (one per depth)


# mkdocs-material starts its search worker on every page load, which fetches the whole site's
# index and builds a lunr index from it: on one core, 16 s of the 42 s this pass took over
# the test site's 51 pages. The worker and index are the same files on every page; what
# differs is the relative path a page at each depth reaches them by. So the pass lets the
# worker start on the first page at each depth and hands it an empty script elsewhere
# (search itself: test_search_over_http, test_search_from_file_urls_...).
SEARCH_WORKER = "**/assets/javascripts/workers/search.*.js"


def _search_worker_once_per_depth(page, real: list[str]) -> Callable[[str], None]:
    """Routes the page's search worker; returns what to call with each page before it loads.
    `real` gets each page whose worker was the real one."""
    first_at: dict[int, str] = {}  # depth -> the page that loads the real worker there
    current = [""]

    def route(r) -> None:
        rel = current[0]
        if first_at[rel.count("/")] != rel:
            r.fulfill(body="", content_type="text/javascript")
            return
        real.append(rel)
        r.fallback()  # to the context's route (Watch): served by the site

    page.route(SEARCH_WORKER, route)

    def before(rel: str) -> None:
        current[0] = rel
        first_at.setdefault(rel.count("/"), rel)

    return before


@pytest.fixture(scope="module")
def visited(built_site, browser) -> Visited:
    """One pass over the whole site shared by the tests that look at every page (each used
    to load every page again: four passes of the same pages and charts)."""
    site = built_site.paths.site_dir
    with serving(site) as base:
        context, page, watch = _open(browser, (base,), viewport={"width": 1280, "height": 900})
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        searched: list[str] = []
        before = _search_worker_once_per_depth(page, searched)
        pages: dict[str, dict[str, Any]] = {}
        served: dict[str, tuple[int, str]] = {}
        try:
            for rel in _pages(site):
                before(rel)
                page.goto(base + rel, wait_until="load")
                seen = {"charts": _charts_drawn(page), **page.evaluate(PAGE_JS),
                        "fit": page.evaluate(TABLES_FIT_JS)}
                pages[rel] = seen
                for href, _, _ in seen["downloads"]:
                    if href not in served:
                        response = context.request.get(href)
                        served[href] = (response.status, hashlib.sha256(response.body())
                                        .hexdigest())
            page.goto(base + "notes/speculative-decoding-cpu/index.html", wait_until="load")
            link_right = page.evaluate(
                "() => Math.max(...Array.from(document.querySelectorAll("
                "'.phase-table a.phase-raw-link')).map(a => a.getBoundingClientRect().right))")
        finally:
            context.close()
    return Visited(base, pages, served, link_right, watch, dialogs, searched)


def test_site_over_http(visited: Visited) -> None:
    charts_seen = 0
    for rel, seen in visited.pages.items():
        for c in seen["charts"]:
            assert c["drawn"] == "svg" and c["marks"] > 0, (rel, c)
            assert c["fallbackHidden"], (rel, c)
        charts_seen += len(seen["charts"])
    # Each raw-data link opens a page holding the anchored run (or summary row).
    raw_links = {link for seen in visited.pages.values() for link in seen["rawLinks"]}
    runs_reached: set[tuple[str, str]] = set()
    by_page: dict[str, set[str]] = {}
    for link in raw_links:
        url, fragment = urldefrag(link)
        by_page.setdefault(url, set()).add(fragment)
    for url, fragments in sorted(by_page.items()):
        rel = url.removeprefix(visited.base)
        assert rel in visited.pages, url  # a page of the site, visited
        ids = set(visited.pages[rel]["ids"])
        assert [f for f in sorted(fragments) if f and f not in ids] == [], url
        # A link to a group of runs lands on the list of them, each a run of that page.
        groups = visited.pages[rel]["groups"]
        for fragment in fragments & set(groups):
            assert groups[fragment], (url, fragment)
            assert all(run.startswith("run-") and run in ids for run in groups[fragment]), url
            runs_reached.update((url, run) for run in groups[fragment])
        runs_reached.update((url, f) for f in fragments if f.startswith("run-"))
    assert charts_seen >= 10
    assert len(raw_links) > 20 and len(runs_reached) > 50
    # The real search worker started (without an error: watch, below) at every depth.
    depths = {rel.count("/") for rel in visited.pages}
    assert {rel.count("/") for rel in visited.searched} == depths and len(depths) >= 3
    assert len(visited.searched) == len(depths)
    assert {urlsplit(u).path.rsplit("/", 1)[-1] for u in by_page} >= {
        "speculative-fixture-gpu.html", "speculative-fixture-cpu.html",
        "summary-speculative-7b.html"}
    assert visited.watch.errors == []
    assert visited.watch.outside == []


def test_site_from_file_urls(built_site, browser) -> None:
    site = built_site.paths.site_dir
    context, page, watch = _open(browser, ("file://",))
    try:
        page.goto(site.joinpath("index.html").as_uri())
        # Follow the home page's link, as a reader would, to prove relative links work.
        page.click("a.phase-note-link >> text=Speculative decoding: a faster token")
        page.wait_for_load_state("load")
        assert page.url.endswith("notes/speculative-decoding/index.html")
        charts = _charts_drawn(page)
        assert all(c["drawn"] == "svg" for c in charts), charts
        # 18 conditions: 18 bars of chip energy (a transcribed study has no per-run range, so
        # no whiskers) and 18 points; 14 with acceptance and a ratio, plus the break-even rule,
        # against speed and against energy; per k: 3 prompts x (line + 4 points + plain's
        # rule), for speed and for energy. The per-step charts need raw runs: not drawn.
        assert {c["kind"]: c["marks"] for c in charts} == {
            "cost_per_token": 18, "speed_vs_acceptance": 15, "energy_vs_speed": 18,
            "ratio_vs_acceptance": 15, "per_k": 36}
        assert page.locator(".phase-chart-missing").count() == 2
        page.click("a.phase-raw-link >> nth=0")
        page.wait_for_load_state("load")
        fragment = urldefrag(page.url)[1]
        assert page.evaluate("id => !!document.getElementById(id)", fragment)
        page.goto(site.joinpath("notes/fixture-versions/v2/index.html").as_uri())
        charts = _charts_drawn(page)
        assert charts and all(c["drawn"] == "svg" and c["marks"] > 0 for c in charts)
    finally:
        context.close()
    assert watch.errors == []
    assert watch.outside == []


def test_escaped_markup_does_not_run(visited: Visited) -> None:
    """The fixture's prompt and output hold <script> tags: shown as text on the data page and
    in a note's table, and no page of the site ran them (no dialog on any page visited)."""
    raw = visited.pages["raw/speculative-fixture-gpu.html"]
    assert "<script>alert('prompt')</script>" in raw["body"]
    assert "before <script>alert('output')</script> after" in (raw["outputs"] or "")
    note = visited.pages["notes/fixture-versions/v1/index.html"]
    assert "<script>alert('prompt')</script>" in (note["table"] or "")
    assert visited.dialogs == []
    assert visited.watch.errors == []


def test_png_fallbacks_show_without_scripts(built_site, browser) -> None:
    site = built_site.paths.site_dir
    with serving(site) as base:
        context = browser.new_context(java_script_enabled=False)
        try:
            page = context.new_page()
            page.goto(base + "notes/speculative-decoding/index.html", wait_until="load")
            images = page.eval_on_selector_all(
                ".phase-chart-fallback",
                "els => els.map(i => [i.complete && i.naturalWidth > 0, i.hidden])")
        finally:
            context.close()
    assert images == [[True, False]] * 5


# --- search, tables that fit, every chart accounted for, downloads, screenshots -----------


def _search(page, words: str) -> list[str]:
    """Type into material's search box; the result titles it lists."""
    page.locator("input.md-search__input").click()
    page.keyboard.type(words)
    page.wait_for_selector(".md-search-result__item", timeout=20_000)
    return page.eval_on_selector_all(".md-search-result__item h1, .md-search-result__item h2",
                                     "els => els.map(e => e.textContent.trim())")


def test_search_over_http(built_site, browser) -> None:
    with serving(built_site.paths.site_dir) as base:
        context, page, watch = _open(browser, (base,))
        try:
            page.goto(base + "index.html", wait_until="load")
            titles = _search(page, "acceptance")
            meta = page.inner_text(".md-search-result__meta")
        finally:
            context.close()
    assert any("Speculative decoding" in t for t in titles), titles
    assert re.match(r"\d+ matching documents", meta), meta
    assert watch.errors == []
    assert watch.outside == []


def test_search_from_file_urls_runs_through_the_vendored_shim(built_site, browser) -> None:
    site = built_site.paths.site_dir
    context, page, watch = _open(browser, ("file://",))
    try:
        page.goto(site.joinpath("notes/speculative-decoding-cpu/index.html").as_uri())
        # The shim replaces the Worker only for file:// pages (material's index comes inlined
        # in search/search_index.js); served pages use a real worker.
        assert page.evaluate("() => window.Worker === window.IFrameWorker")
        titles = _search(page, "benchmarks")
    finally:
        context.close()
    assert titles, "search found nothing from file://"
    assert watch.errors == []
    assert watch.outside == []


# Every table's right edge within the content column, and no scrollbar on it or its wrappers.
TABLES_FIT_JS = """() => {
  const col = document.querySelector('.md-content__inner');
  const right = col.getBoundingClientRect().right;
  return Array.from(col.querySelectorAll('table')).map(t => {
    const scrolling = [];
    for (let e = t; e && e !== col; e = e.parentElement)
      if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible')
        scrolling.push(e.tagName + '.' + e.className);
    return {where: (t.closest('[class*=phase]') || {className: 'page'}).className,
            width: Math.round(t.getBoundingClientRect().width),
            over: Math.round(t.getBoundingClientRect().right - right), scrolling};
  });
}"""


def test_tables_fit_the_column_at_1280_px(visited: Visited) -> None:
    misfits = []
    widths: dict[str, int] = {}
    for rel, seen in visited.pages.items():
        for t in seen["fit"]:
            widths[f"{rel} {t['where']}"] = t["width"]
            if t["over"] > 0 or t["scrolling"]:
                misfits.append((rel, t))
    assert misfits == []
    # The raw-data links of a note's results table are in view without scrolling.
    assert visited.raw_link_right < 1280
    # The wide ones really were measured: the CPU campaign's runs table fills the column.
    runs = widths["raw/speculative-x86_64-2c-2026-11-30.html phase-runs-table"]
    assert 1000 < runs <= 1280


def test_every_chart_is_drawn_or_says_why(visited: Visited) -> None:
    seen = {"drawn": 0, "explained": 0}
    for rel, page in visited.pages.items():
        if not rel.startswith("notes/"):
            continue
        for c in page["charts"]:
            assert c["drawn"] == "svg" and c["marks"] > 0, (rel, c)
            seen["drawn"] += 1
        for text in page["missing"]:
            assert "Not drawn: " in text and len(text) > 40, (rel, text)
            seen["explained"] += 1
    assert seen["drawn"] >= 20 and seen["explained"] >= 10, seen
    assert visited.watch.errors == []


def test_every_table_download_is_served_with_its_sha256(visited: Visited) -> None:
    checked = 0
    for rel, seen in visited.pages.items():
        links = seen["downloads"]
        assert sorted(f for _, _, f in links) == sorted(["CSV", "JSON"] * seen["tables"]), rel
        for href, sha, _ in links:
            assert visited.served[href] == (200, sha), href
            checked += 1
    assert checked > 20
    assert visited.watch.errors == []


def test_screenshots_target_writes_full_pages_at_1280(built_site, browser, tmp_path: Path) -> None:
    import struct

    from screenshots import pages, shoot

    site = built_site.paths.site_dir
    notes = sorted(d.name for d in (site / "notes").iterdir() if (d / "index.html").is_file())
    assert {"speculative-decoding", "speculative-decoding-cpu", "fixture-versions"} <= set(notes)
    assert sorted(name for name, _ in pages(site)) == sorted(["home", *notes])
    # Two of them shot: every page goes through the same steps, and a full-page PNG of each
    # long note was most of this test's time.
    written = shoot(browser, site, tmp_path, only={"home", "fixture-versions"})
    assert sorted(p.stem for p in written) == ["fixture-versions", "home"]
    for png in written:
        data = png.read_bytes()
        width, height = struct.unpack(">II", data[16:24])  # the PNG header's IHDR
        assert width == 1280 and height > 900, (png.name, width, height)
