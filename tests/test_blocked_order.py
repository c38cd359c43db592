"""Schema 16's blocked order (config.blocked_by): each repeat runs one level of a factor at a
time, so the runs a ratio pairs are close in time; without it every order is what it was."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from factories import make_config
from pydantic import ValidationError

from phase.campaign import load_experiment
from phase.cli.measure import plan_from_options
from phase.publish.notes.serving_section import load_text
from phase.results import FactorSpec, load_raw
from phase.results.schedule import ScheduledRun, extra_round, planned_schedule, schedule

LEVELS = [1, 2, 4, 8]
CONCURRENCY = [FactorSpec(name="concurrency", kind="concurrency", levels=list(LEVELS),
                          labels=[str(v) for v in LEVELS])]
STRATEGIES = ["plain", "draft-4", "ngram", "auto"]


def _level(run: ScheduledRun) -> object:
    return dict(run.levels)["concurrency"]


def _runs_of_levels(runs: Sequence[ScheduledRun]) -> list[list[object]]:
    """Per repeat, the level of each run in order."""
    out: dict[int, list[object]] = {}
    for run in runs:
        out.setdefault(run.repeat, []).append(_level(run))
    return list(out.values())


def test_each_repeat_runs_one_level_at_a_time_in_a_fresh_order() -> None:
    runs = schedule(["pool"], STRATEGIES, 6, 11, True, CONCURRENCY, "concurrency")
    assert [r.order for r in runs] == list(range(len(runs)))
    per_repeat = _runs_of_levels(runs)
    for levels in per_repeat:
        blocks = [levels[i:i + len(STRATEGIES)] for i in range(0, len(levels), len(STRATEGIES))]
        assert all(len(set(b)) == 1 for b in blocks)  # a level's runs back to back
        assert sorted(b[0] for b in blocks) == LEVELS  # every level once per repeat
    # The blocks' order and the strategies' order within a block change between repeats.
    assert len({tuple(levels[::len(STRATEGIES)]) for levels in per_repeat}) > 1
    within = {tuple(r.strategy for r in runs if r.repeat == k and _level(r) == 8)
              for k in range(6)}
    assert len(within) > 1
    # Every condition once per repeat, ids as the unblocked schedule names them.
    whole = schedule(["pool"], STRATEGIES, 6, 11, True, CONCURRENCY)
    assert sorted(r.run_id for r in runs) == sorted(r.run_id for r in whole)
    # The seed replays the order.
    assert schedule(["pool"], STRATEGIES, 6, 11, True, CONCURRENCY, "concurrency") == runs


def test_unblocked_orders_are_unchanged_and_blocked_ones_differ() -> None:
    whole = schedule(["pool"], STRATEGIES, 3, 0, True, CONCURRENCY)
    assert whole == schedule(["pool"], STRATEGIES, 3, 0, True, CONCURRENCY, None)
    blocked = schedule(["pool"], STRATEGIES, 3, 0, True, CONCURRENCY, "concurrency")
    assert [r.run_id for r in blocked] != [r.run_id for r in whole]
    # Unshuffled, the blocks follow the declared levels and the declared strategies.
    fixed = schedule(["pool"], STRATEGIES, 1, 0, False, CONCURRENCY, "concurrency")
    assert [(_level(r), r.strategy) for r in fixed] == [(c, s) for c in LEVELS
                                                        for s in STRATEGIES]


def test_an_adaptive_round_keeps_its_repeat_s_blocked_order() -> None:
    due = {("pool", s, (("concurrency", c),)) for s in ("plain", "auto") for c in (2, 8)}
    slots = extra_round(["pool"], STRATEGIES, 3, 5, True, 4, due, 2, CONCURRENCY,
                        "concurrency")
    planned = schedule(["pool"], STRATEGIES, 5, 5, True, CONCURRENCY, "concurrency")
    repeat_four = [(r.strategy, _level(r)) for r in planned if r.repeat == 4
                   and (r.prompt, r.strategy, r.levels) in due]
    assert [(s.strategy, _level(s)) for s in slots] == repeat_four
    levels = [_level(s) for s in slots]
    assert levels[:2] == [levels[0]] * 2 and levels[2:] == [levels[2]] * 2


def test_the_config_records_blocks_only_where_asked_and_only_by_a_factor() -> None:
    config = make_config(strategies=STRATEGIES, factors=CONCURRENCY, blocked_by="concurrency")
    assert json.loads(config.model_dump_json())["blocked_by"] == "concurrency"
    assert planned_schedule(config) == schedule(
        ["p1"], STRATEGIES, config.repeats, config.seed, config.shuffle, CONCURRENCY,
        "concurrency")
    assert "blocked_by" not in json.loads(make_config(factors=CONCURRENCY).model_dump_json())
    with pytest.raises(ValidationError, match="blocked_by 'threads' is not one of"):
        make_config(strategies=STRATEGIES, factors=CONCURRENCY, blocked_by="threads")


def test_a_results_file_blocking_by_a_missing_factor_names_its_path(tmp_path: Path) -> None:
    from serving_factories import serving_campaign

    from phase.results import ResultsError

    data = json.loads(serving_campaign(repeats=1).model_dump_json())
    data["config"]["blocked_by"] = "temperature"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsError, match=r"bad\.json.*\$\.config.*blocked_by 'temperature'"):
        load_raw(path)


def test_the_serving_study_blocks_by_concurrency_and_none_turns_it_off() -> None:
    experiment = load_experiment("serving")
    assert plan_from_options(experiment, False, {}).blocked_by == "concurrency"
    assert plan_from_options(experiment, True, {}).blocked_by == "concurrency"
    assert plan_from_options(experiment, False, {"blocked_by": "none"}).blocked_by is None
    assert load_experiment("speculative").plan.blocked_by is None


def test_the_serving_note_says_how_its_runs_were_ordered() -> None:
    from serving_factories import serving_campaign

    results = serving_campaign(repeats=1)
    assert "back to back" not in load_text(results)
    blocked = results.model_copy(update={"config": results.config.model_copy(
        update={"blocked_by": "concurrency"})})
    assert "one concurrency level's strategies back to back" in load_text(blocked)


def test_a_plan_blocking_by_no_factor_is_refused_by_name(tmp_path: Path) -> None:
    from phase.base.errors import UsageProblem
    from phase.campaign import Destination, SensorOptions, discover_sensors, prepare

    experiment = load_experiment("speculative")
    plan = replace(experiment.plan, blocked_by="concurrency", prompts=("code",))
    out = tmp_path / "x.json"
    with pytest.raises(UsageProblem, match=r"plan\.blocked_by .*allowed: None"):
        prepare(experiment, plan, Destination(out), discover_sensors(SensorOptions(use=False)))
    assert not out.exists()


def test_the_design_line_says_the_repeats_run_in_blocks() -> None:
    from phase.campaign.ui import design_line

    config = make_config(strategies=STRATEGIES, factors=CONCURRENCY, blocked_by="concurrency")
    assert design_line(config) == ("design: fixed, 3 repeat(s) of 16 condition(s), 48 runs, "
                                   "each repeat in blocks of one concurrency level")
    assert "blocks" not in design_line(make_config(strategies=STRATEGIES, factors=CONCURRENCY))
