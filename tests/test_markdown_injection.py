"""Issue 31, class 3: Markdown is markup too. Every data-derived string is escaped for the
context it lands in (phase.base.escaping: Markdown by default in every template, URLs through
`safe_url`, Vega specs through `vega_safe`), and a built page may hold no event-handler
attribute and no javascript: URL (the build refuses such a page).

The site test plants Markdown and HTML attacks in every field of two campaigns that reaches a
page (host class and name, CPU, prompt names, model name, sensor names and reasons, campaign
id) and scans every built page, notes, data pages, the hosts pages and the home page alike."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from factories import make_model, replaced, write_results
from test_publish_inputs import REPO, cpu_results

from phase.base.errors import PhaseError
from phase.base.escaping import (
    UnsafeUrl,
    active_markup,
    markdown_safe,
    safe_url,
    vega_safe,
)
from phase.publish.site.build import SitePaths, build_site
from phase.results import UnavailableBackend

ATTACKS = [
    "[x](javascript:alert(1))",
    "{: onmouseover=\"alert(1)\" }",
    "x {: #id onclick=alert(1) }",
    "<img src=x onerror=alert(1)>",
    "![i](javascript:alert(1))",
    "<javascript:alert(1)>",
    "[x][r]\n\n[r]: javascript:alert(1)".replace("\n", " "),
    "&#106;avascript:alert(1)",
    "\" onmouseover=\"alert(1)",
    "' onfocus='alert(1)' autofocus='",
    "<svg onload=alert(1)>",
    "*[x]: javascript:alert(1)",
]


def _campaign(name: str, day: int, attack: list[str]) -> object:
    """A complete campaign whose every page-bound string field holds an attack."""
    base = cpu_results()
    prompt = attack[0]
    runs = []
    for r in base.runs:
        p = prompt if r.prompt == "code" else r.prompt
        runs.append(replaced(r, prompt=p, id=f"r{r.repeat}-{p}-{r.strategy}"))
    refs = [replaced(ref, prompt=prompt if ref.prompt == "code" else ref.prompt)
            for ref in base.references]
    config = replaced(base.config, prompts=[
        replaced(p, name=prompt) if p.name == "code" else p for p in base.config.prompts])
    return replaced(
        base, id=f"{name}", runs=runs, references=refs, config=config,
        created=base.created - timedelta(days=day),  # before its runs, as a real file is
        provenance=replaced(base.provenance, host_class=attack[1], hostname=attack[2],
                            cpu_model=attack[3], gpus=[attack[4]]),
        models=[make_model(name=attack[5], quant=attack[6])],
        sensors_unavailable=[UnavailableBackend(backend="rapl", reason=attack[7]),
                             UnavailableBackend(backend="nvml", reason=attack[8])],
        note=None,
    )


def _build(tmp_path: Path, rotation: int) -> SitePaths:
    for d in ("results", "notes"):
        (tmp_path / "in" / d).mkdir(parents=True, exist_ok=True)
    paths = SitePaths.default(REPO, results_dir=tmp_path / "in/results",
                              notes_dir=tmp_path / "in/notes", docs_dir=tmp_path / "docs",
                              site_dir=tmp_path / "site", published_dir=tmp_path / "published")
    attacks = ATTACKS[rotation:] + ATTACKS[:rotation]
    for i, day in enumerate((1, 2)):
        write_results(_campaign(f"speculative-hostile-{i}", day, attacks[i:] + attacks[:i]),
                      paths.results_dir / f"speculative-hostile-{i}.json")
    # The two campaigns name different models (hostile names): the pages then state every
    # difference between their builds, and that statement must be escaped too.
    paths = replace(paths, allow_mixed_builds=True)
    build_site(paths)
    return paths


@pytest.mark.slow
@pytest.mark.parametrize("rotation", [0, 5])
def test_no_built_page_holds_an_event_handler_or_a_script_url(tmp_path: Path,
                                                              rotation: int) -> None:
    paths = _build(tmp_path, rotation)
    pages = sorted(paths.site_dir.rglob("*.html"))
    assert len(pages) > 8
    hostile = [p for p in pages if "alert(1)" in p.read_text()]
    assert hostile, "the attacks did not reach any page: the test would prove nothing"
    found = {str(p.relative_to(paths.site_dir)): active_markup(p.read_text()) for p in pages}
    assert not {k: v for k, v in found.items() if v}
    # The hosts page and a generated note's title show the text, not a link.
    hosts = (paths.site_dir / "hosts" / "speculative.html").read_text()
    assert "javascript:alert(1)" in hosts and 'href="javascript' not in hosts.lower()


@pytest.mark.slow
def test_the_build_refuses_a_page_with_an_event_handler(tmp_path: Path) -> None:
    """Deny in the output, whatever produced it: here an authored note's raw HTML."""
    paths = _build(tmp_path / "a", 0)
    note = paths.notes_dir / "2026-03-raw-html.md"
    note.write_text("---\ntitle: Raw\ndate: 2026-03-05\nfinding: none.\nreproduce: make\n"
                    "versions:\n  - version: 1\n    date: 2026-03-05\n"
                    "    results: [speculative-hostile-0.json]\n    draft: true\nerrata: []\n"
                    "---\n\n<div onclick=\"alert(1)\">hi</div>\n")
    with pytest.raises(PhaseError, match="event handler or a script URL"):
        build_site(paths)


@pytest.mark.parametrize("url", ["javascript:alert(1)", " JavaScript:alert(1)",
                                 "java\tscript:alert(1)", "\x01javascript:x", "vbscript:x",
                                 "data:text/html,<script>x</script>", "file:///etc/passwd"])
def test_safe_url_refuses_script_and_other_schemes(url: str) -> None:
    with pytest.raises(UnsafeUrl):
        safe_url(url)


def test_safe_url_keeps_relative_and_web_links() -> None:
    assert safe_url("../raw/x_y.html#r0-code") == "../raw/x_y.html#r0-code"
    assert safe_url("https://example.org/a b") == "https://example.org/a%20b"
    assert safe_url('x.html"onclick=') == "x.html&#34;onclick="


@pytest.mark.parametrize("attack", ATTACKS)
def test_markdown_safe_leaves_no_active_syntax(attack: str) -> None:
    out = str(markdown_safe(attack))
    assert not re.search(r"[\[\]{}<>\\]", out), out
    assert "&" not in out.replace("&#", "").replace("&lt;", "").replace("&gt;", "") \
        .replace("&amp;", "").replace("&quot;", "")


def test_vega_specs_hold_no_svg_breaking_character_and_no_script_url() -> None:
    spec = {"data": {"values": [{"prompt": "a\x00b\ufffe", "href": "javascript:alert(1)"}]},
            "title": "t\x08"}
    clean = json.dumps(vega_safe(spec))
    assert "\\u0000" not in clean and "\\b" not in clean and "\\ufffe" not in clean
    assert '"javascript:' not in clean


def test_a_chart_spec_with_hostile_strings_still_draws(tmp_path: Path) -> None:
    """The Vega context end to end: a NUL that slipped into a spec is drawn, not an abort."""
    from phase.publish.charts.spec import render_png

    spec = {"data": {"values": [{"a": "x\u0000<script>", "b": 1}]}, "mark": "bar",
            "encoding": {"x": {"field": "a", "type": "nominal"},
                         "y": {"field": "b", "type": "quantitative"}}}
    assert render_png(spec).startswith(b"\x89PNG")
