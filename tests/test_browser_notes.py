"""A user's own campaigns become notes, seen in headless Chromium: real quick campaigns on the
small test model, `phase site`, and the pages a reader gets (issue: every campaign a note)."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from observers import StopAfter
from short_prompts import SPECULATIVE
from test_browser import CHROMIUM, _charts_drawn, _open, browser  # noqa: F401 (fixture)

from phase.campaign import (
    DEFAULT_PLAN,
    Destination,
    QuietObserver,
    SensorOptions,
    discover_sensors,
    prepare,
)
from phase.campaign.machine import host_class
from phase.cli import main
from phase.models.sources import TEST_MODEL
from phase.publish.archive.store import Archive
from phase.publish.notes.generated import note_slug
from phase.publish.site.build import serving
from phase.results import load_raw

pytestmark = [
    pytest.mark.browser,
    pytest.mark.model,
    pytest.mark.skipif(not CHROMIUM.exists() and os.environ.get("PHASE_REQUIRE_BROWSER") != "1",
                       reason="Debian chromium is not installed at /usr/bin/chromium "
                       "(apt-get install -y chromium)"),
]


# A cost profile of one pass per block, two blocks per pass size: the notes draw and predict
# from it as from a long one, and what these pages show of it is its presence, not its
# precision (the default, 3 blocks of at least 50 ms, was a third of this test's CPU).
SMALL_PROFILE = {"profile_blocks": 2, "profile_min_block_s": 0.0}


def _measure(out: Path) -> None:
    """A small campaign that is a study (a --quick one is a smoke test, never published): the
    quick plan's settings, with its purpose set to "study" by the caller."""
    experiment = SPECULATIVE  # with the short test prompts
    assert experiment.quick is not None
    plan = replace(experiment.quick, purpose="study", prompts=("code",),
                   strategies=("plain", "draft-2", "draft-4"), tokens=8, repeats=2,
                   cooldown_s=0.0, idle_window_s=0.0, disturbed_load=None, quiet_check_s=0.0,
                   **SMALL_PROFILE)
    campaign = prepare(experiment, plan, Destination(out), discover_sensors(
        SensorOptions(use=False)), QuietObserver())
    with campaign:
        campaign.run()
    assert load_raw(out).status == "complete"


def _interrupted(out: Path) -> None:
    """A campaign stopped after 2 of its 6 runs: a draft version. No cost profile (it was
    half this campaign's CPU): what the test reads of a draft is that it is one, and the
    two complete campaigns before it bring a profile each onto v1 and v2."""
    experiment = SPECULATIVE  # with the short test prompts
    plan = replace(DEFAULT_PLAN, target=TEST_MODEL, draft=TEST_MODEL, prompts=("code",),
                   strategies=("plain", "draft-2", "draft-4"), tokens=8, repeats=2,
                   cooldown_s=0.0, idle_window_s=0.0, disturbed_load=None,
                   quiet_check_s=0.0, profile=False)
    campaign = prepare(experiment, plan, Destination(out), discover_sensors(
        SensorOptions(use=False)), StopAfter(2))
    with pytest.raises(KeyboardInterrupt), campaign:
        campaign.run()
    assert load_raw(out).status == "interrupted"


def _site(base: Path) -> str:
    result = CliRunner().invoke(main, [
        "site", "--results-dir", str(base / "results"), "--notes-dir", str(base / "notes"),
        "--docs-dir", str(base / "docs"), "--site-dir", str(base / "site"),
        "--published-dir", str(base / "published")])
    assert result.exit_code == 0, result.output
    return result.stderr


def _article(path: Path) -> str:
    return re.search(r"<article .*?</article>", path.read_text(), re.S).group(0)


def test_own_campaigns_become_a_versioned_note(tmp_path: Path, browser) -> None:  # noqa: F811
    for d in ("results", "notes"):
        (tmp_path / d).mkdir()
    slug = note_slug("speculative", host_class(), False)
    note_dir = tmp_path / "site" / "notes" / slug

    _measure(tmp_path / "results" / "speculative-first.json")
    _site(tmp_path)
    with serving(tmp_path / "site") as base:
        context, page, watch = _open(browser, (base,))
        try:
            page.goto(base + "index.html")
            row = page.locator(f'tr.phase-note-entry[data-slug="{slug}"]')
            assert row.locator("td").nth(2).inner_text() == host_class()
            # The headline names the chosen condition and says no fresh runs confirmed it
            # (no confirmation campaign here), or that there is no ratio to headline.
            headline = row.locator(".phase-headline").inner_text()
            assert ((headline.startswith("Unconfirmed: ")
                    and "phase confirm speculative-first.json" in headline)
                    or headline.startswith("No headline")), headline
            row.locator("a.phase-note-link").click()
            page.wait_for_load_state("load")
            assert page.url.endswith(f"notes/{slug}/index.html")
            charts = _charts_drawn(page)
            drawn = [c for c in charts if c["drawn"] == "svg" and c["marks"] > 0]
            assert drawn, charts
            # (the rows' links; a note under the table may link to the data page's findings)
            links = page.eval_on_selector_all(".phase-table td.phase-runs a.phase-raw-link",
                                              "els => els.map(a => a.href)")
            assert len(links) == 3  # 3 conditions, each linked once to its runs
            page.locator(".phase-table td.phase-runs a.phase-raw-link").first.click()
            page.wait_for_load_state("load")
            fragment = page.url.split("#", 1)[1]
            assert page.evaluate("id => !!document.getElementById(id)", fragment)
            # It lands on the list of the condition's 2 runs, each linked to its run's row.
            runs = page.eval_on_selector_all(
                f"[id='{fragment}'] a.phase-group-run", "els => els.map(a => a.hash.slice(1))")
            assert len(runs) == 2
            assert all(page.evaluate("id => !!document.getElementById(id)", r) for r in runs)
        finally:
            context.close()
    assert watch.errors == [] and watch.outside == []
    v1_md = (tmp_path / "docs" / "notes" / slug / "v1" / "index.md").read_bytes()
    v1_article = _article(note_dir / "v1" / "index.html")

    _measure(tmp_path / "results" / "speculative-second.json")
    _site(tmp_path)
    assert (tmp_path / "docs" / "notes" / slug / "v1" / "index.md").read_bytes() == v1_md
    assert _article(note_dir / "v1" / "index.html") == v1_article
    assert Archive(tmp_path / "published").versions(slug) == [1, 2]

    _interrupted(tmp_path / "results" / "speculative-third.json")
    said = _site(tmp_path)
    assert (f"draft: speculative-third.json is incomplete (2 of 6 runs finished, status "
            f"interrupted): shown as v3 of note {slug}, not frozen, no headline") in said
    assert Archive(tmp_path / "published").versions(slug) == [1, 2]
    with serving(tmp_path / "site") as base:
        context, page, watch = _open(browser, (base,))
        try:
            page.goto(base + f"notes/{slug}/v2/index.html")
            assert "Version 2, " in page.inner_text(".phase-meta")
            assert any(c["drawn"] == "svg" for c in _charts_drawn(page))
            page.goto(base + f"notes/{slug}/index.html")
            text = page.inner_text("article")
            assert "Version 3 (latest)" in text
            assert "Incomplete campaign: a draft" in text
            assert "2 of 6 planned runs finished (status interrupted)" in text
            assert "Not compared with version 2" in text
            assert ("Finding: Draft: incomplete campaign (2 of 6 runs finished, status "
                    "interrupted); no headline until it completes.") in text
            page.goto(base + "index.html")
            row = page.locator(f'tr.phase-note-entry[data-slug="{slug}"]')
            assert "(draft)" in row.inner_text()
            headline = row.locator(".phase-headline").inner_text()
            assert not headline.startswith("No headline")  # v2's, never the draft's
        finally:
            context.close()
    assert watch.errors == [] and watch.outside == []
    v2_finding = (tmp_path / "docs" / "notes" / slug / "v2" / "index.md").read_text()
    assert headline in v2_finding.replace("&#39;", "'")
