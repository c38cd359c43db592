"""phase.decode logic that needs no model: strategy names, equivalence check, n-gram lookup."""

from __future__ import annotations

import pytest

from phase.base.errors import UsageProblem
from phase.policy.ngram_length import FLOOR, GROW, SHRINK, START, ProposalLength, lengths
from phase.policy.proposers import AdaptiveNgramProposer, NgramProposer
from phase.policy.result import compare_to_plain
from phase.policy.strategies import NGRAM_K, NGRAM_N_MAX, NGRAM_N_MIN, Strategy, parse_strategy


@pytest.mark.parametrize(
    ("text", "name", "k"),
    [("plain", "plain", None), ("draft-4", "draft", 4), ("draft-1", "draft", 1),
     ("draft-16", "draft", 16), ("ngram", "ngram", NGRAM_K), ("ngram-3", "ngram", 3),
     (" draft-2 ", "draft", 2)],
)
def test_parse_strategy_accepts(text: str, name: str, k: int | None) -> None:
    s = parse_strategy(text)
    assert (s.name, s.k) == (name, k)
    assert parse_strategy(s.label) == s


@pytest.mark.parametrize(
    "text", ["draft", "draft-0", "draft--1", "ngram-0", "plain-2", "beam-4", "", "draft-x"]
)
def test_parse_strategy_refuses_with_usage_exit(text: str) -> None:
    with pytest.raises(UsageProblem) as info:
        parse_strategy(text)
    assert info.value.exit_code == 2


def test_strategy_labels_and_ngram_range() -> None:
    assert parse_strategy("ngram").label == "ngram" and parse_strategy("ngram").adaptive
    fixed = parse_strategy("ngram", ngram_adaptive=False)
    assert fixed.label == f"ngram-{NGRAM_K}" and not fixed.adaptive
    assert not parse_strategy("ngram-4").adaptive  # a stated k is always fixed
    with pytest.raises(UsageProblem):
        Strategy("draft", 4, adaptive=True)
    s = parse_strategy("ngram-5", ngram_n_min=1, ngram_n_max=6)
    assert (s.ngram_n_min, s.ngram_n_max) == (1, 6)
    assert (Strategy("ngram", 2).ngram_n_min, Strategy("ngram", 2).ngram_n_max) == (
        NGRAM_N_MIN, NGRAM_N_MAX)
    with pytest.raises(UsageProblem):
        Strategy("ngram", 4, ngram_n_min=3, ngram_n_max=2)
    with pytest.raises(UsageProblem):
        Strategy("plain", 4)


def test_compare_to_plain() -> None:
    assert compare_to_plain([1, 2, 3], [1, 2, 3]) == (True, None)
    assert compare_to_plain([1, 9, 3], [1, 2, 3]) == (False, 1)
    assert compare_to_plain([5, 2, 3], [1, 2, 3]) == (False, 0)
    assert compare_to_plain([1, 2], [1, 2, 3]) == (False, 2)
    assert compare_to_plain((1, 2, 3, 4), [1, 2, 3]) == (False, 3)


def test_ngram_prefers_longest_suffix_and_most_recent_occurrence() -> None:
    p = NgramProposer(1, 3)
    #          0  1  2  3  4  5  6  7  8  9
    history = [7, 1, 2, 3, 8, 9, 2, 3, 4, 5, 1, 2, 3]
    p.begin(history)
    # suffix (1,2,3) last occurred at 1 -> continue with 8, 9, ...; the more recent (2,3) at 6
    # would say 4, 5: the longer match wins.
    assert p.propose(history, 3) == [8, 9, 2]
    seq = [*history, 6, 2, 3]
    # (6,2,3) never occurred before; (2,3) did, at 2, 6 and 11: the most recent (11) is
    # followed by 6, 2.
    assert p.propose(seq, 2) == [6, 2]


def test_ngram_caps_and_misses() -> None:
    p = NgramProposer(2, 2)
    seq = [1, 2, 3, 4, 1, 2]
    p.begin(seq)
    assert p.propose(seq, 10) == [3, 4, 1, 2]  # only what follows, never padded
    assert p.propose(seq, 1) == [3]
    assert p.propose(seq, 0) == []
    q = NgramProposer(2, 2)
    q.begin([1, 2, 3])
    assert q.propose([1, 2, 3], 4) == []  # (2,3) has no earlier occurrence
    assert q.propose([1, 2, 3, 9, 2, 3], 4) == [9, 2, 3]  # incremental indexing of new tokens


def test_ngram_begin_resets_state() -> None:
    p = NgramProposer(2, 2)
    p.begin([1, 2, 5, 1, 2])
    assert p.propose([1, 2, 5, 1, 2], 3) == [5, 1, 2]
    p.begin([1, 2])
    assert p.propose([1, 2], 3) == []


def test_sampled_and_greedy_ngram_copy_from_the_same_occurrence() -> None:
    """A temperature factor must change only how tokens are drawn: with the default range
    (keys 6, 8, 12, 16) an 8-token match that is older than the last few 6-token ones is the
    greedy proposer's choice, so the sampled proposer must index the same keys to make it."""
    import numpy as np

    from phase.policy.sampled_proposers import NgramSampler

    suffix = list(range(1, 9))  # the sequence ends with these 8 tokens
    old = [*suffix, 100, 101]  # long ago: all 8 matched, then 100, 101
    recent = [[90 + i, 91 + i, *suffix[2:], 200 + i, 201 + i] for i in range(5)]  # 6 match
    seq = [*old, *(t for chunk in recent for t in chunk), *suffix]
    greedy = NgramProposer(NGRAM_N_MIN, NGRAM_N_MAX)
    greedy.begin(seq)
    sampled = NgramSampler(NGRAM_N_MIN, NGRAM_N_MAX)
    sampled.restart(seq)
    proposal, rows = sampled.propose(seq, 2, np.random.default_rng(0))
    assert greedy.propose(seq, 2) == [100, 101]
    assert (proposal, rows) == ([100, 101], None)


# --- the top-2 logit gap ------------------------------------------------------------------


def test_top2_gap_is_best_minus_second_and_leaves_the_row_as_it_was() -> None:
    import numpy as np

    from phase.decode.logits import top2_gap

    row = np.array([0.5, 3.25, -1.0, 3.0, 2.0], dtype=np.float32)
    before = row.copy()
    assert top2_gap(row) == pytest.approx(0.25)
    assert np.array_equal(row, before)  # the masked best entry is restored
    assert top2_gap(np.array([1.0, 7.0, 7.0], dtype=np.float32)) == 0.0  # an exact tie


def test_the_adaptive_length_grows_when_kept_whole_and_shrinks_after_a_rejection() -> None:
    length = ProposalLength(16)
    assert length.now == START
    length.observe(0, 0)  # no proposal: no evidence
    assert length.now == START
    length.observe(START, START)
    assert length.now == START + GROW
    length.observe(START + GROW, 1)
    assert length.now == START + GROW - SHRINK
    for _ in range(20):
        length.observe(length.now, length.now)
    assert length.now == 16  # capped at k_max
    for _ in range(20):
        length.observe(length.now, 0)
    assert length.now == FLOOR
    small = ProposalLength(1)
    assert (small.now, small.floor) == (1, 1)
    small.observe(1, 1)
    assert small.now == 1
    with pytest.raises(ValueError):
        ProposalLength(0)


def test_lengths_replays_the_rule_over_a_trace() -> None:
    outcomes = [(4, 4), (0, 0), (6, 6), (8, 2), (7, 7)]
    assert list(lengths(16, outcomes)) == [4, 6, 6, 8, 7]
    # The proposer obeys the same rule: its proposals never exceed the replayed length.
    history = list(range(50)) * 3
    proposer = AdaptiveNgramProposer(2, 8, 16)
    proposer.begin(history[:60])
    seq, seen = history[:60], []
    while len(seq) < len(history) - 1:
        proposal = proposer.propose(seq, min(16, len(history) - len(seq) - 1))
        kept = 0
        while kept < len(proposal) and proposal[kept] == history[len(seq) + kept]:
            kept += 1
        seen.append((len(proposal), kept))
        proposer.observe(len(proposal), kept)
        seq = history[:len(seq) + kept + 1]
    allowed = list(lengths(16, seen))
    assert all(p <= a for (p, _), a in zip(seen, allowed, strict=True))
    assert max(p for p, _ in seen) == 16  # a perfect copy grows to the cap
