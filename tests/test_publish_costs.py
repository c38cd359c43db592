"""The cost model on a note page: template calls rendered against a results file with a
profile and auto runs (fixtures with chosen curves and traces), escaped, and explained where
the data is missing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cost_factories import make_profile
from factories import T0, make_results, make_run, write_results
from test_publish_inputs import XSS_PROMPT, landed_runs, site_paths

from phase.analysis.prediction import proposer_runs
from phase.costmodel import CostTable, cost_table
from phase.policy.ngram import MAX_CONTEXT
from phase.publish.markup.anchors import run_anchor
from phase.publish.site.build import build_docs
from phase.results import ResultsFile, Run, Step

TOKENS = 16
PROMPT_TOKENS = 12  # make_run's
FILE = "speculative-fixture-costs.json"
BARE = "speculative-fixture-bare.json"
NOTE = """---
title: Fixture note about costs
date: 2026-03-01
finding: The cost model on a page.
reproduce: make measure
versions:
  - version: 1
    date: 2026-03-01
    results: [{file}, {bare}]
    changes: First version.
errata: []
---

{{{{ cost_curve(file="{file}") }}}}

{{{{ cost_prediction() }}}}

{{{{ break_even(file="{file}") }}}}

{{{{ auto_choices() }}}}
"""


def _steps(pattern: list[tuple[int, int]], verify_ms: float, proposer: str | None,
           table: CostTable | None = None, generated: int = 0) -> list[Step]:
    """Steps as a loop records them; `auto`'s (with `proposer`) carry the decision fields it
    would have written at `table`'s costs, which the decisions rule replays."""
    steps = []
    for p, a in pattern:
        fields: dict[str, float | int | str | None] = {"proposer": proposer}
        if proposer is not None and table is not None:
            tokens = 1.0 if p == 0 else (p + 2) / 2  # strictly between 1 and p + 1
            fields |= {"expected_tokens": tokens,
                       "expected_gain": tokens * table.plain() / (table.lookup
                                                                  + table.target(p + 1)),
                       "match_tokens": 0 if p == 0 else min(MAX_CONTEXT,
                                                            PROMPT_TOKENS + generated - 1)}
        steps.append(Step(proposed=p, accepted=a, propose_ms=0.05, verify_ms=verify_ms,
                          **fields))
        generated += a + 1
    return steps


def _run(prompt: str, strategy: str, repeat: int, order: int, steps: list[Step],
         k: int | None) -> Run:
    drafted = sum(s.proposed for s in steps)
    accepted = sum(s.accepted for s in steps)
    decode_s = sum(s.verify_ms + s.propose_ms for s in steps) / 1e3
    # One run after another, in their order, as one host runs them.
    return make_run(prompt=prompt, strategy=strategy, repeat=repeat, order=order, k=k,
                    started_unix_s=T0 + 2.0 * order,
                    tokens=TOKENS, decode_s=decode_s, steps=len(steps), drafted=drafted,
                    accepted=accepted, acceptance=accepted / drafted if drafted else None,
                    acceptance_reason=None if drafted else "nothing proposed", trace=steps)


def costs_results() -> ResultsFile:
    """plain, ngram and auto on two prompts (one named with markup), with a profile whose
    verifications cost 5 ms a row over a 10 ms base; runs take what the profile says, except
    the XSS prompt's ngram runs, whose verifications took twice as long."""
    profile = make_profile(lambda b: 10.0 + 5.0 * b)
    table = cost_table(profile, PROMPT_TOKENS + TOKENS // 2)
    runs = []
    order = 0
    # In the schedule's order (unshuffled: repeat by repeat, prompt by prompt, strategy by
    # strategy), as the validator's consistency rule expects.
    for repeat in range(2):
        for prompt in ("code", XSS_PROMPT):
            for strategy in ("plain", "ngram", "auto"):
                if strategy == "plain":
                    steps = _steps([(0, 0)] * TOKENS, 15.0, None)
                elif strategy == "ngram":
                    # The rejected proposal first: at the end, fewer tokens are left than
                    # it proposes.
                    slow = 2.0 if prompt == XSS_PROMPT else 1.0
                    steps = _steps([(4, 0)] + [(4, 4)] * 3, 35.0 * slow, None)
                else:
                    steps = (_steps([(0, 0)] * 6, 15.0, "none", table)
                             + _steps([(4, 4)] * 2, 35.0, "ngram", table, generated=6))
                k = {"plain": None, "ngram": 4, "auto": 16}[strategy]
                runs.append(_run(prompt, strategy, repeat, order, steps, k))
                order += 1
    return make_results(runs, sensors=[], prompts=["code", XSS_PROMPT],
                        strategies=["plain", "ngram", "auto"], repeats=2, tokens=TOKENS,
                        id="fixture-costs", experiment="speculative", profile=profile)


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs dir of a build of the cost fixture note."""
    base = tmp_path_factory.mktemp("costs")
    results, notes = base / "results", base / "notes"
    results.mkdir()
    notes.mkdir()
    write_results(costs_results(), results / FILE)
    write_results(make_results(sensors=[], id="fixture-bare", experiment="speculative"),
                  results / BARE)
    (notes / "2026-03-fixture-costs.md").write_text(NOTE.format(file=FILE, bare=BARE))
    paths = site_paths(base, type("I", (), {"results_dir": results, "notes_dir": notes})())
    build_docs(paths)
    return paths.docs_dir


@pytest.fixture(scope="module")
def page(docs: Path) -> str:
    return (docs / "notes/fixture-costs/index.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_every_cost_section_renders_with_its_chart(page: str) -> None:
    for kind in ("cost_curve", "prediction", "break_even", "auto_choices"):
        assert f'data-kind="{kind}" data-dataset="{FILE}"' in page
    for kind in ("cost_curve", "cost_prediction", "break_even", "best_k", "auto_choices"):
        assert f'data-kind="{kind}"' in page


def test_the_profile_says_what_it_cost(page: str) -> None:
    assert "Profiling took 1.0 s, " in page
    assert "of the campaign&#39;s wall time." in page or "of the campaign's wall time." in page


def test_prediction_rows_show_the_miss_and_its_term(page: str) -> None:
    # code x ngram took exactly what the profile says; the XSS prompt's verifications took
    # twice as long, so the model expected them about twice as fast.
    assert "5 of 6 conditions predicted within 10%" in page
    assert "target passes: predicted 0.14 s per run, measured 0.28 s" in page
    # the plain runs read a steady host (x1.00), so the drift does not explain the miss
    assert "ran at x1.00 the profile" in page and "at that pace the prediction is off by" in page
    assert ">x1.00<" in page and "Error at that pace" in page


def test_auto_choices_are_listed(page: str) -> None:
    assert 'data-value="0.75"' in page  # 6 of 8 auto steps were plain steps
    assert 'data-value="0.25"' in page


def test_text_from_data_is_escaped(page: str) -> None:
    assert XSS_PROMPT not in page
    assert "&lt;script&gt;" in page


def test_a_file_without_a_profile_says_so(page: str) -> None:
    assert f'data-kind="prediction" data-dataset="{BARE}"' in page
    assert "this results file has no cost profile to predict from" in page
    assert "this results file has no auto runs" in page


def test_cost_charts_and_the_notes_own_share_the_pages_files_and_ids(docs: Path,
                                                                     page: str) -> None:
    """The cost sections and the appended charts draw into one set of page assets: element
    ids count every chart on the page once, across both, and every PNG fallback is written
    where the page points."""
    charts = re.findall(r'<div class="(phase-chart|phase-chart-missing)"(?: id="([^"]+)")?'
                        r' data-kind="([a-z_]+)"', page)
    kinds = [kind for _, _, kind in charts]
    assert "cost_curve" in kinds and "cost_per_token" in kinds  # both callers drew
    drawn = [(number, element_id, kind) for number, (cls, element_id, kind)
             in enumerate(charts, start=1) if cls == "phase-chart"]
    assert drawn and all(element_id == f"chart-{number}-{kind}"
                         for number, element_id, kind in drawn)
    pngs = re.findall(r'class="phase-chart-fallback" src="([^"]+)"', page)
    assert pngs and all(src.startswith("v1/") for src in pngs)
    missing = [src for src in pngs if not (docs / "notes/fixture-costs" / src).is_file()]
    assert missing == []


def _cost_tables(page: str) -> dict[str, list[tuple[list[str], list[str]]]]:
    """Each cost table's rows by kind: (the cells' texts, the source links' hrefs)."""
    out: dict[str, list[tuple[list[str], list[str]]]] = {}
    for kind, body in re.findall(r'<div class="phase-table phase-cost-table" data-kind="(\w+)" '
                                 rf'data-dataset="{re.escape(FILE)}">(.*?)</div>', page, re.S):
        rows = []
        for tr in re.findall(r"<tr>(.*?)</tr>", body.split("<tbody>", 1)[1], re.S):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
            rows.append((cells[:-1], re.findall(r'href="([^"]+)"', cells[-1])))
        out.setdefault(kind, []).extend(rows)
    return out


def test_every_cost_row_links_to_its_source_on_the_data_page(docs: Path, page: str) -> None:
    """Each row of each cost table names what it came from, and every link lands on an
    anchor of the file's data page: the profile's blocks, or the runs it counts."""
    raw = (docs / f"raw/{Path(FILE).stem}.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="([^"]+)"', raw))
    results = costs_results()
    tables = _cost_tables(page)
    assert set(tables) == {"cost_prediction", "break_even", "best_k", "auto_choices"}
    for kind, rows in tables.items():
        for cells, links in rows:
            assert links, f"{kind} row {cells} links nowhere"
            for href in links:
                target, _, anchor = href.partition("#")
                assert target.endswith(f"raw/{Path(FILE).stem}.html"), href
                assert anchor in anchors, f"{kind}: {href} has no anchor on the data page"
    # The pass costs are not a table per fill on the note: it links once to each profiled
    # fill on the data page, which lists every pass size with its blocks.
    (curve,) = re.findall(r'<div class="phase-cost-profile" data-kind="cost_curve" '
                          rf'data-dataset="{re.escape(FILE)}">(.*?)</div>', page, re.S)
    fills = re.findall(r'href="([^"]+)"', curve)
    assert len(fills) == len(results.profile.points) if results.profile else False
    for index, href in enumerate(fills):
        target, _, anchor = href.partition("#")
        assert target.endswith(f"raw/{Path(FILE).stem}.html") and anchor == f"profile-{index}"
        assert anchor in anchors
    # A prediction links to exactly its condition's runs, and the fill they were priced at.
    ids = {(r.prompt, r.strategy): sorted(run_anchor(x.id) for x in results.runs
                                          if (x.prompt, x.strategy) == (r.prompt, r.strategy))
           for r in results.runs}
    # Runs are linked once per row, to the data page's list of exactly those runs.
    note = docs / "notes/fixture-costs/index.md"

    def landed(links: list[str]) -> list[str]:
        runs = [h for h in links if "#profile-" not in h]
        assert len(runs) == 1, links
        return sorted(landed_runs(docs, note, runs))

    for cells, links in tables["cost_prediction"]:
        fragments = [h.partition("#")[2] for h in links]
        runs = landed(links)
        if cells[0] == "code":  # the other prompt's name is markup, escaped in the cell
            assert runs == ids[("code", cells[1])]
        assert len(runs) == 2 and "profile-0" in fragments
    # A best k links to the runs its acceptance pooled: the prompt's runs its proposer
    # stepped in (a fixed strategy of it, or auto where auto chose it).
    for cells, links in tables["best_k"]:
        if cells[0] == "code":
            assert landed(links) == sorted(run_anchor(r.id) for r in proposer_runs(
                results, "code", cells[1]))
    # auto's choices link to the prompt's auto runs and nothing else.
    for _cells, links in tables["auto_choices"]:
        runs = landed(links)
        autos = {run_anchor(r.id) for r in results.runs if r.strategy == "auto"}
        assert set(runs) <= autos and len(runs) == 2


def test_the_data_page_shows_the_profile_blocks(docs: Path) -> None:
    raw = (docs / f"raw/{Path(FILE).stem}.md").read_text(encoding="utf-8")
    profile = costs_results().profile
    assert profile is not None
    cost = profile.points[0].target[2]
    row = re.search(rf'<tr id="profile-0-target-b{cost.tokens}">(.*?)</tr>', raw, re.S)
    assert row is not None
    for ms, n in zip(cost.block_ms, cost.block_passes, strict=True):
        assert f"{ms:.3f} ms × {n}" in row.group(1)
