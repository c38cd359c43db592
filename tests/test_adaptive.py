"""Adaptive repeats, the decision function and its validation: which conditions get another
round, when the rounds stop, and what `phase validate` re-derives from a file alone.

Files here are simulated the way the runner builds them (phase.campaign.loop: decide, run
the round's slots, record), with per-run speeds chosen per condition: a condition whose runs
spread by ±30% around its centre against one whose runs spread by ±0.5%.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from factories import GAP_S, PREFILL_S, campaign_runs, make_config, make_results, make_run

from phase.analysis import adaptive
from phase.results import ResultsFile, Run
from phase.results.schedule import extra_round, schedule
from phase.validate import validate_results

PROMPTS = ("p1", "p2")
STRATEGIES = ("plain", "draft-4", "ngram")
# Spread of each strategy's decode time around its centre, run to run.
SPREAD = {"plain": 0.005, "draft-4": 0.30, "ngram": 0.005}
CENTRE = {"plain": 1.0, "draft-4": 0.8, "ngram": 0.9}


def decode_s(prompt: str, strategy: str, repeat: int, spread: dict[str, float]) -> float:
    noise = random.Random(f"{prompt}:{strategy}:{repeat}").uniform(-1, 1)
    return CENTRE[strategy] * (1 + spread[strategy] * noise)


def simulate(*, repeats: int = 3, budget_runs: int | None = 60, budget_s: float | None = None,
             spread: dict[str, float] | None = None, stop_after: int | None = None,
             disturb_first_extra: bool = False, **config: Any) -> ResultsFile:
    """A campaign as the runner runs it: the planned repeats, then decide / run / record until
    the rounds stop (or `stop_after` extra rounds: an interrupted campaign)."""
    widths = spread or SPREAD
    runs = campaign_runs([], prompts=PROMPTS, strategies=STRATEGIES, repeats=repeats,
                         decode_s=lambda s: decode_s(s.prompt, s.strategy, s.repeat, widths))
    cfg = make_config(prompts=PROMPTS, strategies=STRATEGIES, repeats=repeats,
                      target_half_width=0.05, extra_budget_runs=budget_runs,
                      extra_budget_s=budget_s, **config)
    results = make_results(runs, sensors=[], prompts=PROMPTS, strategies=STRATEGIES,
                           repeats=repeats, config=cfg, status="running")
    clock = max(r.ended_unix_s for r in runs) + GAP_S
    decisions: list[adaptive.Decision] = []
    repeat = repeats
    while stop_after is None or repeat - repeats < stop_after:
        decision = adaptive.decide(results, repeat)
        decisions.append(decision)
        if decision.stopped is not None:
            break
        for slot in decision.slots:
            d = decode_s(slot.prompt, slot.strategy, slot.repeat, widths)
            disturbed = disturb_first_extra and slot == decision.slots[0] and repeat == repeats
            results.runs.append(make_run(prompt=slot.prompt, strategy=slot.strategy,
                                         repeat=slot.repeat, order=slot.order,
                                         decode_s=d / 3 if disturbed else d,
                                         started_unix_s=clock, disturbed=disturbed,
                                         foreign_load=0.9 if disturbed else 0.0))
            clock += PREFILL_S + d + GAP_S
        for run in [r for r in results.runs if r.disturbed and r.repeat == repeat]:
            # re-run at the round's end, in its slot's reserved place (phase.results.schedule)
            d = decode_s(run.prompt, run.strategy, run.repeat, widths)
            results.runs.append(make_run(prompt=run.prompt, strategy=run.strategy,
                                         repeat=run.repeat, order=run.order + 1, decode_s=d,
                                         started_unix_s=clock, rerun_of=run.id,
                                         id=f"{run.id}-rerun1", foreign_load=0.0))
            clock += PREFILL_S + d + GAP_S
        repeat += 1
    results.adaptive = adaptive.record(results, decisions)
    if decisions and decisions[-1].stopped is not None:
        results.status = "complete"
    return ResultsFile.model_validate(results.model_dump())


def blocking(results: ResultsFile, rule: str = "adaptive") -> list[str]:
    report = validate_results(results, "r.json")
    return [f.message for f in report.findings if f.rule == rule and f.severity == "blocking"]


def extra(results: ResultsFile) -> list[Run]:
    return [r for r in results.runs if r.repeat >= results.config.repeats]


def test_a_widely_spread_condition_gets_extra_rounds_and_a_narrow_one_none() -> None:
    results = simulate()
    rec = results.adaptive
    assert rec is not None and rec.rounds
    added = {(r.prompt, r.strategy) for r in extra(results)}
    assert ("p1", "draft-4") in added and ("p2", "draft-4") in added
    assert ("p1", "plain") in added  # the baseline, paired by round
    assert not any(s == "ngram" for _, s in added)
    by = {(c.prompt, c.strategy): c for c in rec.conditions}
    assert by[("p1", "ngram")].runs_added == 0 and by[("p1", "ngram")].reached
    wide = by[("p1", "draft-4")]
    assert wide.runs_added > 0
    assert wide.speed_before is not None and wide.speed_before.half_width is not None
    assert wide.speed_before.half_width > 0.05
    # Each round holds only what was still wide then, plus plain for those prompts.
    for rnd in rec.rounds:
        ids = {r.id for r in results.runs if r.repeat == rnd.repeat}
        assert len(ids) == rnd.runs
        assert all("ngram" not in i for i in ids)


def test_every_condition_narrow_runs_no_extra_round() -> None:
    results = simulate(spread={"plain": 0.005, "draft-4": 0.005, "ngram": 0.005})
    assert extra(results) == []
    assert results.adaptive is not None and results.adaptive.stopped == "narrow"
    assert results.adaptive.rounds == []
    assert blocking(results) == []


def test_the_run_budget_stops_the_rounds() -> None:
    # A condition that never narrows (±30% noise, 2 prompts): each round costs 4 runs.
    results = simulate(budget_runs=10, spread={"plain": 0.3, "draft-4": 0.3, "ngram": 0.005})
    rec = results.adaptive
    assert rec is not None and rec.stopped == "runs"
    assert len(extra(results)) <= 10
    assert rec.runs_spent == len(extra(results))
    assert "budget" in (rec.stop_reason or "")
    assert any(not c.reached for c in rec.conditions)
    assert blocking(results) == []


def test_the_time_budget_stops_the_rounds() -> None:
    results = simulate(budget_runs=None, budget_s=20.0,
                       spread={"plain": 0.3, "draft-4": 0.3, "ngram": 0.005})
    rec = results.adaptive
    assert rec is not None and rec.stopped == "time"
    assert 0 < rec.seconds_spent <= 20.0
    assert blocking(results) == []


def test_a_correct_adaptive_file_validates_clean() -> None:
    results = simulate()
    report = validate_results(results, "r.json")
    assert report.counts().get("blocking", 0) == 0, [f.message for f in report.findings]
    assert [f for f in report.findings if f.rule == "completeness"] == []


def _append(results: ResultsFile, prompt: str, strategy: str, repeat: int) -> ResultsFile:
    cfg = results.config
    slot = extra_round([p.name for p in cfg.prompts], cfg.strategies, cfg.repeats, cfg.seed,
                       cfg.shuffle, repeat, {(prompt, strategy, ())}, cfg.max_reruns or 0)[0]
    start = max(r.ended_unix_s for r in results.runs) + GAP_S
    run = make_run(prompt=prompt, strategy=strategy, repeat=repeat, order=slot.order,
                   started_unix_s=start, decode_s=0.9)
    return ResultsFile.model_validate({**results.model_dump(),
                                       "runs": [*results.model_dump()["runs"],
                                                run.model_dump()]})


def test_an_extra_run_of_a_narrow_condition_is_flagged_not_due() -> None:
    results = simulate()
    first = results.adaptive.rounds[0].repeat if results.adaptive else 3
    # ngram's ratio was within ±5% after the planned repeats: it was never due.
    bad = _append(results, "p1", "ngram", first)
    found = blocking(bad)
    assert any("not due" in m and f"r{first}-p1-ngram" in m for m in found), found


def test_a_round_past_the_run_budget_is_flagged() -> None:
    results = simulate(budget_runs=10, spread={"plain": 0.3, "draft-4": 0.3, "ngram": 0.005})
    nxt = max(r.repeat for r in results.runs) + 1
    bad = _append(results, "p1", "draft-4", nxt)
    found = blocking(bad)
    assert any("past the run budget" in m for m in found), found


def test_a_record_that_disagrees_with_the_runs_is_flagged() -> None:
    results = simulate()
    assert results.adaptive is not None
    data = results.model_dump()
    data["adaptive"]["runs_spent"] += 5
    found = blocking(ResultsFile.model_validate(data))
    assert any("$.adaptive.runs_spent" in m for m in found), found


def test_decisions_rest_only_on_the_rounds_before() -> None:
    """An interrupted campaign decides each round again as it did: later runs change no
    earlier decision."""
    whole = simulate()
    part = simulate(stop_after=1)
    first = whole.config.repeats
    assert adaptive.decide(whole, first) == adaptive.decide(part, first)
    assert part.status == "running"
    assert blocking(part) == []


def test_a_fixed_design_has_no_rounds_and_its_record_is_refused() -> None:
    fixed = make_results(prompts=PROMPTS, strategies=STRATEGIES, sensors=[])
    assert adaptive.walk(fixed) == []
    assert blocking(fixed) == []
    stray = simulate()
    data = stray.model_dump()
    data["config"]["target_half_width"] = None
    data["runs"] = [r for r in data["runs"] if r["repeat"] < 3]
    found = blocking(ResultsFile.model_validate(data))
    assert any("fixed design" in m for m in found)


def test_extra_round_orders_are_past_every_planned_run_and_rerun() -> None:
    prompts, strategies = ["a", "b"], ["plain", "x", "y"]
    planned = schedule(prompts, strategies, 3, 7, True)
    top = max(r.order for r in planned)
    max_reruns = 2
    rerun_top = top + max_reruns * len(planned)
    every = {(p, s, ()) for p in prompts for s in strategies}
    seen: set[int] = set()
    for repeat in (3, 4, 5):
        slots = extra_round(prompts, strategies, 3, 7, True, repeat, every, max_reruns)
        orders = [s.order for s in slots]
        assert orders == sorted(orders) and min(orders) > rerun_top
        # room for each slot's re-runs before the next slot
        reserved = {o + a for o in orders for a in range(max_reruns + 1)}
        assert not reserved & seen
        seen |= reserved
        # shuffled exactly as the schedule would shuffle that repeat
        block = schedule(prompts, strategies, repeat + 1, 7, True)[-len(every):]
        assert [(s.prompt, s.strategy) for s in slots] == [(b.prompt, b.strategy) for b in block]


@pytest.mark.parametrize("given, fixed", [(["--repeats", "3"], True), ([], False),
                                          (["--quick"], True),
                                          (["--repeats", "2", "--target-width", "0.1"], False)])
def test_repeats_n_keeps_the_fixed_design(given: list[str], fixed: bool) -> None:
    from phase.campaign import load_experiment
    from phase.cli.measure import plan_from_options

    exp = load_experiment("speculative")
    quick = "--quick" in given
    opts: dict[str, Any] = {}
    if "--repeats" in given:
        opts["repeats"] = int(given[given.index("--repeats") + 1])
    if "--target-width" in given:
        opts["target_half_width"] = float(given[given.index("--target-width") + 1])
    plan = plan_from_options(exp, quick, opts)
    assert (plan.target_half_width is None) == fixed


def test_shards_refuse_adaptive_repeats() -> None:
    from dataclasses import replace

    from phase.base.errors import UsageProblem
    from phase.campaign import DEFAULT_PLAN
    from phase.campaign.shards import identify, shard_request

    plan = replace(DEFAULT_PLAN, prompts=("a", "b"), target_half_width=0.05)
    with pytest.raises(UsageProblem, match="--repeats N"):
        identify("x", plan, shard_request("0/2"))
    assert identify("x", replace(plan, target_half_width=None), shard_request("0/2")).shard



def test_the_terminal_states_the_design_and_what_the_budget_bought() -> None:
    from rich.console import Console

    from phase.campaign import ui

    results = simulate(budget_runs=10, spread={"plain": 0.3, "draft-4": 0.3, "ngram": 0.005})
    line = ui.design_line(results.config)
    assert "3 repeat(s) of 6 condition(s), 18 runs" in line
    assert "±5%" in line and "budget 10 runs" in line
    fixed = make_results(prompts=PROMPTS, strategies=STRATEGIES, sensors=[])
    assert ui.design_line(fixed.config).startswith("design: fixed, 3 repeat(s)")
    assert adaptive.bought(fixed) is None
    bought = adaptive.bought(results) or ""
    assert f"{len(extra(results))} of 10 extra runs" in bought and "stopped:" in bought

    console = Console(record=True, width=200)
    old, ui.console = ui.console, console
    try:
        ui.print_summary(results)
    finally:
        ui.console = old
    text = console.export_text()
    assert "adaptive repeats —" in text and "not within target: p1 · draft-4" in text


def test_the_provenance_box_says_what_the_rounds_bought(tmp_path: Path) -> None:
    from factories import write_results

    from phase.publish.data.datasets import load_dataset
    from phase.publish.numbers.provenance import provenance_box
    from phase.validate.settings import RuleSettings

    path = write_results(simulate(), tmp_path / "a.json")
    _, ds = load_dataset(path, RuleSettings())
    assert ds is not None
    items = dict(provenance_box(ds, "", {}).items)
    assert "extra round(s)" in items["Adaptive repeats"]
    assert "within ±5%" in items["Adaptive repeats"]


def test_a_disturbed_extra_run_is_rerun_in_place_and_left_out() -> None:
    results = simulate(disturb_first_extra=True, disturbed_load=0.5, max_reruns=2)
    disturbed = [r for r in results.runs if r.disturbed]
    assert len(disturbed) == 1 and disturbed[0].repeat == results.config.repeats
    rerun = next(r for r in results.runs if r.rerun_of == disturbed[0].id)
    assert rerun.order == disturbed[0].order + 1
    assert blocking(results) == [] and blocking(results, "consistency") == []
    # The disturbed run (three times as fast) moves no interval: the same decisions as a
    # campaign where it was never run.
    data = results.model_dump()
    data["runs"] = [r for r in data["runs"] if not r["disturbed"]]
    clean = ResultsFile.model_validate(data)
    nxt = results.config.repeats + 1
    assert adaptive.decide(results, nxt).wide == adaptive.decide(clean, nxt).wide
    # ...but it is spent: one more run than the clean file.
    assert adaptive.decide(results, nxt).runs_spent == adaptive.decide(clean, nxt).runs_spent + 1
    # A re-run out of its reserved place is flagged.
    moved = results.model_dump()
    for r in moved["runs"]:
        if r["rerun_of"]:
            r["order"] += 1
    assert any("order" in m for m in blocking(ResultsFile.model_validate(moved)))


def test_a_round_past_the_time_budget_is_flagged() -> None:
    results = simulate(budget_runs=None, budget_s=20.0,
                       spread={"plain": 0.3, "draft-4": 0.3, "ngram": 0.005})
    assert results.adaptive is not None and results.adaptive.stopped == "time"
    nxt = max(r.repeat for r in results.runs) + 1
    found = blocking(_append(results, "p2", "draft-4", nxt))
    assert any("past the time budget" in m for m in found), found
