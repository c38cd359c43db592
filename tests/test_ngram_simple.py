"""llama.cpp's ngram-simple rule, ported (phase.policy.ngram_simple): each case is worked by
hand from `common_ngram_simple_draft` (common/ngram-map.cpp), and set against phase's own
matcher where the two part."""

from __future__ import annotations

import pytest

from phase.policy.ngram_simple import SimpleNgramProposer, simple_draft
from phase.policy.proposers import NgramProposer
from phase.policy.strategies import parse_strategy


def test_the_most_recent_occurrence_of_the_key_is_copied() -> None:
    # key (size_n 2) = [1, 2]: at 0 (ignored: 0 means no match in the C++), at 4 and at 8;
    # the latest earlier one, at 8, is followed by 7 7 ...
    history = [1, 2, 3, 4, 1, 2, 5, 6, 1, 2, 7, 7, 9, 1]
    assert simple_draft(history, 2, size_n=2, size_m=3) == [7, 7, 9]
    # size_m caps the copy; what is left after the match caps it too
    assert simple_draft(history, 2, size_n=2, size_m=10) == [7, 7, 9, 1]


def test_an_occurrence_at_position_zero_is_no_match() -> None:
    history = [1, 2, 3, 4, 5, 6, 8, 8, 8, 1]
    assert simple_draft(history, 2, size_n=2, size_m=2) == []


def test_fewer_than_size_n_tokens_after_the_match_propose_nothing() -> None:
    # [5, 6] occurs at 9, followed by two tokens (the history's last ones) only
    history = [0, 9, 9, 9, 9, 9, 9, 9, 9, 5, 6, 4, 5]
    assert simple_draft(history, 6, size_n=3, size_m=4) == []
    assert simple_draft(history, 6, size_n=2, size_m=4) == [4, 5]


def test_a_short_history_proposes_nothing() -> None:
    # cur_len must exceed size_n + size_m + 1
    history = [7, 1, 2, 3, 1]  # 5 tokens: one too few for size_n + size_m = 4
    assert simple_draft(history, 2, size_n=2, size_m=2) == []
    assert simple_draft([7, *history], 2, size_n=2, size_m=2) == [3, 1]


def test_it_parts_from_phases_matcher_on_which_occurrence_wins() -> None:
    # [3, 4] occurs after a long shared context (8 9 ... 3 4 -> 10) and, later, after none
    # (0 3 4 -> 11): phase's matcher follows the long context, the C++ rule the latest
    seq = [5, 8, 9, 3, 4, 10, 0, 0, 0, 3, 4, 11, 0, 0, 0, 8, 9, 3, 4]
    simple = SimpleNgramProposer(2, 3)
    simple.begin(seq[:5])
    assert simple.propose(seq, 8) == [11, 0, 0]
    assert simple.propose(seq, 2) == [11, 0]
    assert simple.propose(seq, 0) == []
    own = NgramProposer(2, 4)
    own.begin(seq[:5])
    assert own.propose(seq, 3) == [10, 0, 0]


def test_the_family_builds_it_from_the_campaigns_shortest_key_and_k() -> None:
    strategy = parse_strategy("ngram-simple-8", ngram_n_min=6)
    assert (strategy.label, strategy.k, strategy.ngram_n_min) == ("ngram-simple-8", 8, 6)
    made = strategy.family.proposer(strategy, None, 0)  # needs nothing from the kit
    assert isinstance(made, SimpleNgramProposer) and (made.size_n, made.size_m) == (6, 8)
    assert not strategy.family.samples
    with pytest.raises(ValueError, match="size_n >= 1"):
        SimpleNgramProposer(0, 4)


def test_the_bench_replays_greedy_speculation_over_a_given_output() -> None:
    from bench.ngram_simple_replay import SIZE_N, replay

    # a prompt that repeats a 6-token run followed by 1..8: once the output repeats the run,
    # the rule drafts what followed it, and the output goes on to emit 1..4 then 9
    run = [50 + i for i in range(SIZE_N)]
    prompt = [7, *run, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0]
    out = [*run, 1, 2, 3, 4, 9, 9, 9]
    drafted, kept = replay(prompt, out, 64, lambda t: False)
    assert (drafted, kept) == (8, 4)
    # a budget that leaves room for no draft: none
    assert replay(prompt, out, SIZE_N + 1, lambda t: False) == (0, 0)
