"""The built site in headless Chromium (Debian's /usr/bin/chromium driven by Playwright):
every chart drawn, no console errors, no request leaving the machine, raw-data links resolve,
over http://127.0.0.1 and from file://."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import pytest

from phase.publish.site import serving

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


def _open(browser, allowed: tuple[str, ...]):
    context = browser.new_context(service_workers="block")
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


def test_site_over_http(built_site, browser) -> None:
    site = built_site.paths.site_dir
    with serving(site) as base:
        context, page, watch = _open(browser, (base,))
        raw_links: set[str] = set()
        charts_seen = 0
        try:
            for rel in _pages(site):
                page.goto(base + rel, wait_until="load")
                charts = _charts_drawn(page)
                for c in charts:
                    assert c["drawn"] == "svg" and c["marks"] > 0, (rel, c)
                    assert c["fallbackHidden"], (rel, c)
                charts_seen += len(charts)
                raw_links.update(page.eval_on_selector_all(
                    "a.phase-raw-link", "els => els.map(a => a.href)"))
            # Each raw-data link opens a page holding the anchored run (or summary row).
            by_page: dict[str, set[str]] = {}
            for link in raw_links:
                url, fragment = urldefrag(link)
                by_page.setdefault(url, set()).add(fragment)
            for url, fragments in sorted(by_page.items()):
                response = page.goto(url)
                assert response is not None and response.ok, url
                missing = page.evaluate(
                    "ids => ids.filter(id => id && !document.getElementById(id))",
                    sorted(fragments))
                assert missing == [], url
        finally:
            context.close()
    assert charts_seen >= 10
    assert len(raw_links) > 50
    assert {urlsplit(u).path.rsplit("/", 1)[-1] for u in by_page} >= {
        "speculative-fixture-gpu.html", "speculative-fixture-cpu.html",
        "summary-speculative-7b.html"}
    assert watch.errors == []
    assert watch.outside == []


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
        # 18 conditions: 18 points; 14 with acceptance and a ratio, plus the break-even rule;
        # per k: 3 prompts x (line + 4 points + plain's rule), for speed and for energy.
        assert {c["kind"]: c["marks"] for c in charts} == {
            "energy_vs_speed": 18, "ratio_vs_acceptance": 15, "per_k": 36}
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


def test_escaped_markup_does_not_run(built_site, browser) -> None:
    site = built_site.paths.site_dir
    with serving(site) as base:
        context, page, watch = _open(browser, (base,))
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        try:
            page.goto(base + "raw/speculative-fixture-gpu.html")
            text = page.inner_text("body")
            assert "<script>alert('prompt')</script>" in text
            assert "before <script>alert('output')</script> after" in page.text_content(
                ".phase-outputs")
            page.goto(base + "notes/fixture-versions/v1/index.html")
            _charts_drawn(page)
            assert "<script>alert('prompt')</script>" in page.inner_text(".phase-table")
        finally:
            context.close()
    assert dialogs == []
    assert watch.errors == []


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
    assert images == [[True, False]] * 3
