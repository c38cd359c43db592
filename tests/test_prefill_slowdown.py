"""A serving run's speed judged by its prefill (phase.analysis.slowdown, `vs prefill`): every
run of a serving campaign prefills the same prompts into the target, whatever it decodes
with, so a run whose prefill ran slower than the campaign's earlier runs' beyond the noise
floor was slowed by the machine, not by its strategy; it is marked disturbed (and re-run by
the campaign), validation re-derives the mark from the file, and a file that hides it is
flagged. The runs are synthetic (tests/serving_factories.py) and judged one at a time through
the campaign's own judgement (reruns.judge_run); only their prefill times are set here."""

from __future__ import annotations

from dataclasses import replace

from serving_factories import serving_campaign

from phase.analysis import disturbed_note, slowdown
from phase.analysis.slowdown import PREFILL_REFERENCES, prefill_rate
from phase.campaign import DEFAULT_PLAN, load_experiment
from phase.campaign.plan import campaign_config
from phase.campaign.reruns import judge_run
from phase.campaign.ui import disturbance_line
from phase.results import PromptSpec, ResultsFile, Run
from phase.validate import validate_results

RATE = 500.0  # prompt tokens per second of prefill on the quiet machine


def _with_prefill(run: Run, rate: float | None) -> Run:
    """`run` with each request's target prefill timed at `rate` tokens/s (None: unrecorded,
    as in files from before prefill was recorded)."""
    assert run.serving is not None
    requests = [r.model_copy(update={"prefill_s": None if rate is None
                                     else (r.prompt_tokens - 1) / rate})
                for r in run.serving.requests]
    serving = run.serving.model_copy(update={"requests": requests})
    return run.model_copy(update={"serving": serving, "disturbed": False,
                                  "disturbed_reason": None, "speed_vs_condition": None,
                                  "speed_vs_prefill": None})


def _judged(rates: dict[int, float | None]) -> ResultsFile:
    """A serving campaign whose run at order i prefilled at rates.get(i, RATE), each run
    judged as it ended."""
    made = serving_campaign(strategies=("plain", "auto"), levels=(1, 8), repeats=2, cv=0.0)
    config = made.config.model_copy(update={"disturbed_load": 0.05, "max_reruns": 0,
                                            "slow_vs_condition": 0.8,
                                            "slow_vs_prefill": 0.9})
    results = made.model_copy(update={"config": config, "runs": []})
    for run in made.runs:
        run = _with_prefill(run, rates.get(run.order, RATE))
        judge_run(results, run)
        results.runs.append(run)
    return results


def test_a_run_whose_prefill_ran_slow_is_disturbed_whatever_its_strategy() -> None:
    results = _judged({7: 0.7 * RATE})
    slow = results.runs[7]
    assert slow.strategy == "auto" and slow.disturbed
    assert slow.speed_vs_prefill is not None and abs(slow.speed_vs_prefill - 0.7) < 1e-9
    assert slow.disturbed_reason is not None and "prefill at 0.70x" in slow.disturbed_reason
    assert "(7)" in slow.disturbed_reason  # every earlier run, both strategies and levels
    # its decode was as fast as its condition's: the prefill alone told
    assert slow.speed_vs_condition is None or slow.speed_vs_condition >= 0.8
    unjudged = results.model_copy(update={"config": results.config.model_copy(
        update={"slow_vs_prefill": None})})
    assert not slowdown.judge(unjudged, slow).disturbed
    others = [r for r in results.runs if r is not slow]
    assert not any(r.disturbed for r in others)
    # the first two runs have fewer than PREFILL_REFERENCES earlier ones: not judged by it
    assert [r.speed_vs_prefill for r in results.runs[:PREFILL_REFERENCES]] == [None, None]
    assert all(abs((r.speed_vs_prefill or 0) - 1.0) < 1e-9
               for r in results.runs[PREFILL_REFERENCES:] if r is not slow)
    note = disturbed_note(results)
    assert note is not None and "down to 0.70x" in note
    assert not validate_results(results, "prefill.json").blocking


def test_a_run_just_inside_the_floor_is_kept() -> None:
    results = _judged({7: 0.91 * RATE})
    assert not any(r.disturbed for r in results.runs)
    assert _judged({7: 0.89 * RATE}).runs[7].disturbed


def test_a_slow_run_does_not_drag_the_yardstick_of_later_runs() -> None:
    # the median of the earlier runs: one slow run among them moves nothing
    results = _judged({2: 0.5 * RATE})
    assert results.runs[2].disturbed
    assert results.runs[3].speed_vs_prefill == 1.0  # 2 good earlier runs and the slow one
    assert not any(r.disturbed for r in results.runs[3:])


def test_files_without_prefill_times_are_judged_as_before() -> None:
    results = _judged({i: None for i in range(16)})
    assert all(prefill_rate(r) is None and r.speed_vs_prefill is None for r in results.runs)
    assert not any(r.disturbed for r in results.runs)


def test_validation_rederives_the_prefill_judgement() -> None:
    results = _judged({7: 0.7 * RATE})
    hidden = results.model_copy(deep=True)
    hidden.runs[7].disturbed = False
    hidden.runs[7].disturbed_reason = None
    found = [f for f in validate_results(hidden, "hidden.json").findings
             if f.rule == "consistency" and f.severity == "blocking"]
    assert [f.json_path for f in found] == ["$.runs[7].disturbed"]
    forged = results.model_copy(deep=True)
    forged.runs[6].speed_vs_prefill = 0.5
    found = [f for f in validate_results(forged, "forged.json").findings
             if f.rule == "consistency" and f.severity == "blocking"]
    assert [f.json_path for f in found] == ["$.runs[6].speed_vs_prefill"]


def test_only_a_serving_campaign_states_and_records_the_prefill_floor() -> None:
    serving = load_experiment("serving").plan
    prompts = [PromptSpec(name=p, text=f"fixture prompt {p}") for p in serving.prompts]
    config = campaign_config(serving, prompts)
    assert config.serving is not None and config.slow_vs_prefill == serving.slow_vs_prefill
    assert f"prefill < {serving.slow_vs_prefill:.2f}x the earlier serving runs'" in \
        disturbance_line(config)
    one_request = campaign_config(DEFAULT_PLAN, [PromptSpec(name="p1", text="fixture")])
    assert one_request.slow_vs_prefill is None and "prefill" not in disturbance_line(one_request)
    unjudged = campaign_config(replace(serving, disturbed_load=None), prompts)
    assert unjudged.slow_vs_prefill is None
