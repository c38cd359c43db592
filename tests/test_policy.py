"""The decoding policy on its own (phase.policy): greedy verification, rejection sampling,
proposers, auto's choice and the run's accounting, driven by scripted logits and scripted
token streams as the model would hand them. No model file: every expected output is exact.

A scripted target is a known greedy continuation: row i of a step's verification pass has
the argmax the target would give after the step's i-th verified token."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from cost_factories import make_profile

from phase.costmodel import cost_table
from phase.decode.loops import Divergence
from phase.decode.timed import Timed, decode_result
from phase.policy.acceptance import greedy_verdict
from phase.policy.auto import AutoProposer, Decision
from phase.policy.proposers import AdaptiveNgramProposer, NgramProposer, Proposer
from phase.policy.sampled_auto import SampledAuto
from phase.policy.sampling import SamplingSettings, distribution
from phase.policy.speculative_sampling import Rows, Verdict, rejection
from phase.policy.strategies import parse_strategy

# -- greedy verification --------------------------------------------------------------------


def _rows(argmaxes: Sequence[int]) -> tuple[list[int], object]:
    """A scripted verification pass: row i's argmax, and the rows the verdict read."""
    read: list[int] = []

    def argmax(i: int) -> int:
        read.append(i)
        return argmaxes[i]

    return read, argmax


@pytest.mark.parametrize(("proposal", "argmaxes", "verdict", "rows_read"), [
    ([5, 6, 7], [5, 6, 9, 4], Verdict(2, [5, 6, 9]), [0, 1, 2]),  # kept up to the mismatch
    ([5, 6], [5, 6, 8], Verdict(2, [5, 6, 8]), [0, 1, 2]),  # all kept, then the bonus
    ([3, 6], [5, 6, 8], Verdict(0, [5]), [0]),  # the first guess wrong: the target's own
    ([], [5], Verdict(0, [5]), [0]),  # no proposal: a plain step
])
def test_greedy_verdict_keeps_the_agreeing_prefix_then_the_targets_token(
        proposal: list[int], argmaxes: list[int], verdict: Verdict,
        rows_read: list[int]) -> None:
    read, argmax = _rows(argmaxes)
    assert greedy_verdict(proposal, argmax) == verdict  # type: ignore[arg-type]
    assert read == rows_read  # no row past the first disagreement is read


def _drive(proposer: Proposer, prompt: list[int], text: list[int], n: int,
           k: int) -> tuple[list[int], list[tuple[int, int]]]:
    """speculate_loop's steps against a scripted target whose greedy continuation is `text`:
    what is emitted, and (proposed, accepted) per step."""
    seq = list(prompt)
    steps: list[tuple[int, int]] = []
    proposer.begin(prompt)
    while (remaining := n - (len(seq) - len(prompt))) > 0:
        limit = min(k, remaining - 1)
        proposal = list(proposer.propose(seq, limit))[:limit]
        done = len(seq) - len(prompt)
        verdict = greedy_verdict(proposal, lambda i, done=done: text[done + i])
        seq.extend(verdict.tokens[:remaining])
        steps.append((len(proposal), verdict.accepted))
        observe = getattr(proposer, "observe", None)
        if observe is not None:
            observe(len(proposal), verdict.accepted)
    return seq[len(prompt):], steps


class _Scripted:
    """A draft that knows the continuation and is right for its first `right` tokens of each
    proposal (then wrong): the Drafter auto drives, without a model."""

    def __init__(self, prompt: list[int], text: list[int], right: int) -> None:
        self.full, self.right = [*prompt, *text], right
        self.begun: list[int] = []

    def begin(self, prompt: Sequence[int]) -> None:
        self.begun.append(len(prompt))

    def restart(self, prompt: Sequence[int]) -> None:
        self.begun.append(len(prompt))

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        out = self.full[len(seq):len(seq) + max_tokens]
        return [t if i < self.right else t + 1 for i, t in enumerate(out)]


PROMPT = [11, 12, 13, 14, 15, 16, 17, 18] * 3
TEXT = [11, 12, 13, 14, 15, 16, 17, 18] * 4 + list(range(300, 340))


def _auto(right: int, draft_ms: float) -> tuple[AutoProposer, _Scripted]:
    table = cost_table(make_profile(lambda b: 11.0 + 30.0 * b, lambda b: draft_ms * b), 100)
    draft = _Scripted(PROMPT, TEXT, right)
    return AutoProposer(table, draft, k_max=8), draft


@pytest.mark.parametrize("make", [
    lambda: NgramProposer(2, 4),
    lambda: AdaptiveNgramProposer(2, 4, 8),
    lambda: _auto(right=99, draft_ms=0.05)[0],
    lambda: _auto(right=0, draft_ms=0.05)[0],
])
def test_every_proposer_emits_exactly_the_targets_greedy_text(make: object) -> None:
    emitted, steps = _drive(make(), PROMPT, TEXT, 60, 8)  # type: ignore[operator]
    assert emitted == TEXT[:60]
    assert sum(1 + a for _, a in steps) == 60
    assert all(0 <= a <= p <= 8 for p, a in steps)


def test_the_ngram_proposer_copies_the_repeating_prompt() -> None:
    emitted, steps = _drive(NgramProposer(2, 4), PROMPT, TEXT, 32, 4)
    assert emitted == TEXT[:32]
    # The text goes on repeating the prompt's period: every proposal is the next 4 tokens,
    # kept whole (5 tokens a step), until the last step, capped at what remains minus one.
    assert steps == [(4, 4)] * 6 + [(1, 1)]


def test_auto_drafts_where_the_draft_is_right_and_cheap() -> None:
    auto, draft = _auto(right=99, draft_ms=0.05)
    _, steps = _drive(auto, PROMPT, TEXT, 60, 8)
    assert draft.begun == [len(PROMPT)]
    choices = [d.proposer for d in auto.decisions]
    assert len(choices) == len(steps)
    # Past the prompt's repeats nothing recurs: every step there is the draft's, kept whole.
    tail = [(d, s) for d, s in zip(auto.decisions, steps, strict=True)][-5:]
    assert all(d.proposer == "draft" and s[0] == s[1] > 0 for d, s in tail)


def test_auto_stops_drafting_after_a_draft_that_is_always_wrong() -> None:
    auto, _ = _auto(right=0, draft_ms=0.05)
    _, steps = _drive(auto, PROMPT, TEXT[:32] + list(range(300, 400)), 80, 8)
    drafted = [i for i, d in enumerate(auto.decisions) if d.proposer == "draft"]
    assert drafted  # its prior makes it worth a try where drafting is this cheap
    assert all(steps[i][1] == 0 for i in drafted)  # never right
    assert len(drafted) <= 3  # a few rejections rule it out for the rest of this run


def test_restart_starts_auto_afresh_with_the_drafts_prompt_cache_kept() -> None:
    auto, draft = _auto(right=99, draft_ms=0.05)
    first, steps = _drive(auto, PROMPT, TEXT, 40, 8)
    decisions = list(auto.decisions)
    auto.restart(PROMPT)
    again: list[Decision] = []
    seq = list(PROMPT)
    for (proposed, accepted), expected in zip(steps, decisions, strict=True):
        auto.propose(seq, min(8, 40 - (len(seq) - len(PROMPT)) - 1))
        again.append(auto.decisions[-1])
        assert auto.decisions[-1] == expected
        auto.observe(proposed, accepted)
        seq.extend(TEXT[len(seq) - len(PROMPT):len(seq) - len(PROMPT) + accepted + 1])
    assert draft.begun == [len(PROMPT), len(PROMPT)]
    assert seq[len(PROMPT):] == first


# -- rejection sampling on scripted logits --------------------------------------------------

ONE_HOT = SamplingSettings(temperature=1.0, top_k=1)  # p is a point mass on the argmax


def _p(*rows: list[float]) -> list[np.ndarray]:
    return [distribution(np.array(r, dtype=np.float32), ONE_HOT) for r in rows]


@pytest.mark.parametrize("seed", range(5))
def test_rejection_on_point_mass_logits_is_the_greedy_verdict(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = _p([0, 3, 1, 0], [2, 0, 0, 5], [9, 1, 0, 0])  # argmaxes 1, 3, 0
    assert rejection(p, p[:2], [1, 3], rng) == Verdict(2, [1, 3, 0])  # q = p: all kept
    assert rejection(p, None, [1, 2], rng) == Verdict(1, [1, 3])  # p(2) = 0 at row 1
    assert rejection(p, None, [2], rng) == Verdict(0, [1])
    assert greedy_verdict([1, 2], [1, 3, 0].__getitem__) == Verdict(1, [1, 3])


def test_rejection_residual_never_emits_what_the_draft_over_rates() -> None:
    p = [np.array([0.5, 0.5, 0.0]), np.array([1.0, 0.0, 0.0])]
    q: Rows = [np.array([0.0, 1.0, 0.0])]  # proposes 1, which p rates at only half
    emitted = {rejection(p, q, [1], np.random.default_rng(s)).tokens[0] for s in range(64)}
    # Kept (1) or rejected and drawn from max(0, p - q) = [0.5, 0, 0]: never 2.
    assert emitted == {0, 1}


class _ScriptedSampler:
    """A sampled draft with fixed proposals and rows: SampledAuto's draft, without a model."""

    def __init__(self) -> None:
        self.rows: Rows = [np.array([0.0, 1.0]), np.array([0.0, 1.0])]

    def prepare(self, prompt: Sequence[int]) -> None:
        pass

    def restart(self, prompt: Sequence[int]) -> None:
        pass

    def propose(self, seq: list[int], max_tokens: int,
                rng: np.random.Generator) -> tuple[list[int], Rows | None]:
        return [1] * max_tokens, self.rows[:max_tokens]


def test_sampled_auto_hands_on_the_drafts_rows_only_when_it_drafts() -> None:
    table = cost_table(make_profile(lambda b: 11.0 + 30.0 * b, lambda b: 0.05 * b), 100)
    auto = SampledAuto(table, _ScriptedSampler(), k_max=2)
    auto.restart([7, 8, 9])
    rng = np.random.default_rng(0)
    for _ in range(6):
        tokens, rows = auto.propose([7, 8, 9], 2, rng)
        chose = auto.decisions[-1].proposer
        if chose == "draft":
            assert rows is not None and len(rows) == len(tokens) == auto.decisions[-1].k
        else:
            assert rows is None
        auto.observe(len(tokens), len(tokens))
    assert "draft" in [d.proposer for d in auto.decisions]


# -- accounting -----------------------------------------------------------------------------


def test_the_result_counts_what_the_trace_says() -> None:
    timed = Timed(generated=[1, 2, 3, 4, 5, 6], raw_trace=[(3, 2, 0.5, 2.0), (4, 1, 0.5, 2.5),
                                                           (0, 0, 0.1, 1.0)],
                  decode_s=0.5, cpu_s=0.4, started_unix_s=10.0, ended_unix_s=10.5, gaps=None,
                  divergence=Divergence(4, 0.25), overridden=None)
    decisions = [Decision("draft", 3, 2.5, 1.4, 0), Decision("ngram", 4, 2.0, 1.2, 3),
                 Decision("none", 0, 1.0, 1.0, 0)]
    r = decode_result(parse_strategy("auto"), [9, 9, 9], timed, 9.0, 0.01, decisions, "text",
                      (2, 3))
    assert (r.steps, r.drafted, r.accepted) == (3, 7, 3)
    assert r.acceptance == pytest.approx(3 / 7)
    assert r.tokens_per_s == pytest.approx(12.0)
    assert [s.proposer for s in r.trace] == ["draft", "ngram", "none"]
    assert [(s.proposed, s.accepted) for s in r.trace] == [(3, 2), (4, 1), (0, 0)]
    assert (r.divergence_index, r.divergence_gap) == (4, 0.25)
    assert (r.n_threads, r.n_threads_batch, r.prompt_tokens) == (2, 3, 3)


def test_plain_and_proposal_free_runs_say_why_they_have_no_acceptance() -> None:
    timed = Timed([1, 2], [(0, 0, 0.0, 1.0)] * 2, 0.1, 0.1, 0.0, 0.1, None, None, None)
    plain = decode_result(parse_strategy("plain"), [1], timed, 0.0, 0.0, None, "", (1, 1))
    assert plain.acceptance is None and plain.acceptance_reason is not None
    assert "plain" in plain.acceptance_reason
    ngram = decode_result(parse_strategy("ngram"), [1], timed, 0.0, 0.0, None, "", (1, 1))
    assert ngram.acceptance is None and ngram.acceptance_reason is not None
    assert "no tokens were proposed" in ngram.acceptance_reason
