"""Conclusions computed from declared rules (phase.analysis.rules): each rule's verdict at and
around its thresholds on summaries constructed from a committed campaign's own conditions,
the verdict the committed memory-bound campaign gets from the thresholds its experiment file
declares, and the note whose title is the rule's outcome."""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from phase.analysis import summarize
from phase.analysis.figures import memory_value
from phase.analysis.memory import MemoryView, memory_views
from phase.analysis.rules import (
    NO,
    PARTLY,
    UNRESOLVED,
    YES,
    BeatsPlain,
    MemoryBound,
    Verdict,
    combine,
)
from phase.analysis.rules.outcome import Estimate
from phase.campaign import load_experiment
from phase.results import FigureInterval, ResultsFile, SummaryRow, load_raw
from phase.validate import validate_results

REPO = Path(__file__).resolve().parent.parent
MEMORY = REPO / "results" / "memory_bound-x86_64-2c-2026-12-03.json"
SPECULATIVE = REPO / "results" / "speculative-x86_64-2c-2026-11-30-2.json"
sys.path.insert(0, str(REPO))  # the experiment files import phase as a checkout would


def _load(path: Path) -> tuple[ResultsFile, list[SummaryRow]]:
    raw = load_raw(path)
    return raw, summarize(raw, validate_results(raw, path.name), path.name).rows


@pytest.fixture(scope="module")
def memory() -> tuple[ResultsFile, list[SummaryRow]]:
    return _load(MEMORY)


@pytest.fixture(scope="module")
def speculative() -> tuple[ResultsFile, list[SummaryRow]]:
    return _load(SPECULATIVE)


@pytest.mark.parametrize(("parts", "whole"), [
    ([YES, YES], YES), ([NO, NO], NO), ([UNRESOLVED, UNRESOLVED], UNRESOLVED), ([], UNRESOLVED),
    ([YES, NO], PARTLY), ([YES, UNRESOLVED], PARTLY), ([PARTLY, NO], PARTLY),
    ([PARTLY, PARTLY], PARTLY), ([NO, UNRESOLVED], NO), ([YES], YES),
])
def test_parts_combine_into_a_verdict(parts: list[Verdict], whole: Verdict) -> None:
    assert combine(parts) == whole


def test_an_estimate_is_decided_only_where_its_interval_is_wholly_on_one_side() -> None:
    assert Estimate(0.6, 0.6, 0.7, 10).at_least(0.6) == YES  # at the threshold counts
    assert Estimate(0.59, 0.55, 0.5999, 10).at_least(0.6) == NO
    assert Estimate(0.6, 0.59, 0.61, 10).at_least(0.6) == UNRESOLVED
    assert Estimate(1.0, 0.9, 1.1, 10).against_band(0.9, 1.1) == YES  # ends included
    assert Estimate(1.0, 0.89, 1.1, 10).against_band(0.9, 1.1) == UNRESOLVED
    assert Estimate(1.2, 1.1001, 1.3, 10).against_band(0.9, 1.1) == NO
    assert Estimate(0.7, 0.6, 0.8999, 10).against_band(0.9, 1.1) == NO
    assert Estimate(1.0, None, None, 3).against_band(0.9, 1.1) == UNRESOLVED
    assert Estimate(1.0, None, None, 3).at_least(0.5) == UNRESOLVED


# --- memory-bound: constructed summaries over the committed campaign's own conditions ----

RULE = MemoryBound(share=0.6, slope_band=0.25, threads_band=0.10, fill_band=0.15)


def _plain(rows: list[SummaryRow]) -> list[SummaryRow]:
    return [r for r in rows if r.strategy == "plain"]


def _with_speed(raw: ResultsFile, rows: list[SummaryRow],
                speed: Callable[[MemoryView], float]) -> list[SummaryRow]:
    """The campaign's rows with each condition's tokens/s set by `speed` (its view: format,
    threads, fill, bytes per token and bandwidth as the campaign measured them)."""
    views = memory_views(raw, _plain(rows))
    return [v.row.model_copy(update={"tokens_per_s": speed(v)}) for v in views]


def _bound(share: float) -> Callable[[MemoryView], float]:
    """Tokens/s of a decode that streams `share` of the measured bandwidth: memory-bound."""
    def speed(v: MemoryView) -> float:
        assert v.bandwidth is not None
        return share * v.bandwidth.best_gb_s * 1e3 / (memory_value("mb_per_token", v) or 1.0)
    return speed


def test_a_memory_bound_campaign_is_memory_bound_at_the_share_threshold(
        memory: tuple[ResultsFile, list[SummaryRow]]) -> None:
    raw, rows = memory
    at = _with_speed(raw, rows, _bound(RULE.share))
    views = memory_views(raw, at)
    assert all(memory_value("bandwidth_share", v) == pytest.approx(RULE.share) for v in views)
    judged = RULE(raw, at)
    assert [p.verdict for p in judged.parts] == [YES, YES, YES, YES]
    assert judged.verdict == YES
    # Just below the threshold the same shape fails the share test alone: partly.
    below = RULE(raw, _with_speed(raw, rows, _bound(RULE.share * 0.999)))
    assert [p.verdict for p in below.parts] == [NO, YES, YES, YES]
    assert below.verdict == PARTLY


def test_shares_either_side_of_the_threshold_are_not_resolved(
        memory: tuple[ResultsFile, list[SummaryRow]]) -> None:
    raw, rows = memory
    # Half the conditions well above, half well below: the median's interval spans it.
    ids = {id(v.row) for i, v in enumerate(memory_views(raw, _plain(rows))) if i % 2}
    mixed = _with_speed(raw, rows, lambda v: _bound(0.9 if id(v.row) in ids else 0.3)(v))
    share = RULE(raw, mixed).parts[0]
    assert share.name == "share of bandwidth" and share.verdict == UNRESOLVED


def _power(k: float) -> Callable[[MemoryView], float]:
    """Tokens/s ∝ (bytes per token)^-k at every thread count and fill: a slope of exactly -k."""
    return lambda v: 1e4 * (memory_value("mb_per_token", v) or 1.0) ** -k


# At the band's edges exactly, floating point decides; Estimate's own test has the edges.
@pytest.mark.parametrize(("k", "verdict"), [(1.0, YES), (1.2499, YES), (0.7501, YES),
                                            (1.2501, NO), (0.7499, NO), (0.3, NO)])
def test_the_slope_test_at_and_around_its_band(memory: tuple[ResultsFile, list[SummaryRow]],
                                               k: float, verdict: Verdict) -> None:
    raw, rows = memory
    views = memory_views(raw, _with_speed(raw, rows, _power(k)))
    assert RULE.slope_part(views).verdict == verdict


def test_a_noisy_slope_near_the_band_is_not_resolved(
        memory: tuple[ResultsFile, list[SummaryRow]]) -> None:
    raw, rows = memory
    # Alternate formats 30% fast and slow around a slope of -0.75: the fit's interval spans
    # the band's edge.
    order = {label: i for i, label in enumerate(dict.fromkeys(
        v.label for v in memory_views(raw, _plain(rows))))}
    views = memory_views(raw, _with_speed(
        raw, rows, lambda v: _power(0.75)(v) * (1.3 if order[v.label] % 2 else 1 / 1.3)))
    part = RULE.slope_part(views)
    assert part.verdict == UNRESOLVED and "not resolved" in part.sentence


def _scaled(base: Callable[[MemoryView], float], factor: float,
            when: Callable[[MemoryView], bool]) -> Callable[[MemoryView], float]:
    return lambda v: base(v) * (factor if when(v) else 1.0)


@pytest.mark.parametrize(("factor", "verdict"), [(1.0, YES), (1.0999, YES), (0.9001, YES),
                                                 (1.1001, NO), (0.8999, NO), (2.0, NO)])
def test_the_threads_test_at_and_around_its_band(memory: tuple[ResultsFile, list[SummaryRow]],
                                                 factor: float, verdict: Verdict) -> None:
    raw, rows = memory
    # Memory-bound, then the higher thread count's speed scaled: its gain over the
    # bandwidth's is exactly `factor` in every condition.
    views = memory_views(raw, _with_speed(raw, rows, _scaled(
        _bound(0.5), factor, lambda v: v.threads == 2)))
    part = RULE.threads_part(views)
    assert part.verdict == verdict
    best = {t: max(b.best_gb_s for b in raw.bandwidth or [] if b.threads == t) for t in (1, 2)}
    assert f"rose {best[2] / best[1]:.2f}×" in part.sentence
    assert f"ran {best[2] / best[1] * factor:.2f}× as fast" in part.sentence


@pytest.mark.parametrize(("factor", "verdict"), [(1.0, YES), (1.1499, YES), (0.8501, YES),
                                                 (0.8499, NO), (0.5, NO)])
def test_the_fill_test_at_and_around_its_band(memory: tuple[ResultsFile, list[SummaryRow]],
                                              factor: float, verdict: Verdict) -> None:
    raw, rows = memory
    views = memory_views(raw, _with_speed(raw, rows, _scaled(
        _bound(0.5), factor, lambda v: v.fill > 0)))
    assert RULE.fill_part(views).verdict == verdict


def test_a_campaign_without_what_a_test_needs_leaves_it_unresolved(
        memory: tuple[ResultsFile, list[SummaryRow]]) -> None:
    raw, rows = memory
    one = [v for v in memory_views(raw, _plain(rows)) if v.threads == 1 and v.fill == 0][:3]
    assert RULE.threads_part(one).verdict == UNRESOLVED
    assert RULE.fill_part(one).verdict == UNRESOLVED
    assert RULE.share_part(one).verdict == UNRESOLVED  # three conditions: no 95% interval
    assert RULE.share_part([]).verdict == UNRESOLVED
    assert combine([RULE.share_part(one).verdict, RULE.fill_part(one).verdict]) == UNRESOLVED


def test_the_committed_memory_campaign_is_not_memory_bound_by_its_declared_rule(
        memory: tuple[ResultsFile, list[SummaryRow]]) -> None:
    raw, rows = memory
    question = load_experiment("memory_bound").question
    assert question is not None and isinstance(question.rule, MemoryBound)
    rule = question.rule
    outcome = question.answer(raw, rows)
    views = memory_views(raw, _plain(rows))
    shares = [s for v in views if (s := memory_value("bandwidth_share", v)) is not None]
    # Its numbers, recomputed: the median condition is far below the declared share, and a
    # filled context costs far more speed than its extra bytes.
    assert statistics.median(shares) < rule.share
    assert outcome.parts[0].verdict == NO
    fills = [(a, b) for a in views for b in views if a.label == b.label
             and a.threads == b.threads and a.fill == 0 and b.fill > 0]
    lost = statistics.median((b.row.tokens_per_s or 0) / (a.row.tokens_per_s or 1)
                             * (memory_value("mb_per_token", b) or 0)
                             / (memory_value("mb_per_token", a) or 1) for a, b in fills)
    assert lost < 1 - rule.fill_band
    assert outcome.parts[3].verdict == NO
    assert outcome.verdict != YES
    assert outcome.verdict == combine([p.verdict for p in outcome.parts])
    assert outcome.title == question.titles.of(outcome.verdict).replace(
        "{host_class}", "x86_64-2c")
    assert f"{statistics.median(shares) * 100:.0f}%" in outcome.parts[0].sentence


# --- per prompt: is a strategy faster than plain -----------------------------------------


def _with_ratios(rows: list[SummaryRow], ratios: dict[tuple[str, str], tuple[float, float]]
                 ) -> list[SummaryRow]:
    """Rows whose speed ratio to plain and its interval are set per (prompt, strategy); the
    others lose theirs (no interval: not resolved)."""
    out = []
    for r in rows:
        if r.strategy == "plain":
            out.append(r)
            continue
        low, high = ratios.get((r.prompt, r.strategy), (0.5, 2.0))
        centre = math.sqrt(low * high)
        out.append(r.model_copy(update={
            "speed_vs_plain": centre,
            "intervals": {"speed_vs_plain": FigureInterval(low=low, high=high, n=3)}}))
    return out


def test_a_strategy_resolved_faster_on_every_prompt_is_yes(
        speculative: tuple[ResultsFile, list[SummaryRow]]) -> None:
    raw, rows = speculative
    prompts = sorted({r.prompt for r in rows})
    judged = BeatsPlain()(raw, _with_ratios(rows, {(p, "ngram"): (1.001, 1.2) for p in prompts}))
    assert judged.verdict == YES and len(judged.parts) == len(prompts)
    assert all("ngram 1.10×" in p.sentence for p in judged.parts)


def test_an_interval_touching_one_is_not_resolved_and_some_prompts_make_partly(
        speculative: tuple[ResultsFile, list[SummaryRow]]) -> None:
    raw, rows = speculative
    first, *others = sorted({r.prompt for r in rows})
    touching = BeatsPlain()(raw, _with_ratios(rows, {(first, "ngram"): (1.0, 1.2)}))
    assert touching.verdict == UNRESOLVED
    some = BeatsPlain()(raw, _with_ratios(rows, {(first, "ngram"): (1.01, 1.2)}))
    assert some.verdict == PARTLY
    assert {p.name: p.verdict for p in some.parts} == {first: YES, **{o: UNRESOLVED
                                                                        for o in others}}
    assert first in some.summary and f"1 of {len(others) + 1}" in some.summary


def test_every_strategy_resolved_slower_is_no(
        speculative: tuple[ResultsFile, list[SummaryRow]]) -> None:
    raw, rows = speculative
    slower = {(r.prompt, r.strategy): (0.7, 0.99) for r in rows if r.strategy != "plain"}
    assert BeatsPlain()(raw, _with_ratios(rows, slower)).verdict == NO
    # A declared threshold above 1: 1.05 must be exceeded, not 1.
    faster = {k: (1.01, 1.04) for k in slower}
    assert BeatsPlain()(raw, _with_ratios(rows, faster)).verdict == YES
    assert BeatsPlain(against=1.05)(raw, _with_ratios(rows, faster)).verdict == NO


def test_the_committed_speculative_campaign_answers_from_its_intervals(
        speculative: tuple[ResultsFile, list[SummaryRow]]) -> None:
    from phase.analysis.figures import row_interval
    from phase.analysis.intervals import resolved

    raw, rows = speculative
    question = load_experiment("speculative").question
    assert question is not None
    outcome = question.answer(raw, rows)
    faster = {r.prompt for r in rows if r.strategy != "plain"
              and resolved(row_interval("speed_vs_plain", r))
              and (r.speed_vs_plain or 0) > 1}
    prompts = {r.prompt for r in rows}
    expected = YES if faster == prompts else PARTLY if faster else outcome.verdict
    assert outcome.verdict == expected
    assert {p.name for p in outcome.parts if p.verdict == YES} == faster


# --- the note: its title and findings are the outcome ------------------------------------


@pytest.mark.slow  # renders every page of a campaign (no mkdocs build)
def test_the_memory_note_is_titled_and_argued_by_its_rule(
        memory: tuple[ResultsFile, list[SummaryRow]], tmp_path: Path) -> None:
    import html

    from phase.publish.site.build import build_docs
    from phase.publish.site.paths import SitePaths

    raw, rows = memory
    question = load_experiment("memory_bound").question
    assert question is not None
    outcome = question.answer(raw, rows)
    (tmp_path / "results").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "results" / MEMORY.name).write_bytes(MEMORY.read_bytes())
    built = build_docs(SitePaths.default(
        REPO, results_dir=tmp_path / "results", notes_dir=tmp_path / "notes",
        docs_dir=tmp_path / "docs", site_dir=tmp_path / "html",
        published_dir=tmp_path / "published"))
    [note] = [n for n in built.notes if n.slug == "memory-bound-x86-64-2c"]
    assert note.meta.title == outcome.title
    page = html.unescape((tmp_path / "docs/notes/memory-bound-x86-64-2c/v1/index.md").read_text())
    [heading] = [line for line in page.splitlines() if line.startswith("# ")]
    assert heading == f"# {outcome.title}"
    assert f"**Finding:** {outcome.headline}\n" in page
    body = page.split("## What the numbers say", 1)[1].split("## Results", 1)[0]
    assert f"Verdict: **{outcome.verdict}**." in body and outcome.rule in body
    assert all(f"- {p.sentence}\n" in body for p in outcome.parts)
    # The paragraph after the findings follows the verdict: it never says the premise holds
    # where the rule did not find decode memory-bound.
    assert ("so the premise holds here" in body) == (outcome.verdict == YES)
    assert "is memory-bound on x86_64-2c" not in page.replace("not memory-bound", "")


@pytest.mark.slow  # two whole-site builds
def test_a_new_version_is_titled_by_its_rule_and_a_frozen_one_keeps_its_title(
        tmp_path: Path) -> None:
    from datetime import timedelta

    from factories import replaced, shifted, write_results
    from test_generated import _paths
    from test_interval_findings import _results

    from phase.publish.numbers.outcomes import question_of
    from phase.publish.site.build import build_site

    question = question_of("speculative")
    assert question is not None
    paths = _paths(tmp_path)
    # Two campaigns of one note: draft-4 resolved faster on code (partly), then one on prose
    # alone, where its interval includes 1 (not resolved).
    first = _results()
    day = timedelta(days=1)
    second = shifted(replaced(_results(prompts=("prose",)), id="intervals-2",
                              created=first.created + day), day.total_seconds())
    write_results(first, paths.results_dir / "speculative-a.json")
    build_site(paths)
    [slug] = [p.name for p in (paths.docs_dir / "notes").iterdir() if p.is_dir()]
    v1 = (paths.docs_dir / f"notes/{slug}/v1/index.md").read_text()
    write_results(second, paths.results_dir / "speculative-b.json")
    built = build_site(paths)
    outcomes = [question.answer(r, summarize(r, validate_results(r, name), name).rows)
                for r, name in ((first, "speculative-a.json"), (second, "speculative-b.json"))]
    assert [o.verdict for o in outcomes] == [PARTLY, UNRESOLVED]
    [note] = [n for n in built.notes if n.slug == slug]
    assert note.meta.title == outcomes[1].title != outcomes[0].title
    assert (paths.docs_dir / f"notes/{slug}/v1/index.md").read_text() == v1
    assert f"# {outcomes[0].title}\n" in v1
    assert f"# {outcomes[1].title}\n" in (paths.docs_dir / f"notes/{slug}/v2/index.md").read_text()
