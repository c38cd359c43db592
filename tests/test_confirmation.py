"""Confirmation campaigns: the headline's condition is chosen by a stated rule from the
selection campaign, measured again on fresh runs alternating with plain, and a confirmation
file that measures anything else is blocked. The real decode path of `phase confirm` is run by
test_confirmation_campaign.py."""

from __future__ import annotations

import hashlib
import html
from pathlib import Path

import pytest
from factories import (
    campaign_runs,
    make_provenance,
    make_results,
    make_sensor,
    replaced,
    speculate,
    write_results,
)

from phase.analysis import summarize
from phase.analysis.selection import RULE, select
from phase.analysis.slowdown import judge
from phase.base.errors import UsageProblem
from phase.campaign.confirm import confirmation_plan, fresh_seed
from phase.campaign.experiment import Experiment
from phase.campaign.plan import DEFAULT_PLAN, campaign_config
from phase.results import Confirms, PromptSpec
from phase.validate import validate_results

# Per prompt, draft-4's and ngram's decode seconds against plain's 2.0: ngram on "edit" is the
# fastest (the selection), draft-4 on "code" second.
DECODE = {("code", "draft-4"): 1.5, ("code", "ngram"): 1.9, ("edit", "draft-4"): 2.2,
          ("edit", "ngram"): 1.2}


def _selection():
    def decode_s(slot) -> float:  # type: ignore[no-untyped-def]
        base = 2.0 if slot.strategy == "plain" else DECODE[(slot.prompt, slot.strategy)]
        return base * (1 + 0.02 * slot.repeat)
    runs = campaign_runs([make_sensor()], prompts=("code", "edit"),
                         strategies=("plain", "draft-4", "ngram"), repeats=3, decode_s=decode_s)
    runs = [speculate(r, 0.7) if r.strategy != "plain" else r for r in runs]
    return make_results(runs, prompts=("code", "edit"), strategies=("plain", "draft-4", "ngram"),
                        id="speculative-fixture", experiment="speculative",
                        provenance=make_provenance(cpu_model="Fixture CPU 2c"))


def _experiment(tmp_path: Path, results) -> Experiment:  # type: ignore[no-untyped-def]
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    for p in results.config.prompts:
        (prompts / f"{p.name}.txt").write_text(p.text)
    return Experiment("speculative", None, "fixture", prompts, DEFAULT_PLAN)


def _here(results):  # type: ignore[no-untyped-def]
    """The machine the fixture campaign records, as the one that confirms it."""
    return (results.provenance.cpu_model, results.provenance.llama_cpp_python_version)


def test_another_machine_cannot_confirm(tmp_path: Path) -> None:
    results = _selection()
    path = write_results(results, tmp_path / "s.json")
    with pytest.raises(UsageProblem, match="must run where the campaign it confirms ran"):
        confirmation_plan(_experiment(tmp_path, results), path,
                          here=("Some Other CPU", results.provenance.llama_cpp_python_version))


def test_another_build_cannot_confirm(tmp_path: Path) -> None:
    """Same CPU and binding, llama.cpp built with AMX on one side only: other kernels run."""
    info = "llama-cpp-python 0.3.36 | CPU : AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | REPACK = 1"
    results = replaced(_selection(), provenance=make_provenance(
        cpu_model="Fixture CPU 2c", llama_cpp_system_info=info))
    path = write_results(results, tmp_path / "s.json")
    without = info.replace(" | AMX_INT8 = 1", "")
    experiment = _experiment(tmp_path, results)
    with pytest.raises(UsageProblem, match=r"CPU kernels differ \(AMX_INT8 there only\)"):
        confirmation_plan(experiment, path, here=("Fixture CPU 2c", None, without))
    # The same build passes.
    plan = confirmation_plan(experiment, path, here=("Fixture CPU 2c", None, info))
    assert plan.confirms is not None


def test_the_selection_is_the_highest_ratio_among_all_conditions() -> None:
    results = _selection()
    summary = summarize(results, validate_results(results, "f.json"), "f.json")
    chosen = select(summary.rows)
    assert chosen is not None
    assert (chosen.prompt, chosen.strategy) == ("edit", "ngram")
    assert chosen.speed_ratio == pytest.approx(2.0 / 1.2)
    assert chosen.among == 4 and chosen.rule == RULE


def test_a_confirmation_plan_runs_the_chosen_condition_and_plain_afresh(tmp_path: Path) -> None:
    results = _selection()
    path = write_results(results, tmp_path / "speculative-fixture.json")
    plan = confirmation_plan(_experiment(tmp_path, results), path, pairs=8, here=_here(results))
    assert plan.prompts == ("edit",) and plan.strategies == ("plain", "ngram")
    assert plan.repeats == 8 and not plan.shuffle and plan.target_half_width is None
    # Same run length as the selection, and a seed its runs never used.
    assert plan.tokens == results.config.tokens
    assert plan.seed == fresh_seed(results) != results.config.seed
    confirms = plan.confirms
    assert confirms is not None and confirms.file == path.name
    assert confirms.selected_from == 4 and confirms.selection_speed_ratio == pytest.approx(2 / 1.2)
    assert confirms.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_nothing_to_confirm_is_refused(tmp_path: Path) -> None:
    plain_only = make_results(prompts=("code",), strategies=("plain",), id="plain-only",
                              experiment="speculative")
    path = write_results(plain_only, tmp_path / "plain-only.json")
    with pytest.raises(UsageProblem, match="no condition has a speed ratio"):
        confirmation_plan(_experiment(tmp_path, plain_only), path, here=_here(plain_only))
    running = replaced(_selection(), status="interrupted")
    other = tmp_path / "running"
    other.mkdir()
    path = write_results(running, other / "running.json")
    with pytest.raises(UsageProblem, match="finish it first"):
        confirmation_plan(_experiment(other, running), path, here=_here(running))


def test_a_changed_prompt_is_refused(tmp_path: Path) -> None:
    results = _selection()
    path = write_results(results, tmp_path / "s.json")
    experiment = _experiment(tmp_path, results)
    (experiment.prompts_dir / "edit.txt").write_text("another prompt")
    with pytest.raises(UsageProblem, match="not the one the campaign measured"):
        confirmation_plan(experiment, path, here=_here(results))


SERVING = Path(__file__).resolve().parent.parent / "results" / "serving-x86_64-2c-2026-12-07-3.json"


def test_a_serving_headline_is_confirmed_over_its_whole_pool(tmp_path: Path) -> None:
    """A serving condition's prompt is its pool: the confirmation serves every prompt of it,
    read from the campaign's workload, with the campaign's load at the chosen level."""
    from phase.campaign.experiment import load_experiment
    from phase.results import load_raw

    selection = load_raw(SERVING)
    assert selection.config.serving is not None and selection.config.workload is not None
    plan = confirmation_plan(load_experiment("serving"), SERVING, pairs=4,
                             here=_here(selection))
    assert plan.prompts == tuple(p.name for p in selection.config.prompts)
    assert plan.workload == selection.config.workload.name
    assert plan.confirms is not None
    assert plan.strategies == ("plain", plan.confirms.strategy)
    assert plan.confirms.prompt == selection.config.serving.pool
    level = plan.confirms.factors["concurrency"]
    assert [f.levels for f in plan.factors] == [(level,)]
    # Plain and the chosen strategy alternate: no blocks, no shuffle.
    assert plan.blocked_by is None and not plan.shuffle
    serving = selection.config.serving
    assert (plan.serving_requests, plan.serving_pool, plan.serving_steady_b,
            plan.serving_request_rate) == (serving.requests, serving.pool,
                                           serving.steady_state_b, serving.request_rate)


def test_a_chosen_prompt_the_campaign_did_not_record_is_refused(tmp_path: Path) -> None:
    """Not a crash (it was a StopIteration): a usage error naming the prompt and the field."""
    results = _selection()
    config = results.config.model_copy(update={"prompts": [
        p for p in results.config.prompts if p.name != "edit"]})
    path = write_results(replaced(results, config=config), tmp_path / "s.json")
    with pytest.raises(UsageProblem, match=r"'edit' is not one of the campaign's "
                                           r"\(config.prompts\)"):
        confirmation_plan(_experiment(tmp_path, results), path, here=_here(results))


def test_a_serving_confirmation_serves_the_pool_in_alternation() -> None:
    """The committed serving confirmation passes the rule; the same file claiming another
    pool, or run in blocks, is blocked at the field."""
    from phase.results import load_raw

    confirmation = load_raw(SERVING.with_name(SERVING.stem + "-confirm.json"))
    assert confirmation.config.serving is not None
    assert not validate_results(confirmation, "c.json").blocking
    other = confirmation.model_copy(update={"confirms": confirmation.confirms.model_copy(
        update={"prompt": "mtbench-80"})})
    paths = {f.json_path for f in validate_results(other, "c.json").findings
             if f.rule == "confirmation" and f.severity == "blocking"}
    assert "$.config.serving.pool" in paths
    blocked = confirmation.model_copy(update={"config": confirmation.config.model_copy(
        update={"blocked_by": "concurrency"})})
    found = [f for f in validate_results(blocked, "c.json").findings
             if f.rule == "confirmation" and f.severity == "blocking"]
    assert [f.json_path for f in found] == ["$.config"] and "no blocks" in found[0].message


def _confirmation(results, plan):  # type: ignore[no-untyped-def]
    runs = campaign_runs([make_sensor()], prompts=("edit",), strategies=("plain", "ngram"),
                         repeats=plan.repeats, decode_s=1.0)
    prompts = [PromptSpec(name="edit", text="fixture prompt edit")]
    results = make_results(runs, prompts=("edit",), strategies=("plain", "ngram"),
                           repeats=plan.repeats, id="speculative-fixture-confirm",
                           experiment="speculative", confirms=plan.confirms,
                           config=campaign_config(plan, prompts))
    # The plan judges slowdown against each condition's earlier runs, as `phase confirm` does
    # while it measures: the runs carry the ratio the validator recomputes.
    judged = [replaced(r, speed_vs_condition=judge(results, r).vs_condition)
              for r in results.runs]
    return replaced(results, runs=judged)


def test_the_confirmation_rule_blocks_anything_but_the_confirmed_condition(
        tmp_path: Path) -> None:
    results = _selection()
    path = write_results(results, tmp_path / "speculative-fixture.json")
    plan = confirmation_plan(_experiment(tmp_path, results), path, pairs=3, here=_here(results))
    good = _confirmation(results, plan)
    assert not [f for f in validate_results(good, "c.json").findings
                if f.rule == "confirmation"]
    # A run of another condition smuggled in; a file that claims another strategy.
    stray = replaced(good.runs[0], id="r0-edit-draft-4", strategy="draft-4", k=4)
    bad = replaced(good, runs=[*good.runs, stray])
    found = [f for f in validate_results(bad, "c.json").findings if f.rule == "confirmation"]
    assert [f.severity for f in found] == ["blocking"]
    assert found[0].json_path == f"$.runs[{len(good.runs)}]"
    assert good.confirms is not None
    other = replaced(good, confirms=Confirms(**{**good.confirms.model_dump(),
                                                "strategy": "draft-4"}))
    found = [f for f in validate_results(other, "c.json").findings if f.rule == "confirmation"]
    assert any(f.json_path == "$.config.strategies" for f in found)
    assert all(f.severity == "blocking" for f in found)


def _datasets(tmp_path: Path, *files):  # type: ignore[no-untyped-def]
    from phase.publish.data.datasets import load_dataset
    from phase.validate import RuleSettings

    tmp_path.mkdir(parents=True, exist_ok=True)
    out = []
    for results, name in files:
        _, ds = load_dataset(write_results(results, tmp_path / name), RuleSettings())
        assert ds is not None
        out.append(ds)
    return out


def test_the_headline_states_the_confirmation_not_the_selection(tmp_path: Path) -> None:
    from phase.publish.data.confirmations import ConfirmationError, attach
    from phase.publish.numbers.confirmed import confirmed

    results = _selection()
    name = "speculative-fixture.json"
    path = write_results(results, tmp_path / name)
    plan = confirmation_plan(_experiment(tmp_path, results), path, pairs=4, here=_here(results))
    confirmation = replaced(_confirmation(results, plan), provenance=results.provenance)
    site, moved = tmp_path / "site", tmp_path / "moved"
    site.mkdir()
    moved.mkdir()
    selection_ds, confirmation_ds = _datasets(
        site, (results, name), (confirmation, "speculative-fixture-confirm.json"))
    assert attach([selection_ds, confirmation_ds]) == {name: confirmation_ds}
    # The confirmation's runs take as long for ngram as for plain: not confirmed, and the
    # sentence gives the selection's 1.67x only as the figure that chose it.
    found = confirmed(selection_ds, confirmation_ds)
    assert found is not None and not found.holds
    sentence = found.sentence()
    assert sentence.startswith("Not confirmed: ngram on edit")
    assert "which are not its evidence" in sentence and "includes 1" in sentence
    # A note's text states the same sentence through confirmation(), escaped for Markdown.
    from phase.publish.notes.figures import Figures
    calls = Figures("fixture", [selection_ds], [], "../", confirmations={name: confirmation_ds})
    assert html.unescape(str(calls.confirmation())) == sentence
    alone = str(Figures("fixture", [selection_ds], [], "../").confirmation())
    assert html.unescape(alone).startswith("Unconfirmed: ngram on edit")
    unconfirmed = confirmed(selection_ds, None)
    assert unconfirmed is not None and unconfirmed.sentence().startswith("Unconfirmed:")
    # The same weights recorded under another name (a file path rather than the embedded
    # model's name) confirm as well; other weights do not.
    renamed = replaced(confirmation, models=[replaced(m, name="test-target-q4.gguf")
                                             for m in confirmation.models])
    again, renamed_ds = _datasets(tmp_path / "renamed", (results, name),
                                  (renamed, "speculative-fixture-confirm.json"))
    assert attach([again, renamed_ds]) == {name: renamed_ds}
    other_weights = replaced(confirmation, models=[replaced(m, sha256="1" * 64)
                                                   for m in confirmation.models])
    again, other_ds = _datasets(tmp_path / "other", (results, name),
                                (other_weights, "speculative-fixture-confirm.json"))
    with pytest.raises(ConfirmationError, match=r"\$\.models: ran other model files"):
        attach([again, other_ds])
    # A selection whose bytes changed since: the confirmation confirms nothing.
    other = replaced(results, status="complete", id="speculative-fixture-b")
    changed, conf = _datasets(moved, (other, name),
                              (confirmation, "speculative-fixture-confirm.json"))
    with pytest.raises(ConfirmationError, match=r"\$\.confirms\.sha256"):
        attach([changed, conf])
