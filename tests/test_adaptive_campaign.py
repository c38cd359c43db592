"""Adaptive repeats for real: campaigns of the test model through llama.cpp, with extra rounds
after the planned repeats, a budget that stops them, and an interruption in the middle of one.

Real runs of 16 tokens spread by several percent run to run, so the targets here are chosen
to make the outcome certain: ±0.01% is never reached (every condition stays wide until the
budget stops the rounds), ±99% is reached after the planned repeats (ratios of two runs of
the same machine are nowhere near 100 times apart).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from observers import StopAfter
from short_prompts import SPECULATIVE

from phase.analysis import adaptive
from phase.campaign import DEFAULT_PLAN, QuietObserver, prepare
from phase.campaign.runner import Destination
from phase.campaign.sensing import SensorOptions, discover_sensors
from phase.models.sources import TEST_MODEL
from phase.results import ResultsFile, load_raw
from phase.validate import validate_results

pytestmark = pytest.mark.model

PLAN = replace(
    DEFAULT_PLAN, target=TEST_MODEL, draft=TEST_MODEL, prompts=("code",),
    strategies=("plain", "draft-2", "ngram"), tokens=16, repeats=2, cooldown_s=0.0,
    idle_window_s=0.0, threads=1, threads_batch=1, profile=False, disturbed_load=None,
    quiet_check_s=0.0, target_half_width=0.0001, extra_runs=6,
)
PLANNED = 1 * 3 * 2  # prompts x strategies x repeats




def _campaign(out: Path, plan: object = PLAN, observer: QuietObserver | None = None,
              resume: bool = False) -> ResultsFile:
    found = discover_sensors(SensorOptions(use=False))
    with prepare(SPECULATIVE, plan, Destination(out, resume=resume), found,
                 observer or QuietObserver()) as campaign:
        campaign.run()
    return load_raw(out)


def _clean(results: ResultsFile) -> None:
    report = validate_results(results, results.id)
    assert report.counts().get("blocking", 0) == 0, [f.message for f in report.findings]
    assert [f.message for f in report.findings if f.rule == "adaptive"] == []


def test_wide_conditions_get_rounds_until_the_run_budget_stops_them(tmp_path: Path) -> None:
    results = _campaign(tmp_path / "a.json")
    extra = [r for r in results.runs if r.repeat >= PLAN.repeats]
    rec = results.adaptive
    assert rec is not None and rec.stopped == "runs"
    # Every condition stays wide, so each round is the whole block (3 runs): two fit in 6.
    assert [r.repeat for r in rec.rounds] == [2, 3]
    assert len(extra) == rec.runs_spent == 6
    assert {(r.prompt, r.strategy, r.repeat) for r in extra} == {
        ("code", s, k) for s in PLAN.strategies for k in (2, 3)}
    assert results.config.target_half_width == 0.0001
    assert results.config.extra_budget_runs == 6
    assert all(not c.reached and c.runs_added == 2 for c in rec.conditions)
    assert rec.seconds_spent > 0
    assert "4 extra runs" not in (adaptive.bought(results) or "")
    assert "6 of 6 extra runs" in (adaptive.bought(results) or "")
    _clean(results)


# serial: whether a round is due follows the runs' spread, which another test's hog on every
# CPU (test_disturbance, test_profile_disturbance: serial too) widened past even this target
# (15 runs, not 9: `make test`, 2026-12-08).
@pytest.mark.serial
def test_a_loose_target_is_reached_without_extra_rounds(tmp_path: Path) -> None:
    # Three repeats: with two, Student's t has one degree of freedom (t = 12.7), so two
    # 16-token runs that a loaded 2-core host spreads by a few tens of percent already give
    # a half width over the loosest target a plan allows (0.99); CI saw 8 runs, not 6.
    results = _campaign(tmp_path / "b.json", replace(PLAN, target_half_width=0.99, repeats=3))
    assert len(results.runs) == PLANNED // 2 * 3
    rec = results.adaptive
    assert rec is not None and rec.stopped == "narrow" and rec.rounds == []
    assert all(c.reached and c.runs_added == 0 for c in rec.conditions)
    _clean(results)


def test_a_fixed_design_runs_no_extra_round(tmp_path: Path) -> None:
    results = _campaign(tmp_path / "c.json", replace(PLAN, target_half_width=None))
    assert len(results.runs) == PLANNED
    assert results.adaptive is None and results.config.target_half_width is None
    _clean(results)


def test_resume_continues_an_interrupted_extra_round(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    # Stopped after the planned runs and one run of the first extra round.
    with pytest.raises(KeyboardInterrupt):
        _campaign(out, observer=StopAfter(PLANNED + 1))
    partial = load_raw(out)
    assert partial.status == "interrupted"
    assert len([r for r in partial.runs if r.repeat >= PLAN.repeats]) == 1
    assert partial.adaptive is not None and [r.repeat for r in partial.adaptive.rounds] == [2]

    final = _campaign(out, resume=True)
    assert final.status == "complete"
    assert [r.model_dump() for r in final.runs[:PLANNED + 1]] == \
        [r.model_dump() for r in partial.runs]
    rec = final.adaptive
    assert rec is not None and rec.stopped == "runs"
    assert [r.repeat for r in rec.rounds] == [2, 3]
    # Each round whole, nothing run twice, the budget kept.
    ids = [r.id for r in final.runs]
    assert len(ids) == len(set(ids)) == PLANNED + 6
    assert rec == adaptive.record(final, adaptive.walk(final))
    _clean(final)
