"""The cost profile guarded as runs are: a block that other work disturbed (by load, or slower
than its size's other blocks allow) is repeated and left out of the pass's medians, so `auto`
prices nothing from it; validation re-derives which blocks were disturbed from the file.

The pure parts use block times chosen by the test; the last test profiles the real test model
while a real CPU hog runs for part of the profile.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from cost_factories import make_profile
from factories import make_results, replaced
from short_prompts import SPECULATIVE

from phase.campaign import DEFAULT_PLAN, QuietObserver, prepare
from phase.campaign.runner import Destination
from phase.campaign.sensing import SensorOptions, discover_sensors
from phase.costmodel import cost_table
from phase.costmodel.blocks import disturbed_blocks
from phase.decode.profiler import ProfileSettings, _Block, pass_cost
from phase.models.sources import TEST_MODEL
from phase.results import CostProfile, PassCost, ResultsFile, load_raw
from phase.validate import validate_results

JUDGED = ProfileSettings(blocks=3, min_block_s=0.0, disturbed_load=0.25, slow_floor=0.8)


def _blocks(ms: list[float], loads: list[float | None]) -> list[_Block]:
    return [_Block(passes=10, seconds=m * 10 / 1e3, load=v) for m, v in zip(ms, loads,
                                                                           strict=True)]


def test_a_block_is_disturbed_by_load_or_by_its_slowdown() -> None:
    # The hog: a one-token pass at 69.5 ms where its other blocks took ~10 ms.
    assert disturbed_blocks([10.1, 10.3, 69.5], [0.02, 0.03, 0.04], 0.25, 0.8) == [
        False, False, True]
    # Load alone, at full speed; and the loaded block is no reference for the others.
    assert disturbed_blocks([10.1, 10.0, 10.2], [0.02, 0.5, 0.03], 0.25, 0.8) == [
        False, True, False]
    assert disturbed_blocks([10.1, 5.0, 10.2], [0.02, 0.5, 0.03], 0.25, 0.8) == [
        False, True, False]
    # Nothing judged without thresholds.
    assert disturbed_blocks([10.1, 10.3, 69.5], [], None, None) == [False] * 3


def test_a_pass_costs_the_median_of_its_undisturbed_blocks() -> None:
    cost = pass_cost(1, _blocks([10.1, 69.5, 10.3, 10.2], [0.02, 0.6, 0.02, 0.03]), 1, JUDGED)
    assert cost.block_disturbed == [False, True, False, False]
    assert cost.block_load == [0.02, 0.6, 0.02, 0.03]
    assert cost.ms == pytest.approx(10.2)
    assert cost.ms_spread == pytest.approx((10.3 - 10.1) / 10.2)
    # Unjudged, every block counts and nothing is recorded about load.
    plain = pass_cost(1, _blocks([10.1, 69.5, 10.3], [None] * 3), 1, ProfileSettings())
    assert plain.ms == pytest.approx(10.3) and plain.block_disturbed == []


def _profile_with(first: PassCost) -> CostProfile:
    profile = make_profile()
    point = profile.points[0]
    target = [first, *point.target[1:]]
    return replaced(profile, points=[replaced(point, target=target)], blocks=3,
                    disturbed_load=0.25, slow_floor=0.8)


def _judged_pass(ms: list[float], loads: list[float | None]) -> PassCost:
    cost = pass_cost(1, _blocks(ms, loads), 1, JUDGED)
    return cost


def _file(profile: CostProfile) -> ResultsFile:
    results = make_results(tokens=16)
    # The other passes were recorded unjudged with two blocks: give them three, quiet.
    point = profile.points[0]
    others = [replaced(c, block_ms=[c.ms] * 3, block_passes=[3] * 3,
                       block_load=[0.01] * 3, block_disturbed=[False] * 3)
              for c in point.target[1:]]
    profile = replaced(profile, points=[replaced(point, target=[point.target[0], *others])])
    return replaced(results, profile=profile)


def _profile_findings(results: ResultsFile) -> list[str]:
    return [f"{f.severity}: {f.message}" for f in validate_results(results, results.id).findings
            if f.rule == "profile"]


def test_validation_rederives_the_disturbed_blocks_and_the_clean_median() -> None:
    good = _file(_profile_with(_judged_pass([10.1, 69.5, 10.3, 10.2],
                                            [0.02, 0.02, 0.6, 0.03])))
    found = _profile_findings(good)
    assert not [m for m in found if m.startswith("blocking")], found
    first = good.profile.points[0].target[0]  # type: ignore[union-attr]
    assert first.block_disturbed == [False, True, True, False]
    # auto prices the one-token pass from the quiet blocks only.
    assert cost_table(good.profile, 100).target(1) == pytest.approx(  # type: ignore[arg-type]
        statistics.median([10.1, 10.2]))

    # A file that hides the hogged block (and prices from it) is flagged.
    hidden = replaced(first, block_disturbed=[False] * 4,
                      ms=statistics.median(first.block_ms))
    forged = _file(_profile_with(hidden))
    found = _profile_findings(forged)
    assert any("marks blocks disturbed" in m and m.startswith("blocking") for m in found), found
    # And one that keeps the marks but takes the median over every block.
    wrong = replaced(first, ms=statistics.median(first.block_ms))
    found = _profile_findings(_file(_profile_with(wrong)))
    assert any("median of its undisturbed blocks" in m for m in found), found


def test_a_pass_whose_every_block_was_disturbed_is_a_warning() -> None:
    stuck = _judged_pass([60.0, 61.0, 62.0], [0.6, 0.7, 0.6])
    assert stuck.block_disturbed == [True] * 3
    found = _profile_findings(_file(_profile_with(stuck)))
    assert any(m.startswith("warning") and "every one of its 3 blocks was disturbed" in m
               for m in found), found


# --- a real profile under a real hog ----------------------------------------------------------

HOG_S = 2.0
# Under what the hog's rounds read, over what a quiet machine does.
LOAD = 0.3


class HogDuringProfile(QuietObserver):
    """Starts busy processes, for HOG_S seconds, as the cost profile begins."""

    def __init__(self) -> None:
        self.hogs: list[subprocess.Popen[bytes]] = []

    def message(self, text: str) -> None:
        if text.startswith("cost profile: timing"):
            spin = f"import time\nt = time.time()\nwhile time.time() - t < {HOG_S}: pass\n"
            self.hogs = [subprocess.Popen([sys.executable, "-c", spin])
                         for _ in range(3 * len(os.sched_getaffinity(0)))]

    def stop(self) -> None:
        for hog in self.hogs:
            hog.kill()
            hog.wait()


# serial: it loads the whole machine with busy processes, and times a decode.
@pytest.mark.serial
@pytest.mark.cores  # the hog on every CPU of the run, not the worker's share
@pytest.mark.model
def test_a_hog_during_the_profile_marks_and_repeats_its_blocks(tmp_path: Path) -> None:
    plan = replace(
        DEFAULT_PLAN, target=TEST_MODEL, draft=TEST_MODEL, prompts=("code",),
        strategies=("plain", "auto"), tokens=16, repeats=1, cooldown_s=0.0,
        idle_window_s=0.0, threads=1, threads_batch=1, profile_blocks=2,
        profile_min_block_s=0.02, disturbed_load=LOAD, max_reruns=0, quiet_check_s=0.0,
    )
    hog = HogDuringProfile()
    out = tmp_path / "hogged.json"
    try:
        with prepare(SPECULATIVE, plan, Destination(out), discover_sensors(
                SensorOptions(use=False)), hog) as campaign:
            campaign.run()
    finally:
        hog.stop()
    results = load_raw(out)
    profile = results.profile
    assert profile is not None and profile.disturbed_load == LOAD
    costs = [c for p in profile.points for c in [*p.target, *p.draft]]
    disturbed = [c for c in costs if any(c.block_disturbed)]
    loads = [v for c in costs for v in c.block_load if v is not None]
    print(f"{len(disturbed)} of {len(costs)} passes had disturbed blocks; loads "
          f"{min(loads):.2f}-{max(loads):.2f}")
    # Three busy processes per core for HOG_S: the rounds of blocks they overlap read as
    # loaded (measured here: 0.5 and more; less than 6/7 as the hogs start and stop).
    assert max(loads) >= LOAD
    assert disturbed, "no block was marked disturbed"
    for cost in disturbed:
        # Repeated: each disturbed pass got extra blocks, and its cost is its quiet blocks'.
        assert len(cost.block_ms) > profile.blocks
        quiet = [m for m, bad in zip(cost.block_ms, cost.block_disturbed, strict=True)
                 if not bad]
        if quiet:
            assert cost.ms == pytest.approx(statistics.median(quiet))
    report = validate_results(results, results.id)
    assert not [f for f in report.findings if f.rule == "profile" and
                f.severity == "blocking"], report.findings


def test_retry_blocks_that_later_judgements_cleared_are_no_finding() -> None:
    """A pass whose slow block was retried by slow blocks in turn ends with every block
    judged undisturbed against the rest: more blocks than `blocks`, which is how it ran."""
    cost = _judged_pass([10.0, 10.0, 13.0, 13.2, 13.1], [0.01] * 5)
    assert cost.block_disturbed == [False] * 5
    found = _profile_findings(_file(_profile_with(cost)))
    assert not [m for m in found if m.startswith("blocking")], found
