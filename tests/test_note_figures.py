"""Every measured figure in a note comes from data: the sources hold none outside template
calls, and the calls render the figures the data gives (with n, range and baseline caveats)."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest
import yaml
from test_publish_inputs import REPO, note_results, parse_tables

from phase.analysis import spread
from phase.publish.notes.source import split_front_matter
from phase.results import load_raw
from phase.validate import RuleSettings

# Template calls, statements and comments are where figures may come from.
JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
CODE = re.compile(r"`[^`]*`")
LINK_TARGET = re.compile(r"\]\([^)]*\)")
# What a typed measured figure looks like: a percentage, a decimal, a range "a to b", or a
# number with a unit of time, energy, size, speed or a ratio ("3 times", "1.2×"). Model names
# (1.5B, Qwen2.5) and integers that configure a campaign (384 tokens, k = 16) do not match.
FIGURE = re.compile(r"""
    \d+(?:\.\d+)?\s*%
  | (?<![\w.])\d+\.\d+(?![\w.])
  | \b\d[\d,.]*\s+to\s+\d
  | \b\d[\d,]*(?:\.\d+)?\s*(?:ms|s|MB|GB|GiB|J|mJ|W|tokens/s|tok/s|times|x|×)(?![\w/])
""", re.X)


def typed_figures(text: str) -> list[str]:
    """Measured-looking figures in note text outside template calls, code and link targets."""
    plain = LINK_TARGET.sub("]", CODE.sub(" ", JINJA.sub(" ", text)))
    return [m.group(0) for m in FIGURE.finditer(plain)]


def _note_texts(path: Path) -> dict[str, str]:
    """The parts of a note a reader sees as prose: the finding and the body."""
    meta, body = split_front_matter(path.read_text(encoding="utf-8"), path)
    return {"finding": meta["finding"], "body": body}


NOTES = sorted((REPO / "phase" / "notes").glob("*.md"))


@pytest.mark.parametrize("note", NOTES, ids=lambda p: p.name)
def test_note_sources_type_no_measured_figure(note: Path) -> None:
    found = {part: typed_figures(text) for part, text in _note_texts(note).items()}
    assert found == {"finding": [], "body": []}, (
        f"{note.name} types measured figures by hand; render them with value(), value_range(), "
        "step() or bench() so that they follow the data")


@pytest.mark.parametrize("typed", [
    "every strategy was slower (0.23 to 0.82 times its speed)",
    "spent 1.2 to 4.4 times its CPU time",
    "even where 90% of drafted tokens were kept",
    "llama-bench reached 39.9 tokens/s",
    "the two best logits differ by 0.08",
    "at 491 MB against 1,117 MB of weights",
    "a median 24 ms per drafted token",
])
def test_the_check_catches_a_typed_figure(typed: str) -> None:
    assert typed_figures(typed), typed
    # ...and not the same figure rendered by a call, nor configuration and model names.
    assert typed_figures('ran at {{ value("code", "plain", "tokens_per_s") }} tokens/s') == []
    assert typed_figures("Qwen2.5-Coder-1.5B with a 0.5B draft, 384 tokens, k = 16") == []


def _latest(built_site, slug: str) -> str:
    return (built_site.paths.docs_dir / f"notes/{slug}/index.md").read_text(encoding="utf-8")


def _figures(text: str) -> list[tuple[str, str]]:
    """(title, shown text) of every figure span a page renders."""
    return re.findall(r'<span class="phase-figure" title="([^"]*)">([^<]*)</span>', text)


def test_cpu_note_finding_is_computed_from_its_table(built_site) -> None:
    (measured,) = note_results("2026-11-speculative-decoding-cpu.md")
    page = _latest(built_site, "speculative-decoding-cpu")
    rows = parse_tables(page)[measured]
    drafts = [r for (p, s), r in rows.items() if s.startswith("draft-")]
    speed = sorted(float(r.cells["speed_vs_plain"].value) for r in drafts)
    cpu = sorted(float(r.cells["cpu_vs_plain"].value) for r in drafts)
    # Copying and auto on edit are stated with their figure only where resolved; a ratio whose
    # interval holds 1.0 never is (the correction can only leave fewer resolved).
    cells = {s: rows[("edit", s)].cells["speed_vs_plain"] for s in ("ngram", "auto")}
    stated = [s for s, c in cells.items() if float(c.low) > 1 or float(c.high) < 1]
    finding = page.split("**Finding:**", 1)[1].split("\n", 1)[0]
    shown = [text for _, text in _figures(finding)]
    # The ratios it states as findings carry their 95% interval (from version 3 on).
    assert [text.split(" (95% interval ")[0] for text in shown] == [
        f"{speed[0]:.2f}", f"{speed[-1]:.2f}", f"{cpu[0]:.2f}", f"{cpu[-1]:.2f}",
        *(f"{float(cells[s].value):.2f}" for s in stated)]
    for strategy, text in zip(stated, shown[4:], strict=True):
        assert text.endswith(f" (95% interval {cells[strategy].interval})")
    if len(stated) < 2:
        assert "not resolved from plain decoding" in finding
    # Each figure says what it is and how many runs lie behind it.
    titles = [title for title, _ in _figures(finding)]
    assert all(re.search(r"per-round ratios, \d+ runs, lowest", t) for t in titles), titles
    assert titles[0].startswith("lowest of 12 conditions; speed_vs_plain of prose × draft-16")


def test_home_page_finding_is_the_rendered_one_and_its_marks_resolve(built_site) -> None:
    home = (built_site.paths.site_dir / "index.html").read_text(encoding="utf-8")
    assert "value_range(" not in home and "{{" not in home
    assert 'class="phase-figure"' in home
    # The unstable-baseline marks of the home page link to the note's own paragraph.
    marks = re.findall(r'class="phase-unstable-mark" href="([^"]+)"', home)
    assert marks and set(marks) == {"notes/speculative-decoding-cpu/index.html#unstable-baselines"}
    note = (built_site.paths.site_dir / "notes/speculative-decoding-cpu/index.html").read_text()
    assert 'id="unstable-baselines"' in note


def test_every_ratio_on_an_unstable_baseline_says_so_in_table_and_prose(built_site) -> None:
    (measured,) = note_results("2026-11-speculative-decoding-cpu.md")
    page = _latest(built_site, "speculative-decoding-cpu")
    unstable_plain = {p for (p, s), r in parse_tables(page)[measured].items()
                      if s == "plain" and r.cls == "phase-unstable"}
    # The prompts whose plain runs spread more than the variance rule allows (v2: code's).
    raw = load_raw(REPO / "results" / measured)
    expected = {p for p in {r.prompt for r in raw.runs}
                if (sp := spread([r.tokens_per_s for r in raw.runs
                                  if r.prompt == p and r.strategy == "plain"])) is not None
                and sp > RuleSettings().variance_max}
    assert unstable_plain == expected and expected
    # In the table: every ratio cell of those prompts carries the mark, which links to the
    # one note on the page that gives the reason (said once, not in every cell's title).
    rows = parse_tables(page)[measured]
    for prompt in unstable_plain:
        for ratio in ("speed_vs_plain", "cpu_vs_plain"):
            cell = rows[(prompt, "draft-2")].cells[ratio]
            found = re.fullmatch(r"[0-9.]+†", cell.text) and cell.marks
            assert found and len(cell.marks) == 1, (prompt, ratio, cell)
            anchor = cell.marks[0].removeprefix("#")
            note = re.search(rf'<p class="phase-table-note" id="{anchor}"><sup>\d+</sup> '
                             r'† Plain decoding was itself unstable on ([^<]*)</p>', page)
            assert note and f"{prompt} (tokens/s spread" in note[1], (prompt, ratio)
    # In the prose: a ratio figure is followed by its mark where its baseline is unstable.
    body = page.split("## What the numbers say", 1)[1].split("## Validation", 1)[0]
    ratios = re.findall(r'title="(?:(?:lowest|highest)[^"]*; )?(?:speed|cpu)_vs_plain of '
                        r'(\w+) [^"]*">[^<]*</span>(<a class="phase-unstable-mark")?', body)
    assert ratios
    # Marked exactly where the ratio's own prompt had an unstable baseline.
    assert all(bool(mark) == (prompt in expected) for prompt, mark in ratios), ratios
    assert page.count('id="unstable-baselines"') == 1
    assert "Plain decoding, the baseline of every ratio to plain, was itself unstable" in page


def test_step_figures_are_medians_of_the_trace(built_site) -> None:
    from phase.results import load

    (measured,) = note_results("2026-11-speculative-decoding-cpu.md")
    raw = load(REPO / "results" / measured)
    drafted = [s.propose_ms / s.proposed for r in raw.runs if r.strategy.startswith("draft")
               for s in r.trace if s.proposed > 0]
    plain = [s.verify_ms for r in raw.runs if r.strategy == "plain" for s in r.trace]
    page = _latest(built_site, "speculative-decoding-cpu")
    shown = {title.split(":")[0]: (title, text) for title, text in _figures(page)
             if title.startswith(("propose_ms_per_drafted", "plain_ms_per_token"))}
    title, text = shown["propose_ms_per_drafted"]
    assert text == f"{statistics.median(drafted):.1f}" and f"over {len(drafted)} steps" in title
    title, text = shown["plain_ms_per_token"]
    assert text == f"{statistics.median(plain):.1f}" and f"over {len(plain)} steps" in title


def test_bench_figures_come_from_the_benchmark_file(built_site) -> None:
    import json

    data = json.loads((REPO / "bench/results/2026-11-30-vm.json").read_text())
    row = next(r for s in data["sections"] for r in s["rows"]
               if r["item"] == "plain tg128" and r["reference_name"] == "llama-bench")
    # Version 1 cites llama-bench from the benchmark file of its own machine (version 2 ran
    # on another machine, with no benchmark run there to cite).
    page = (built_site.paths.docs_dir / "notes/speculative-decoding-cpu/v1/index.md").read_text(
        encoding="utf-8")
    links = re.findall(r'<a class="phase-figure phase-bench-figure" href="([^"]+)" '
                       r'title="([^"]+)">([^<]+)</a>', page)
    assert [text for _, _, text in links] == [f"{row['reference']:.1f}", f"{row['phase']:.1f}"]
    assert all(href.startswith("../../../bench/index.html#bench-plain-tg128")
               for href, _, _ in links)
    assert "median of 3 alternating repeats" in links[0][1]
    assert "differ by 0.08" not in page  # a logit gap no results file records is not quoted


def test_seed_note_finding_follows_its_table(built_site) -> None:
    page = _latest(built_site, "speculative-decoding")
    rows = parse_tables(page)["summary-speculative-7b.json"]
    savers = [float(r.cells["acceptance"].value) for r in rows.values()
              if r.cells["ratio"].value is not None and float(r.cells["ratio"].value) < 1
              and r.cells["acceptance"].value is not None]
    finding = page.split("**Finding:**", 1)[1].split("\n", 1)[0]
    shown = [text for _, text in _figures(finding)]
    assert shown[0] == f"{min(savers) * 100:.0f}%"
    assert shown[-1] == rows[("edit", "ngram")].cells["ratio"].text
    # Summary-only figures say that no per-run spread was published.
    assert all("per-run spread not published" in t for t, _ in _figures(finding))


def test_front_matter_is_yaml_with_template_calls() -> None:
    # The finding stays a YAML string; only rendering turns its calls into figures.
    text = (REPO / "phase/notes/2026-11-speculative-decoding-cpu.md").read_text()
    meta = yaml.safe_load(text.split("---", 2)[1])
    assert "value_range(" in meta["finding"]
