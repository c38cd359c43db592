"""The n-gram matcher, auto's online estimates and its decisions, on token lists (no model).

auto's costs come from fixture profiles (tests/cost_factories.py); the target's verdicts are
replayed from a known continuation, as the engine's verification would give them."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from cost_factories import make_profile

from phase.costmodel import cost_table
from phase.policy.auto import AutoProposer, Evidence
from phase.policy.estimates import NgramEstimates, PositionEstimate, ngram_prior
from phase.policy.ngram import NgramMatcher
from phase.policy.proposers import NgramProposer


def test_matcher_prefers_the_longest_context_then_the_latest() -> None:
    m = NgramMatcher(key_ns=(2,))
    #      0  1  2  3  4  5  6  7  8  9 10 11
    seq = [5, 1, 2, 3, 9, 7, 2, 3, 8, 5, 1, 2, 3]
    m.begin(seq)
    found = m.lookup(seq, 3)
    # (2,3) occurs twice before; after index 1-3 the context goes back 4 tokens (5,1,2,3),
    # after 6-7 only 2: the longer context wins even though it is older.
    assert (found.context, found.continuation) == (4, [9, 7, 2])
    assert m.lookup(seq, 3, min_context=5).continuation == []


def test_matcher_ties_go_to_the_latest_occurrence() -> None:
    m = NgramMatcher(key_ns=(2,))
    seq = [1, 2, 3, 4, 2, 3, 5, 9, 2, 3]
    m.begin(seq)
    assert m.lookup(seq, 2).continuation == [5, 9]


def test_matcher_indexes_new_tokens_and_never_matches_the_suffix_itself() -> None:
    m = NgramMatcher(key_ns=(2, 3))
    m.begin([1, 2])
    assert m.lookup([1, 2], 4).continuation == []
    assert m.lookup([1, 2, 7, 1, 2], 4).continuation == [7, 1, 2]
    assert m.lookup([1, 2, 7, 1, 2], 0).continuation == []


def test_fixed_ngram_proposes_only_after_n_min_tokens_of_context() -> None:
    p = NgramProposer(4, 8)
    text = [10, 11, 12, 13, 14, 15, 16, 17]
    p.begin([*text, 99, 10, 11, 12])
    assert p.propose([*text, 99, 10, 11, 12], 4) == []  # 3 tokens of context: too few
    assert p.propose([*text, 99, 10, 11, 12, 13], 4) == [14, 15, 16, 17]


def test_position_estimate_fades_back_to_its_prior() -> None:
    est = PositionEstimate(4, prior=0.8, weight=2.0, decay=0.5)
    for _ in range(5):
        est.observe(4, 0)
    low = est.rates(1)[0]
    assert low < 0.3
    for _ in range(20):
        est.fade()
    assert est.rates(1)[0] == pytest.approx(0.8, abs=0.01)
    assert est.rates(2)[1] == pytest.approx(0.8, abs=0.01)  # never tried: the prior


def test_shadow_scoring_learns_from_guesses_never_proposed() -> None:
    est = NgramEstimates(size=4, decay=1.0)
    seq = list(range(50))
    est.expect(10, 8, [10, 11, 12, 13])  # right
    est.expect(10, 8, [10, 99, 98, 97])  # wrong at its second token
    est.score(seq[:11])  # one token known so far, right for both: both still pending
    assert len(est.pending) == 2
    est.score(seq)
    assert not est.pending
    rates = est.rates(8, 4)
    prior = ngram_prior(8)
    assert rates[0] == pytest.approx((2 + prior) / (2 + 1))
    assert rates[1] == pytest.approx((1 + prior) / (2 + 1))


def _replay(auto: AutoProposer, prompt: list[int], truth: list[int]) -> list[tuple[int, int]]:
    """Run auto's proposals against a known continuation, as verification would judge them."""
    auto.begin(prompt)
    seq = list(prompt)
    steps = []
    while len(seq) - len(prompt) < len(truth):
        done = len(seq) - len(prompt)
        proposal = auto.propose(seq, len(truth) - done - 1)
        m = 0
        while m < len(proposal) and proposal[m] == truth[done + m]:
            m += 1
        seq.extend(truth[done:done + m + 1])
        auto.observe(len(proposal), m)
        steps.append((len(proposal), m))
    return steps


def _short_copying_requests(n: int, tokens: int) -> list[tuple[list[int], list[int]]]:
    """Requests as a serving run sends them: each a fresh prompt, and a short output made of
    8-token pieces copied from anywhere in it, each followed by one new token."""
    rng = random.Random(3)
    requests = []
    for _ in range(n):
        prompt = [rng.randrange(1000) for _ in range(60)]
        truth: list[int] = []
        while len(truth) < tokens:
            start = rng.randrange(50)
            truth += [*prompt[start:start + 8], rng.randrange(1000, 2000)]
        requests.append((prompt, truth[:tokens]))
    return requests


def test_autos_sharing_evidence_learn_from_the_requests_before_them() -> None:
    """A 32-token request is over before its own shadow scoring lifts the n-gram estimates off
    their modest priors, so an auto that learns alone stays near plain decoding on every
    request; autos sharing one Evidence (as the batched decoder's requests do) start later
    requests from what earlier ones learned, and copy more."""
    table = cost_table(make_profile(lambda b: 11.0 + 30.0 * b), 100)
    requests = _short_copying_requests(12, 32)
    alone = [_replay(AutoProposer(table, None), p, t) for p, t in requests]
    evidence = Evidence.fresh(16)
    shared = [_replay(AutoProposer(table, None, evidence=evidence), p, t) for p, t in requests]
    # The first request has nothing before it: the same steps either way.
    assert shared[0] == alone[0]
    later_alone = sum(len(steps) for steps in alone[4:])
    later_shared = sum(len(steps) for steps in shared[4:])
    assert later_shared < 0.8 * later_alone
    # What the evidence holds survives a request's begin; an auto of its own starts afresh.
    # (A 2-token match here is the start of an 8-token piece: its next token is right.)
    prior = ngram_prior(2)
    assert evidence.ngram[1].rates(1)[0] > prior + 0.3
    fresh = AutoProposer(table, None)
    fresh.begin(requests[0][0])
    assert fresh.ngram.rates(2, 1)[0] == pytest.approx(prior)


def test_auto_copies_where_copying_pays_and_stays_plain_elsewhere() -> None:
    # A CPU-like curve: every row costs most of a plain step.
    table = cost_table(make_profile(lambda b: 11.0 + 30.0 * b), 100)
    rng = random.Random(0)
    source = [rng.randrange(1000) for _ in range(120)]
    copied = _replay(AutoProposer(table, None), source, source[:100])
    assert sum(m for _, m in copied) > 60  # most of the copy came from accepted guesses
    fresh = [rng.randrange(1000, 2000) for _ in range(100)]
    plain = _replay(AutoProposer(table, None), source, fresh)
    assert all(p == 0 for p, _ in plain)  # nothing recurs: never a wasted verification


def test_auto_records_one_decision_per_step_with_its_expected_value() -> None:
    table = cost_table(make_profile(lambda b: 11.0 + 30.0 * b), 100)
    auto = AutoProposer(table, None)
    source = list(range(200, 260))
    steps = _replay(auto, source, source[:40])
    assert len(auto.decisions) == len(steps)
    for (proposed, _), d in zip(steps, auto.decisions, strict=True):
        assert d.k == proposed
        assert d.proposer == ("none" if proposed == 0 else "ngram")
        if d.proposer == "ngram":
            assert d.match_tokens >= 1 and d.expected_tokens > 1.0
            assert d.expected_gain > 1.0  # chosen because it beats a plain step
        else:
            assert d.expected_tokens == 1.0


def test_auto_proposes_longer_where_verification_is_cheap() -> None:
    rng = random.Random(1)
    source = [rng.randrange(1000) for _ in range(150)]
    cpu = AutoProposer(cost_table(make_profile(lambda b: 11.0 + 30.0 * b), 100), None)
    gpu = AutoProposer(cost_table(make_profile(lambda b: 10.0 + 0.2 * b), 100), None)
    _replay(cpu, source, source[:120])
    _replay(gpu, source, source[:120])
    # Before the evidence is in (the first proposal, at its prior), and on average.
    first = [next(d.k for d in a.decisions if d.k) for a in (cpu, gpu)]
    mean = [sum(d.k for d in a.decisions) / len(a.decisions) for a in (cpu, gpu)]
    assert first[1] > first[0]
    assert mean[1] > mean[0]


def _replay_at(table_curve: Callable[[int], float], requests: int | None) -> list[tuple[int, int]]:
    """auto's steps on a verbatim copy, priced in a batch of `requests` plain requests (None:
    the one-request pricing, no at_batch)."""
    auto = AutoProposer(cost_table(make_profile(table_curve), 100), None)
    rng = random.Random(0)
    source = [rng.randrange(1000) for _ in range(120)]
    if requests is not None:
        auto.at_batch(requests, requests)  # kept across the run: every step sees this batch
    return _replay(auto, source, source[:100])


def test_auto_proposes_less_as_the_batch_grows_where_rows_cost_nearly_a_pass() -> None:
    cpu = lambda b: 11.0 + 30.0 * b  # noqa: E731  # a row costs most of a plain step
    gpu = lambda b: 10.0 + 0.2 * b  # noqa: E731  # rows are nearly free
    # One request in a batch is priced exactly as the one-request loop prices it.
    assert _replay_at(cpu, 1) == _replay_at(cpu, None)
    proposed = {n: sum(p for p, _ in _replay_at(cpu, n)) for n in (1, 2, 4, 8, 16)}
    # A plain step's share of the pass falls as requests join while a row's cost does not,
    # so each guess must be likelier to pay: shorter proposals at every larger batch.
    assert all(proposed[a] > proposed[b] for a, b in zip((1, 2, 4, 8), (2, 4, 8, 16), strict=True))
    assert proposed[16] < 0.5 * proposed[1]
    flat = [sum(p for p, _ in _replay_at(gpu, n)) for n in (1, 16)]
    assert min(flat) >= 0.95 * max(flat)  # where rows are nearly free, batching changes little


def test_auto_refuses_a_batch_that_carries_fewer_tokens_than_requests() -> None:
    auto = AutoProposer(cost_table(make_profile(), 100), None)
    with pytest.raises(ValueError, match="carrying"):
        auto.at_batch(4, 3)


class _CountingDraft:
    """A drafter that records what it was asked and always guesses the same token."""

    def __init__(self) -> None:
        self.begun: list[int] = []
        self.asked: list[tuple[int, int]] = []

    def begin(self, prompt: list[int]) -> None:
        self.begun.append(len(prompt))

    def restart(self, prompt: list[int]) -> None:
        self.begun.append(len(prompt))

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        self.asked.append((len(seq), max_tokens))
        return [7] * max_tokens


def _first_draft_k(lazy: bool, prompt_len: int) -> tuple[_CountingDraft, int]:
    """auto's first decision on a fresh prompt with no n-gram match, and its drafter."""
    # A draft pass costs 1 ms + 1 ms per token: a long prompt's catch-up is costly.
    table = cost_table(make_profile(lambda b: 20.0 + 2.0 * b, lambda b: 1.0 + 1.0 * b), 100)
    draft = _CountingDraft()
    auto = AutoProposer(table, draft, mirrors=False, lazy_draft=lazy)
    prompt = list(range(prompt_len))  # no token repeats: the n-gram matcher finds nothing
    auto.begin(prompt)
    auto.propose(prompt, 8)
    return draft, auto.decisions[-1].k if auto.decisions[-1].proposer == "draft" else 0


def test_lazy_draft_reads_no_prompt_and_prices_its_catch_up() -> None:
    eager, k_eager = _first_draft_k(lazy=False, prompt_len=200)
    lazy, k_lazy = _first_draft_k(lazy=True, prompt_len=200)
    assert eager.begun == [200] and lazy.begun == []
    # Eager: the prompt is already read, so drafting at the prior pays. Lazy: the first
    # draft must read 200 tokens first (~201 ms against a 22 ms plain step): not worth it.
    assert k_eager > 0 and eager.asked
    assert k_lazy == 0 and not lazy.asked
    # A short prompt's catch-up is cheap, so the lazy draft still drafts at once.
    short, k_short = _first_draft_k(lazy=True, prompt_len=3)
    assert short.begun == [] and k_short > 0 and short.asked == [(3, k_short)]


def test_a_batched_decoders_requests_share_one_evidence_greedy_or_sampled() -> None:
    """Every request's auto in one decoder reads and feeds the same estimates, sampled or
    greedy; another decoder (another run) starts from the priors."""
    from phase.decode.batched import SlotProposers
    from phase.policy.sampling import SamplingSettings

    table = cost_table(make_profile(lambda b: 11.0 + 30.0 * b), 100)
    for settings in (None, SamplingSettings(temperature=0.7, seed=1)):
        run: dict[int, Evidence] = {}
        a, b = (SlotProposers(None, slot, lambda _kv: table, settings, run).auto(100, 8)
                for slot in (0, 1))
        other = SlotProposers(None, 0, lambda _kv: table, settings, {}).auto(100, 8)
        first, second, third = (p if settings is None else p.auto for p in (a, b, other))
        assert first.ngram.buckets is second.ngram.buckets
        assert first.draft_rates is second.draft_rates
        assert third.ngram.buckets is not first.ngram.buckets
