"""The time a campaign states before its runs: from its prompts' expected plain decodes, the
passes of their windows and every run's waits; what adaptive rounds and re-runs may add."""

from __future__ import annotations

from dataclasses import replace

from phase.campaign.duration import estimate
from phase.campaign.plan import DEFAULT_PLAN, campaign_config
from phase.campaign.windows import PlannedWindow
from phase.results import PromptSpec
from phase.results.schedule import planned_schedule

PROMPTS = [PromptSpec(name="code", text="x"), PromptSpec(name="edit", text="y")]


def _planned(code_s: float | None, passes: int = 1) -> list[PlannedWindow]:
    return [PlannedWindow("code", "plain", code_s, "cost profile", passes),
            PlannedWindow("code", "ngram", 0.1, "cost profile", 1),
            PlannedWindow("edit", "plain", 4.0, "cost profile", 1)]


def test_the_estimate_adds_each_run_at_its_prompts_plain_speed() -> None:
    plan = replace(DEFAULT_PLAN, strategies=("plain", "ngram"), repeats=3, cooldown_s=1.0,
                   idle_window_s=0.5)
    config = campaign_config(plan, PROMPTS)
    runs = planned_schedule(config)
    assert len(runs) == 12
    found = estimate(runs, _planned(2.0, passes=2), config)
    # 6 runs of code at 2 passes of 2 s, 6 of edit at 4 s, each with 1.5 s of waits.
    assert found.estimated_s == 6 * 4.0 + 6 * 4.0 + 12 * 1.5
    line = found.line()
    assert line.startswith("time: about 66 s for 12 runs if each decodes at plain decoding")
    assert "a strategy slower than plain takes longer" in line
    assert "re-run up to 2 time(s)" in line and "adaptive" not in line
    # A resumed campaign estimates what is left.
    done = {r.run_id for r in runs if r.prompt == "edit"}
    assert estimate(runs, _planned(2.0, passes=2), config, done).estimated_s == 6 * 5.5


def test_an_unknown_plain_time_is_said_not_guessed() -> None:
    config = campaign_config(replace(DEFAULT_PLAN, strategies=("plain", "ngram")), PROMPTS)
    found = estimate(planned_schedule(config), _planned(None), config)
    assert found.estimated_s is None
    assert "no plain decode time to estimate them from" in found.line()


def test_adaptive_rounds_state_their_budget() -> None:
    plan = replace(DEFAULT_PLAN, strategies=("plain", "ngram"), target_half_width=0.05,
                   extra_runs=24, extra_time_s=600.0, repeats=3)
    config = campaign_config(plan, PROMPTS)
    line = estimate(planned_schedule(config), _planned(60.0), config).line()
    assert "adaptive rounds at most 24 runs and 10 min more" in line
    assert line.startswith("time: about ")
    assert " min for 12 runs" in line
