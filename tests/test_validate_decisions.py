"""Issue 30, class 1: `auto`'s recorded decisions are replayed from its trace.

Two kinds of file: the committed campaign with `auto` runs (measured by an older phase), and
an `auto` run written by phase's own AutoProposer over a copy task (a fake draft model and a
fake target whose text is the fixture's), so the replay is held against what auto really
records; each is then altered the way a bug would alter it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from cost_factories import make_profile
from factories import fixture_token_ids, make_model, make_results, make_run, replaced

from phase.costmodel import cost_table
from phase.policy.auto import K_MAX, AutoProposer
from phase.policy.sampled_auto import SampledAuto
from phase.results import FactorSpec, ResultsFile, Run, Step, load_raw
from phase.validate import Finding, validate_results
from phase.validate.rules.decisions import _Earlier

REPO = Path(__file__).resolve().parent.parent
AUTO_CAMPAIGN = REPO / "results" / "speculative-x86_64-2c-2026-11-30-2.json"
TOKENS = 64


def decisions(results: ResultsFile) -> list[Finding]:
    return [f for f in validate_results(results, "r.json").findings if f.rule == "decisions"]


def with_step(results: ResultsFile, run_id: str, j: int, **changes: object) -> ResultsFile:
    runs = []
    for run in results.runs:
        if run.id == run_id:
            trace = list(run.trace)
            trace[j] = replaced(trace[j], **changes)
            run = replaced(run, trace=trace)
        runs.append(run)
    return replaced(results, runs=runs)


# --- a run auto itself decided --------------------------------------------------------------


class _Draft:
    """A draft model that guesses the reference right for `good` tokens, then wrong."""

    def __init__(self, reference: Sequence[int], start: int, good: int) -> None:
        self.reference, self.start, self.good = list(reference), start, good

    def begin(self, prompt: Sequence[int]) -> None:
        pass

    def propose(self, seq: list[int], k: int) -> list[int]:
        done = len(seq) - self.start
        out = list(self.reference[done:done + k])
        if len(out) > self.good:
            out[self.good] = 49151  # a token the reference never has there
        return out + [0] * (k - len(out))


def _prompt(reference: Sequence[int]) -> list[int]:
    return [5, 6, 7, 8, *reference[: TOKENS // 2]]


class _SampledDraft:
    """_Draft behind the sampled draft's interface (phase.decode.sampled.DraftSampler): its
    proposal is the scripted one, whatever the generator."""

    def __init__(self, draft: _Draft) -> None:
        self.draft = draft

    def prepare(self, prompt: Sequence[int]) -> None:
        pass

    def restart(self, prompt: Sequence[int]) -> None:
        pass

    def propose(self, seq: list[int], k: int, rng: object) -> tuple[list[int], None]:
        return self.draft.propose(seq, k), None


def _auto_run(good: int = 3, sampled: bool = False,
              draft_ms: Callable[[int], float] = lambda b: 4.0 + 0.5 * b) -> tuple[Run, object]:
    """An auto run over a copy task: the prompt holds the first half of the text to be
    generated, so n-gram matches exist; the draft guesses `good` tokens right per step.
    `sampled`: decided by the sampled `auto` (phase.policy.sampled_auto), as a sampled run is."""
    profile = make_profile(target=lambda b: 40.0 + 2.0 * b, draft=draft_ms)
    reference = fixture_token_ids(TOKENS)
    prompt = _prompt(reference)
    table = cost_table(profile, len(prompt) + TOKENS // 2)
    draft = _Draft(reference, len(prompt), good)
    rng = np.random.default_rng(0)
    if sampled:
        chooser = SampledAuto(table, _SampledDraft(draft), K_MAX)  # type: ignore[arg-type]
        auto = chooser.auto
        chooser.restart(prompt)

        def propose(seq: list[int], most: int) -> list[int]:
            return chooser.propose(seq, most, rng)[0]
        observe = chooser.observe
    else:
        auto = AutoProposer(table, draft)  # type: ignore[arg-type]
        auto.begin(prompt)
        propose, observe = auto.propose, auto.observe
    seq, steps = list(prompt), []
    while (left := TOKENS - (len(seq) - len(prompt))) > 0:
        proposal = propose(seq, min(16, left - 1))
        want = reference[len(seq) - len(prompt):]
        m = 0
        while m < len(proposal) and proposal[m] == want[m]:
            m += 1
        decision = auto.decisions[-1]
        drafting = decision.proposer == "draft"
        propose_ms = (table.draft_step(len(proposal)) if drafting else 0.0) + table.lookup
        steps.append(Step(proposed=len(proposal), accepted=m, propose_ms=propose_ms,
                          verify_ms=table.target(len(proposal) + 1), **decision.step_fields()))
        observe(len(proposal), m)
        seq.extend(want[: m + 1])
    decode_s = sum(s.propose_ms + s.verify_ms for s in steps) / 1e3 + 0.01
    drafted, accepted = sum(s.proposed for s in steps), sum(s.accepted for s in steps)
    run = make_run(strategy="auto", tokens=TOKENS, decode_s=decode_s, prompt_tokens=len(prompt),
                   trace=steps, steps=len(steps), drafted=drafted, accepted=accepted,
                   acceptance=accepted / drafted, acceptance_reason=None, order=0)
    return run, profile


def _auto_file(good: int = 3, sampled: bool = False, **costs: Callable[[int], float]
               ) -> ResultsFile:
    run, profile = _auto_run(good, sampled, **costs)
    results = make_results([run], sensors=[], strategies=["auto"], repeats=1, tokens=TOKENS,
                           profile=profile, models=[make_model("target"), make_model("draft")])
    return _at_temperature(results, 0.7) if sampled else results


def _at_temperature(results: ResultsFile, temperature: float) -> ResultsFile:
    """The file's runs at this level of a temperature factor (0: greedy)."""
    label = f"temperature={temperature:g}"
    factor = FactorSpec(name="temperature", kind="temperature", levels=[temperature],
                        labels=[f"{temperature:g}"])
    return replaced(results, config=replaced(results.config, factors=[factor]),
                    runs=[replaced(r, id=f"{r.id}-{label}", factors={"temperature": temperature})
                          for r in results.runs])


def test_what_auto_itself_records_replays_clean() -> None:
    results = _auto_file()
    proposers = {s.proposer for s in results.runs[0].trace}
    assert {"draft", "ngram"} <= proposers  # both proposers were chosen somewhere
    assert decisions(results) == []
    assert not validate_results(results, "r.json").blocking


# Draft passes dear enough that pricing the mirror of the verified batch (which the greedy
# draft runs before its next proposal, and the sampled draft does not) changes auto's choices.
DEAR_DRAFT = {"draft_ms": lambda b: 14.0 + 6.0 * b}


def test_a_sampled_auto_run_is_replayed_without_the_greedy_drafts_mirror_pass() -> None:
    sampled = _auto_file(sampled=True, **DEAR_DRAFT)
    greedy = _auto_file(**DEAR_DRAFT)
    assert {"draft"} <= {s.proposer for s in sampled.runs[0].trace}
    assert decisions(sampled) == []
    assert decisions(greedy) == []
    # The mirror pass matters here: the sampled run's trace, read as a greedy run's, is
    # not what the greedy auto would have done, and the replay says where.
    assert [s.proposer for s in sampled.runs[0].trace] != [s.proposer
                                                           for s in greedy.runs[0].trace]
    [found] = decisions(_at_temperature(replaced(sampled, config=replaced(
        sampled.config, factors=[])), 0))
    assert "replayed" in found.message


def _first(results: ResultsFile, proposer: str) -> int:
    """The first step of this proposer that follows a match (so that relabelling it is not
    caught by the missing match alone)."""
    return next(j for j, s in enumerate(results.runs[0].trace)
                if s.proposer == proposer and (s.match_tokens or 0) >= 2)


@pytest.mark.parametrize(
    ("proposer", "changes", "field", "words"),
    [
        # A draft step relabelled as n-gram, the way a bug mixing up decisions would.
        ("draft", {"proposer": "ngram"}, "expected_gain", "expected gain"),
        # An n-gram step claimed by the draft model: its 0 ms of proposing holds no draft pass.
        ("ngram", {"proposer": "draft"}, "proposer", "no draft pass"),
        # The draft model's k is not the replay's.
        ("draft", {"proposed": 1, "accepted": 0}, "proposed", "replayed"),
        # An n-gram proposal with no match behind it.
        ("ngram", {"match_tokens": 0}, "match_tokens", "found no match"),
        # A context length no matcher reports.
        ("ngram", {"match_tokens": 1}, "match_tokens", "matcher reports"),
        # A made-up gain.
        ("ngram", {"expected_gain": 3.0}, "expected_gain", "expected gain"),
        # A draft step's expectation that its replay contradicts.
        ("draft", {"expected_tokens": 1.0}, "proposed", "replayed"),
    ],
)
def test_a_decision_its_trace_contradicts_blocks_at_its_step(
        proposer: str, changes: dict[str, object], field: str, words: str) -> None:
    results = _auto_file()
    j = _first(results, proposer)
    altered = with_step(results, results.runs[0].id, j, **changes)
    found = decisions(altered)
    assert found, changes
    f = found[0]
    assert (f.severity, f.run_id, f.strategy) == ("blocking", results.runs[0].id, "auto")
    assert f.json_path == f"$.runs[0].trace[{j}].{field}" and words in f.message


def test_a_step_that_passed_over_a_better_draft_is_named() -> None:
    results = _auto_file()
    j = _first(results, "draft")
    assert results.profile is not None
    table = cost_table(results.profile, results.runs[0].prompt_tokens + TOKENS // 2)
    # Claims it proposed nothing where the replayed draft candidate was worth more; its
    # gain is a plain step's, as auto would record for `none`.
    run = results.runs[0]
    trace = list(run.trace)
    trace[j] = replaced(trace[j], proposer="none", proposed=0, accepted=0, expected_tokens=1.0,
                        expected_gain=table.plain() / (table.lookup + table.target(1)))
    # The step now yields one token: the run's text stays, its last step takes up the rest.
    lost = run.trace[j].accepted
    trace[-1] = replaced(trace[-1], accepted=trace[-1].accepted + lost,
                         proposed=trace[-1].proposed + lost)
    altered = replaced(results, runs=[replaced(
        run, trace=trace, drafted=sum(s.proposed for s in trace),
        accepted=sum(s.accepted for s in trace),
        acceptance=sum(s.accepted for s in trace) / sum(s.proposed for s in trace))])
    found = decisions(altered)
    assert found and found[0].json_path == f"$.runs[0].trace[{j}].proposer"


def test_a_fixed_strategy_step_carrying_a_decision_is_unexpected() -> None:
    results = make_results(strategies=["plain", "draft-4"], repeats=1, sensors=[])
    run = results.runs[1]
    altered = with_step(results, run.id, 2, proposer="draft", expected_tokens=2.0)
    [f] = decisions(altered)
    assert f.run_id == run.id and f.json_path == "$.runs[1].trace[2].proposer"
    assert "unexpected" in f.message


# --- the committed campaign ----------------------------------------------------------------


def test_the_committed_auto_runs_raise_nothing() -> None:
    assert decisions(load_raw(AUTO_CAMPAIGN)) == []


def _auto_steps(results: ResultsFile) -> list[tuple[int, int, Step]]:
    return [(i, j, s) for i, r in enumerate(results.runs) if r.strategy == "auto"
            for j, s in enumerate(r.trace)]


def test_a_committed_ngram_step_claimed_by_the_draft_model_blocks() -> None:
    results = load_raw(AUTO_CAMPAIGN)
    i, j, _ = next(x for x in _auto_steps(results) if x[2].proposer == "ngram")
    altered = with_step(results, results.runs[i].id, j, proposer="draft")
    [f] = decisions(altered)
    assert f.json_path == f"$.runs[{i}].trace[{j}].proposer" and "no draft pass" in f.message


def test_a_committed_step_hiding_a_match_the_generated_text_holds_blocks() -> None:
    results = load_raw(AUTO_CAMPAIGN)
    for i, j, step in _auto_steps(results):
        run = results.runs[i]
        done = sum(s.accepted + 1 for s in run.trace[:j])
        if step.proposer == "none" and _Earlier(list(run.token_ids)).longest_key(done) >= 2:
            break
    else:
        pytest.fail("no committed auto step follows a repeat in its own generated text")
    altered = with_step(results, run.id, j, match_tokens=0)
    [f] = decisions(altered)
    assert f.json_path == f"$.runs[{i}].trace[{j}].match_tokens" and "at least" in f.message


# --- schema 8: the prompt's token ids recorded, the lookup replayed ---------------------------


def _with_prompt_ids(results: ResultsFile, ids: list[int]) -> ResultsFile:
    refs = [replaced(r, prompt_token_ids=ids) for r in results.references]
    return replaced(results, references=refs)


def _recorded_prompt_file(good: int = 3) -> ResultsFile:
    return _with_prompt_ids(_auto_file(good), _prompt(fixture_token_ids(TOKENS)))


def test_with_prompt_ids_what_auto_recorded_replays_clean() -> None:
    results = _recorded_prompt_file()
    assert decisions(results) == []
    assert not validate_results(results, "r.json").blocking


def test_a_match_inside_the_prompt_is_now_refuted() -> None:
    """The copy task's first matches lie in the prompt: before schema 8 a smaller context
    there could not be refuted; with the prompt's ids the replayed lookup names it."""
    results = _recorded_prompt_file()
    trace = results.runs[0].trace
    j = next(j for j, s in enumerate(trace) if (s.match_tokens or 0) > 2)
    shorter = (trace[j].match_tokens or 0) - 1
    legacy = with_step(_auto_file(), results.runs[0].id, j, match_tokens=shorter)
    assert [f for f in decisions(legacy) if "context" in f.message] == []  # unrefutable then
    [f] = decisions(with_step(results, results.runs[0].id, j, match_tokens=shorter))
    assert f.json_path == f"$.runs[0].trace[{j}].match_tokens"
    assert "replayed" in f.message and f.numbers["replayed"] == trace[j].match_tokens


def test_an_ngram_proposal_the_context_does_not_continue_with_blocks() -> None:
    """An n-gram step claiming more accepted tokens than the matched continuation shares with
    the generated text: a proposal the context does not contain."""
    results = _recorded_prompt_file()
    trace = results.runs[0].trace
    j = next(j for j, s in enumerate(trace)
             if s.proposer == "ngram" and s.accepted < s.proposed)
    altered = with_step(results, results.runs[0].id, j, accepted=trace[j].accepted + 1)
    found = [f for f in decisions(altered) if f.json_path.endswith(f"trace[{j}].accepted")]
    assert found and "not the context's" in found[0].message


def test_prompt_ids_of_another_length_than_the_runs_prompt_block() -> None:
    results = _with_prompt_ids(_auto_file(), [1, 2, 3])
    found = [f for f in validate_results(results, "r.json").findings
             if f.rule == "consistency" and f.json_path.endswith("prompt_tokens")]
    assert found and "records 3 prompt token ids" in found[0].message


def test_a_run_faster_than_its_profile_is_judged_at_its_own_pace() -> None:
    """A profile timed while other work ran, and runs made on a quiet host: every pass three
    times faster than profiled. The draft steps' proposing time is then under half the
    profile's draft cost; judged at the run's own pace (its plain steps), they hold their
    draft passes (its target passes tell the pace). A relabelled n-gram step (no proposing
    time at all) still blocks."""
    results = _auto_file()
    run = results.runs[0]
    fast = [replaced(s, verify_ms=s.verify_ms / 3, propose_ms=s.propose_ms / 3)
            for s in run.trace]
    quick = replaced(results, runs=[replaced(run, trace=fast)])
    assert any(s.proposer == "draft" for s in fast)
    assert decisions(quick) == []
    j = _first(quick, "ngram")
    [f] = decisions(with_step(quick, run.id, j, proposer="draft"))
    assert "no draft pass" in f.message
