"""Disturbance judged by slowdown (phase.analysis.slowdown): a run at low load but half its
condition's speed, or far below its profile's prediction, is disturbed and re-run; validation
re-derives the judgement from the file alone, and a file that hides it is flagged.

Runs are added one at a time through the campaign's own judgement (reruns.judge_run), as a
campaign adds them; their times are chosen by the test, the rules are the product's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cost_factories import make_profile
from factories import T0, make_config, make_results, make_run, replaced
from short_prompts import SPECULATIVE

from phase.analysis import disturbed_note, summarize
from phase.analysis.slowdown import judge
from phase.base.errors import PhaseError
from phase.campaign import DEFAULT_PLAN, QuietObserver, load_experiment, prepare
from phase.campaign.plan import campaign_config
from phase.campaign.reruns import due_reruns, judge_run
from phase.campaign.runner import Destination
from phase.campaign.sensing import SensorOptions, discover_sensors
from phase.campaign.ui import console, disturbance_line, print_summary
from phase.models.sources import TEST_MODEL
from phase.results import MergedShard, PromptSpec, ResultsFile, Run, ShardInfo, load_raw
from phase.results.schedule import planned_schedule, rerun
from phase.validate import validate_results

TOKENS = 16
# The profile's one-token pass: 10 + 5 x 1 ms, so a plain run of 16 tokens is predicted at
# 240 ms (the loop around the passes left out).
PREDICTED_S = TOKENS * 15e-3


def _empty() -> ResultsFile:
    config = make_config(tokens=TOKENS, repeats=3, disturbed_load=0.25, max_reruns=2,
                         slow_vs_profile=0.5, slow_vs_condition=0.8)
    return make_results([], tokens=TOKENS, config=config, profile=make_profile(),
                        status="running")


def _add(results: ResultsFile, speed: float, *, repeat: int, load: float = 0.02,
         rerun_of: str | None = None, order: int | None = None) -> Run:
    """A plain run at `speed` x its predicted speed, judged as a campaign judges it."""
    decode_s = PREDICTED_S / speed
    started = T0 + 10.0 * len(results.runs)
    run = make_run(repeat=repeat, tokens=TOKENS, decode_s=decode_s, started_unix_s=started,
                   foreign_load=load, foreign_load_reason=None)
    if rerun_of is not None:
        run = replaced(run, id=f"{rerun_of}-rerun1", rerun_of=rerun_of, order=order)
    judge_run(results, run)
    results.runs.append(run)
    return run


def _campaign() -> tuple[ResultsFile, Run]:
    results = _empty()
    _add(results, 1.0, repeat=0)
    _add(results, 0.97, repeat=1)
    slow = _add(results, 0.52, repeat=2, load=0.05)
    return results, slow


def test_a_run_at_low_load_but_half_speed_is_disturbed_and_rerun() -> None:
    results, slow = _campaign()
    assert slow.foreign_load is not None and slow.foreign_load < 0.25
    assert slow.disturbed
    assert slow.speed_vs_condition is not None and 0.52 < slow.speed_vs_condition < 0.55
    # Not below the profile's generous floor: the condition's runs caught it.
    assert slow.speed_vs_profile is not None and slow.speed_vs_profile > 0.5
    assert slow.disturbed_reason is not None
    assert "its condition's median (2 earlier runs), beyond the noise floor 0.80x" in \
        slow.disturbed_reason
    assert slow.disturbed_reason.startswith(f"{slow.speed_vs_condition:.2f}x")

    plan = DEFAULT_PLAN
    schedule = planned_schedule(results.config)
    block = [s for s in schedule if s.repeat == 2]
    due = due_reruns(results.runs, block, plan, len(schedule))
    assert [d.of for d in due] == [slow.id]

    again = _add(results, 1.01, repeat=2, rerun_of=slow.id, order=due[0].order)
    assert not again.disturbed and again.disturbed_reason is None
    assert due_reruns(results.runs, block, plan, len(schedule)) == []
    results.status = "complete"

    report = validate_results(results, results.id)
    blocking = [f for f in report.findings if f.severity == "blocking"]
    assert blocking == [], blocking
    summary = summarize(results, report, results.id)
    (row,) = summary.rows
    assert slow.id not in row.run_ids and again.id in row.run_ids and row.n == 3
    note = disturbed_note(results)
    assert note is not None and "1 ran slower than the noise floor allows, down to 0.5" in note


def test_validation_flags_a_file_that_hides_a_slowdown() -> None:
    results, slow = _campaign()
    hidden = replaced(slow, disturbed=False, disturbed_reason=None)
    forged = replaced(results, runs=[*results.runs[:-1], hidden])
    findings = [f for f in validate_results(forged, forged.id).findings
                if f.rule == "consistency" and f.run_id == slow.id]
    assert any(f.severity == "blocking" and f.json_path.endswith(".disturbed")
               and "make it true" in f.message for f in findings), findings

    # Hiding the ratio as well does not help: it is recomputed from the runs.
    rewritten = replaced(hidden, speed_vs_condition=1.0)
    forged = replaced(results, runs=[*results.runs[:-1], rewritten])
    paths = {f.json_path for f in validate_results(forged, forged.id).findings
             if f.rule == "consistency" and f.run_id == slow.id}
    assert {"$.runs[2].speed_vs_condition", "$.runs[2].disturbed"} <= paths

    # And a quiet run marked disturbed would be left out of every figure: flagged too.
    first = replaced(results.runs[0], disturbed=True, disturbed_reason="made up")
    forged = replaced(results, runs=[first, *results.runs[1:]])
    assert any(f.rule == "consistency" and f.run_id == first.id and f.severity == "blocking"
               for f in validate_results(forged, forged.id).findings)


def test_a_first_repeat_run_is_judged_against_its_profile() -> None:
    """No earlier run of its condition exists when a first repeat's run ends: the profile's
    prediction judges it at once."""
    results = _empty()
    crawled = _add(results, 0.3, repeat=0)
    assert crawled.disturbed and crawled.speed_vs_condition is None
    assert crawled.disturbed_reason is not None and \
        "the speed its cost profile predicts, beyond the noise floor 0.50x" in \
        crawled.disturbed_reason
    # Later runs are not compared with it: a disturbed run is no reference.
    later = _add(results, 0.95, repeat=1)
    assert later.speed_vs_condition is None and not later.disturbed
    # A mildly slow first run is within the profile's floor and counts.
    results = _empty()
    assert not _add(results, 0.7, repeat=0).disturbed


def test_load_still_disturbs_a_run_at_full_speed() -> None:
    results = _empty()
    busy = _add(results, 1.0, repeat=0, load=0.4)
    assert busy.disturbed and busy.disturbed_reason == "foreign load 40% at or over 25%"


def test_a_merged_file_keeps_the_ratios_its_shards_judged() -> None:
    """`phase merge` pools the shards' profiles, so a merged file no longer holds the profile
    each run was priced with: its recorded ratios stand, and still decide `disturbed`."""
    results, slow = _campaign()
    shard = ShardInfo(index=0, count=1, split="repeats", prompts=["p1"], repeats=[0, 1, 2],
                      source="--shard")
    merged = replaced(
        results, status="complete", profile=make_profile(target=lambda b: 40.0 + 5.0 * b),
        merged_from=[MergedShard(file="a.json", sha256="0" * 64, shard=shard, hostname="h",
                                 created=datetime(2026, 1, 1, tzinfo=UTC))])
    assert judge(merged, slow).vs_profile == slow.speed_vs_profile
    assert judge(merged, slow).disturbed
    assert not [f for f in validate_results(merged, merged.id).findings
                if f.rule == "consistency"]
    hidden = replaced(merged, runs=[*merged.runs[:-1], replaced(slow, disturbed=False)])
    assert [f.json_path for f in validate_results(hidden, hidden.id).findings
            if f.rule == "consistency"] == ["$.runs[2].disturbed"]

def test_a_file_without_floors_is_judged_by_load_alone() -> None:
    """Older files (schema 11 and before) record no floors: a slow run there is not
    disturbed, and validation does not ask for ratios."""
    results, slow = _campaign()
    old = replaced(results, config=replaced(results.config, slow_vs_profile=None,
                                            slow_vs_condition=None))
    verdict = judge(old, slow)
    assert verdict.vs_profile is None and verdict.vs_condition is None and not verdict.disturbed
    plain = [replaced(r, disturbed=False, disturbed_reason=None, speed_vs_profile=None,
                      speed_vs_condition=None) for r in old.runs]
    old = replaced(old, runs=plain, status="complete")
    assert not [f for f in validate_results(old, old.id).findings
                if f.rule == "consistency"]


def test_a_quick_plan_marks_but_reruns_nothing() -> None:
    """`--quick` (max_reruns 0) judges like any campaign and leaves the run out, but spends
    no run on it."""
    results, slow = _campaign()
    schedule = planned_schedule(results.config)
    block = [s for s in schedule if s.repeat == 2]
    assert due_reruns(results.runs, block, replace(DEFAULT_PLAN, max_reruns=0),
                      len(schedule)) == []
    assert due_reruns(results.runs, block, DEFAULT_PLAN, len(schedule)) == [
        rerun(block[0], 1, len(schedule))]
    assert slow.disturbed


@pytest.mark.parametrize("name", ["speculative", "speculative_sampling", "memory_bound"])
def test_every_quick_plan_judges_disturbance_and_reruns_nothing(name: str) -> None:
    """The smoke campaigns once recorded load and judged nothing, so a run at 2.6 tok/s
    against 140 was summarised as valid: now they judge as any campaign does."""
    quick = load_experiment(name).quick_plan()
    assert quick is not None
    config = campaign_config(quick, [PromptSpec(name="p1", text="fixture prompt")])
    assert config.disturbed_load is not None
    assert config.slow_vs_profile is not None and config.slow_vs_condition is not None
    assert config.max_reruns == 0


def test_the_terminal_summary_marks_and_excludes_a_disturbed_run() -> None:
    results, slow = _campaign()
    results.status = "complete"
    with console.capture() as captured:
        print_summary(results)
    text = captured.get()
    assert "1 disturbed run(s) left out" in text
    assert f"{slow.id}: {slow.tokens_per_s:.1f} tok/s, {slow.disturbed_reason}" in \
        " ".join(text.split())


def test_the_campaign_states_its_disturbance_tests_before_it_starts() -> None:
    config = campaign_config(DEFAULT_PLAN, [PromptSpec(name="p1", text="fixture prompt")])
    plan = DEFAULT_PLAN  # the calibrated defaults, whatever they are
    assert disturbance_line(config) == (
        f"disturbance: foreign load >= {plan.disturbed_load:.0%} or target passes < "
        f"{plan.slow_vs_profile:.2f}x the cost profile's price or speed < "
        f"{plan.slow_vs_condition:.2f}x its condition's earlier runs; a disturbed run is left "
        f"out and re-run up to {plan.max_reruns} time(s)")
    quick = campaign_config(replace(DEFAULT_PLAN, max_reruns=0, disturbed_load=None),
                            [PromptSpec(name="p1", text="fixture prompt")])
    assert disturbance_line(quick) == "disturbance: foreign load recorded, nothing judged"


def test_a_file_whose_every_run_was_disturbed_says_so() -> None:
    """A smoke campaign on a busy machine can leave every run out: its summary says why
    instead of "no runs yet", and lists each run."""
    results = _empty()
    crawled = _add(results, 0.3, repeat=0)
    results.status = "complete"
    with pytest.raises(PhaseError, match="1 disturbed run\\(s\\) left out: 1 ran slower"):
        summarize(results, validate_results(results, results.id), results.id)
    with console.capture() as captured:
        print_summary(results)
    text = " ".join(captured.get().split())
    assert "nothing to summarize" in text and f"{crawled.id}: " in text


# --- a real run slowed by a real hog, its load not judged ---------------------------------------


class HogDuringSecond(QuietObserver):
    """Busy processes from the end of the first run to the end of the second: only the
    second run decodes beside them."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.hogs: list[subprocess.Popen[bytes]] = []
        self.hogged: list[str] = []

    def run_finished(self, index: int, run: Run) -> None:
        if index == 0:
            self.hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                         for _ in range(self.count)]
        elif self.hogs:
            self.hogged.append(run.id)
            self.stop()

    def stop(self) -> None:
        for hog in self.hogs:
            hog.kill()
            hog.wait()
        self.hogs = []


# serial: it loads the whole machine with busy processes, and times a decode.
@pytest.mark.serial
@pytest.mark.model
def test_a_run_a_hog_slowed_is_marked_by_its_slowdown_and_rerun(tmp_path: Path) -> None:
    # A load threshold no load reaches: only the slowdown can mark the run.
    plan = replace(
        DEFAULT_PLAN, target=TEST_MODEL, draft=TEST_MODEL, prompts=("code",),
        strategies=("plain",), tokens=24, repeats=2, cooldown_s=0.2, idle_window_s=0.0,
        threads=1, threads_batch=1, profile=False, disturbed_load=2.0, max_reruns=2,
        quiet_check_s=0.0,
    )
    hog = HogDuringSecond(3 * len(os.sched_getaffinity(0)))
    out = tmp_path / "slowed.json"
    try:
        with prepare(SPECULATIVE, plan, Destination(out),
                     discover_sensors(SensorOptions(use=False)), hog) as campaign:
            campaign.run()
    finally:
        hog.stop()
    results = load_raw(out)
    by_id = {r.id: r for r in results.runs}
    print({r.id: (round(r.tokens_per_s, 1), r.foreign_load, r.speed_vs_condition)
           for r in results.runs})
    (hogged,) = hog.hogged
    run = by_id[hogged]
    # Three busy processes per core leave a one-thread decode a fraction of its speed.
    assert run.disturbed and run.speed_vs_condition is not None
    assert run.speed_vs_condition < plan.slow_vs_condition  # type: ignore[operator]
    assert run.disturbed_reason is not None and "its condition's median" in \
        run.disturbed_reason
    assert [r.id for r in results.runs if r.rerun_of == hogged][:1] == [f"{hogged}-rerun1"]
    report = validate_results(results, results.id)
    assert not [f for f in report.findings if f.severity == "blocking"], report.findings
