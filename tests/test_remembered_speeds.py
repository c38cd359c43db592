"""Validation prices each run's steps once while it judges a whole file
(phase.analysis.slowdown.remembered_speeds): the judgements must be those priced afresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from phase.analysis.slowdown import judge, predicted_speed, remembered_speeds
from phase.results import load

RESULTS = Path(__file__).resolve().parent.parent / "results"
# Files whose runs are judged against a profile (greedy, sampled) and by prefill (serving).
FILES = ["speculative-x86_64-2c-2026-12-07-confirm.json",
         "speculative_sampling-x86_64-2c-2026-12-03-confirm.json",
         "serving-x86_64-2c-2026-12-07-3-confirm.json"]


@pytest.mark.parametrize("name", FILES)
def test_judgements_within_the_block_are_those_priced_afresh(name: str) -> None:
    results = load(RESULTS / name)
    afresh = [judge(results, run) for run in results.runs]
    with remembered_speeds():
        remembered = [judge(results, run) for run in results.runs]
        again = [judge(results, run) for run in results.runs]
    assert remembered == afresh == again
    assert sum(j.vs_condition is not None for j in afresh) >= 14
    assert all(j.vs_profile is not None or j.vs_prefill is not None for j in afresh[2:])


def test_a_run_is_priced_whole_and_by_its_target_passes_apart() -> None:
    results = load(RESULTS / FILES[0])
    run = next(r for r in results.runs if r.strategy != "plain")
    with remembered_speeds():
        target = predicted_speed(results, run)
        whole = predicted_speed(results, run, whole=True)
    assert target == predicted_speed(results, run)
    assert whole == predicted_speed(results, run, whole=True)
    assert target != whole
