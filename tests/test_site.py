"""The built site (a real `mkdocs build --strict`, once per session): pages, links, downloads."""

from __future__ import annotations

import hashlib
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from click.testing import CliRunner
from test_publish_inputs import CPU_FILE, GPU_FILE, SEED_SUMMARY, make_inputs, site_paths

from phase.base.errors import PhaseError
from phase.cli import main
from phase.publish.site.build import build_site, results_files, serving


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"] or "")
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "img", "script", "link"):
                self.refs.append(a[key] or "")


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_mkdocs_strict_build_produced_every_page(built_site) -> None:
    site = built_site.paths.site_dir
    expected = [
        "index.html", "about.html", "raw/index.html",
        "notes/speculative-decoding/index.html", "notes/speculative-decoding/v1/index.html",
        "notes/speculative-decoding-cpu/index.html",
        "notes/fixture-versions/index.html", "notes/fixture-versions/v1/index.html",
        "notes/fixture-versions/v2/index.html",
        "raw/speculative-fixture-gpu.html", "raw/speculative-fixture-cpu.html",
        "raw/summary-speculative-7b.html", f"raw/{GPU_FILE}", f"raw/{CPU_FILE}",
        f"raw/{SEED_SUMMARY}", "assets/vendor/vega.js", "assets/charts.js",
        "bench/index.html", "bench/2026-11-30-vm.json", "search/search_index.json",
        "search/search_index.js", "assets/shim/iframe-worker.js",
    ]
    missing = [p for p in expected if not (site / p).is_file()]
    assert missing == []
    assert not (site / "notes/_list.md").exists()  # the home snippet is not published
    # Nothing in the repository was written: every path of this build is temporary.
    assert built_site.paths.docs_dir != built_site.paths.docs_src


def test_only_pages_that_draw_a_chart_load_the_chart_scripts(built_site) -> None:
    """vega.js is 900 KB that a browser parses on every page naming it: the pages with a
    chart name it and charts.js (in that order), the others neither."""
    site = built_site.paths.site_dir
    charted, plain = [], []
    for page in sorted(site.rglob("*.html")):
        html = page.read_text()
        scripts = re.findall(r'<script src="[^"]*assets/(vendor/vega|charts)\.js"', html)
        if '<div class="phase-chart"' in html:
            charted.append(page)
            assert scripts == ["vendor/vega", "charts"], page
        else:
            plain.append(page)
            assert scripts == [], page
    assert len(charted) >= 10 and len(plain) >= 10


def test_home_page_lists_notes_with_date_finding_and_versions(built_site) -> None:
    home = (built_site.paths.site_dir / "index.html").read_text()
    seed_title = "Speculative decoding: a faster token is not always a cheaper one"
    for slug, title in [
        ("speculative-decoding", seed_title),
        ("fixture-versions", "Fixture note with two versions"),
    ]:
        assert f'href="notes/{slug}/index.html">{title}</a>' in home
        assert f'href="notes/{slug}/v1/index.html"' in home
    assert 'href="notes/fixture-versions/v2/index.html"' in home
    # The date of each note's latest version.
    assert "<td>2026-11-30</td>" in home and "<td>2026-02-01</td>" in home
    assert "Speculation saved chip energy only where most drafted tokens were kept" in home
    assert "<code>auto</code>" in home and "`auto`" not in home  # Markdown code, as HTML
    # Newest first, by the latest version's date (both notes' v2 are of 2026-11-30), then by
    # the first publication's (the CPU note's, 2026-11, is the newer).
    assert home.index("speculative-decoding-cpu/index.html") < home.index(
        "speculative-decoding/index.html") < home.index("fixture-versions/index.html")


def test_every_local_link_and_anchor_resolves(built_site) -> None:
    site = built_site.paths.site_dir
    pages = sorted(p for p in site.rglob("*.html") if p.name != "404.html")
    parsed = {p: _parse(p) for p in pages}
    broken = []
    checked_anchors = 0
    for page, links in parsed.items():
        for ref in links.refs:
            parts = urlsplit(ref)
            if parts.scheme or ref.startswith("//"):
                continue  # external links (material's footer credit); requests are tested live
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)} -> {ref}")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else _parse(target).ids
                checked_anchors += 1
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.relative_to(site)} -> {ref} (no such anchor)")
    assert broken == []
    assert checked_anchors > 50  # the raw-run links were really followed


def test_downloads_match_the_results_files_and_their_sha256(built_site) -> None:
    site = built_site.paths.site_dir
    for source in results_files(built_site.inputs.results_dir):
        copy = site / "raw" / source.name
        assert copy.read_bytes() == source.read_bytes(), source.name
        page = (site / "raw" / (source.stem + ".html")).read_text()
        assert hashlib.sha256(source.read_bytes()).hexdigest() in page
    # A raw file's derived summary (made at build time, never written into results/) is
    # offered on its page with its sha256.
    page = (site / "raw/speculative-fixture-gpu.html").read_text()
    derived = (site / "raw" / "summary-speculative-fixture-gpu.json").read_bytes()
    assert not (built_site.inputs.results_dir / "summary-speculative-fixture-gpu.json").exists()
    assert hashlib.sha256(derived).hexdigest() in page


def test_note_pages_carry_provenance_and_reproduce_command(built_site) -> None:
    site = built_site.paths.site_dir
    page = (site / "notes/fixture-versions/v1/index.html").read_text()
    assert "Provenance: speculative-fixture-gpu.json" in page
    for label in ("Machine", "Software", "Date", "Commit", "Energy sensors"):
        assert f"<th>{label}</th>" in page
    assert "0" * 64 in page  # the model's sha256 (the fixture's)
    assert "phase measure test" in page  # the recorded command line
    assert re.search(r'class="admonition example phase-reproduce"', page)
    seed = (site / "notes/speculative-decoding/index.html").read_text()
    assert "7B model quantised to Q4_0" in seed and "not in this repository" in seed
    box = seed.split('class="admonition example phase-reproduce"', 1)[1].split("</div>", 1)[0]
    assert "phase measure speculative --target PATH/TO/7B-Q4_0.gguf" in box


def test_site_pages_load_no_remote_resources(built_site) -> None:
    for page in built_site.paths.site_dir.rglob("*.html"):
        text = page.read_text()
        for tag in re.findall(r"<(?:script|link|img)\b[^>]*>", text):
            remote = re.search(r'(?:src|href)="(?:https?:)?//', tag)
            assert not remote, (page, tag)


def test_served_over_http(built_site) -> None:
    from urllib.request import urlopen

    with serving(built_site.paths.site_dir) as base:
        assert base.startswith("http://127.0.0.1:")
        with urlopen(base + "notes/speculative-decoding/index.html") as response:
            assert response.status == 200
            assert b"phase-chart" in response.read()


@pytest.mark.slow  # a whole site: mkdocs build
def test_strict_mode_fails_the_build_on_a_broken_link(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    note = inputs.notes_dir / "2026-01-fixture-versions.md"
    note.write_text(note.read_text() + "\nSee [the missing page](nope.md).\n")
    with pytest.raises(PhaseError, match=r"mkdocs build --strict failed: .*nope\.md"):
        build_site(site_paths(tmp_path, inputs))


def test_serve_needs_a_built_site(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["serve", "--site-dir", str(tmp_path / "nothing")])
    assert result.exit_code == 1
    assert "run `phase site` first" in result.output
