"""The decoding engine on the real test model (SmolLM2-135M through real llama-cpp-python).

Models load once per module; generations are short. One thread keeps runs robust on a
shared CPU (OpenMP threads that lose their core spin); no assertion here depends on time.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator, Sequence
from difflib import SequenceMatcher
from pathlib import Path

import pytest

from phase.base.errors import PhaseError, UsageProblem
from phase.decode import (
    Engine,
    IncompatibleVocab,
    VocabInfo,
    check_compatible,
)
from phase.policy.ngram_length import START, lengths
from phase.policy.proposers import Proposer
from phase.policy.result import DecodeResult, compare_to_plain
from phase.policy.strategies import Strategy, parse_strategy

pytestmark = pytest.mark.model

N = 40
STORY = "Write a short story about a lighthouse keeper."
PASSAGE = (
    "Once upon a time, in a small village by the sea, there lived an old fisherman named Tom. "
    "Every morning he rowed his little boat out past the rocks, cast his nets, and waited "
    "patiently for the fish to come. His wife, Mary, baked bread and sold it at the market."
)
REPEAT = f"Repeat the following text exactly, word for word:\n\n{PASSAGE}"


@pytest.fixture(scope="module")
def engine(test_model_path: Path) -> Iterator[Engine]:
    # draft = target: same weights, separate context and KV cache
    with Engine(test_model_path, test_model_path, n_ctx=512, n_threads=1) as eng:
        yield eng


@pytest.fixture(scope="module")
def small(test_model_path: Path) -> Iterator[Engine]:
    """Target only, with a tiny context: for limits and refusals."""
    with Engine(test_model_path, n_ctx=64, n_threads=1) as eng:
        yield eng


@pytest.fixture(scope="module")
def story(engine: Engine) -> list[int]:
    return engine.format_prompt(STORY)


@pytest.fixture(scope="module")
def plain_story(engine: Engine, story: list[int]) -> DecodeResult:
    return engine.run(story, parse_strategy("plain"), N)


def assert_accounting(r: DecodeResult, n: int, k: int) -> None:
    assert len(r.token_ids) == n and r.tokens == n
    assert len(r.trace) == r.steps
    assert r.drafted == sum(s.proposed for s in r.trace)
    assert r.accepted == sum(s.accepted for s in r.trace)
    assert 0 <= r.accepted <= r.drafted
    assert r.steps * (k + 1) >= n
    # each step yields its accepted tokens plus one from the target
    assert r.accepted + r.steps == n
    assert all(0 <= s.accepted <= s.proposed <= k for s in r.trace)
    assert all(s.propose_ms >= 0 and s.verify_ms > 0 for s in r.trace)
    assert r.decode_s > 0 and r.prefill_s >= 0 and r.cpu_s >= 0
    assert r.tokens_per_s == pytest.approx(n / r.decode_s)
    assert r.started_unix_s <= r.decode_started_unix_s <= r.decode_ended_unix_s
    assert r.decode_ended_unix_s <= r.ended_unix_s
    if r.drafted:
        assert r.acceptance == pytest.approx(r.accepted / r.drafted)
        assert r.acceptance_reason is None
    else:
        assert r.acceptance is None and r.acceptance_reason


def test_model_info_and_system_info(engine: Engine) -> None:
    info = engine.model_info("target")
    assert info["architecture"] == "llama"
    assert info["quant"] == "Q4_1"
    assert info["n_vocab"] == 49152
    assert engine.model_info("draft")["n_vocab"] == 49152
    assert "llama-cpp-python" in engine.system_info()
    with pytest.raises(UsageProblem):
        engine.model_info("oracle")


def test_logits_rows_are_copies_that_outlive_the_next_pass(engine: Engine,
                                                           story: list[int]) -> None:
    target = engine.target
    target.clear()
    target.decode(story, 0, 2)
    rows = [target.logits(0), target.logits(1)]
    assert [int(r.argmax()) for r in rows] == [target.argmax(0), target.argmax(1)]
    assert rows[1].shape == (target.n_vocab,)
    before = rows[0].tolist()
    after_next = target.decode_one(int(rows[1].argmax()), len(story))
    now = target.logits(0)  # the one-token pass wrote its row where row 0 was
    assert now.tolist() != before and int(now.argmax()) == after_next
    assert rows[0].tolist() == before  # the copy kept the row the buffer no longer holds
    target.clear()


def test_format_prompt_applies_the_chat_template(engine: Engine, story: list[int]) -> None:
    raw = engine.format_prompt(STORY, chat_template=False)
    shown = engine.detokenize(story)
    assert STORY in shown and "<|im_start|>user" in shown
    assert shown.rstrip().endswith("<|im_start|>assistant")
    assert engine.detokenize(raw).strip() == STORY
    assert len(raw) < len(story)


def test_plain(engine: Engine, story: list[int], plain_story: DecodeResult) -> None:
    r = plain_story
    assert_accounting(r, N, 1)
    assert r.steps == N and r.drafted == 0 and r.accepted == 0
    assert r.acceptance is None and "plain" in (r.acceptance_reason or "")
    assert r.strategy == "plain" and r.k is None
    assert r.prompt_tokens == len(story)
    assert r.text == engine.detokenize(r.token_ids) and r.text.strip()


def test_runs_are_independent(engine: Engine, story: list[int], plain_story: DecodeResult) -> None:
    # a different prompt in between must leave nothing behind in either KV cache
    engine.run(engine.format_prompt("Name three colours."), parse_strategy("draft-3"), 12)
    again = engine.run(story, parse_strategy("plain"), N)
    assert again.token_ids == plain_story.token_ids


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_draft_equal_to_target_accepts_everything(
    engine: Engine, story: list[int], plain_story: DecodeResult, k: int
) -> None:
    r = engine.run(story, parse_strategy(f"draft-{k}"), N)
    assert_accounting(r, N, k)
    assert compare_to_plain(r.token_ids, plain_story.token_ids) == (True, None)
    assert r.acceptance == 1.0 and r.accepted == r.drafted
    # every step yields min(k, remaining - 1) + 1 tokens
    assert r.steps == math.ceil(N / (k + 1))
    assert r.drafted == N - r.steps
    assert r.strategy == f"draft-{k}" and r.k == k


class CorruptEveryThird:
    """Wraps the real draft proposer and spoils one token of every third proposal."""

    def __init__(self, inner: Proposer, n_vocab: int) -> None:
        self.inner, self.n_vocab, self.calls = inner, n_vocab, 0

    def begin(self, prompt: Sequence[int]) -> None:
        self.calls = 0
        self.inner.begin(prompt)

    def propose(self, seq: list[int], max_tokens: int) -> list[int]:
        out = list(self.inner.propose(seq, max_tokens))
        self.calls += 1
        if self.calls % 3 == 0 and out:
            i = min(1, len(out) - 1)
            out[i] = (out[i] + 1) % self.n_vocab
        return out


def expected_counts(n: int, k: int) -> tuple[int, int, int]:
    """(steps, drafted, accepted) when the draft is always right except every third call,
    whose token min(1, len - 1) is wrong."""
    steps = drafted = accepted = calls = 0
    remaining = n
    while remaining > 0:
        limit = min(k, remaining - 1)
        m = 0
        if limit > 0:
            calls += 1
            m = min(1, limit - 1) if calls % 3 == 0 else limit
        steps, drafted, accepted = steps + 1, drafted + limit, accepted + m
        remaining -= m + 1
    return steps, drafted, accepted


@pytest.mark.parametrize("k", [1, 4])
def test_rejections_roll_back_both_caches(
    engine: Engine, story: list[int], plain_story: DecodeResult, k: int
) -> None:
    strategy = parse_strategy(f"draft-{k}")
    inner = engine.proposer_for(strategy)
    assert inner is not None
    double = CorruptEveryThird(inner, int(engine.model_info("target")["n_vocab"]))
    r = engine.run(story, strategy, N, proposer=double)
    assert_accounting(r, N, k)
    assert compare_to_plain(r.token_ids, plain_story.token_ids) == (True, None)
    assert (r.steps, r.drafted, r.accepted) == expected_counts(N, k)
    assert r.accepted < r.drafted


def test_ngram_on_a_copy_task_accepts_most(engine: Engine) -> None:
    prompt = engine.format_prompt(REPEAT)
    plain = engine.run(prompt, parse_strategy("plain"), N)
    # The model copies long stretches of the passage (on an AVX2-only host it reorders the
    # opening words, on others it starts verbatim): a task for the n-gram proposer either way.
    common = SequenceMatcher(None, plain.text, PASSAGE, autojunk=False)
    assert common.find_longest_match().size >= 40, plain.text
    r = engine.run(prompt, parse_strategy("ngram"), N)
    assert_accounting(r, N, r.k or 0)
    assert compare_to_plain(r.token_ids, plain.token_ids) == (True, None)
    assert r.acceptance is not None and r.acceptance >= 0.75
    # Fewer target passes than tokens by a wide margin (plain needs N): 20 of 40 where the
    # model copies from the first word, 26 on the AVX2 host whose copy starts reordered.
    assert r.steps <= 0.7 * N
    # The adaptive length: every step within the length its earlier steps left, and a copy
    # kept whole lets it grow past where it starts.
    outcomes = [(s.proposed, s.accepted) for s in r.trace]
    allowed = list(lengths(r.k or 0, outcomes))
    assert all(p <= a for (p, _), a in zip(outcomes, allowed, strict=True))
    assert max(p for p, _ in outcomes) > START
    fixed = engine.run(prompt, parse_strategy("ngram-4"), N)
    assert max(s.proposed for s in fixed.trace) <= 4
    assert compare_to_plain(fixed.token_ids, plain.token_ids) == (True, None)


def test_ngram_without_matches_is_plain_with_no_acceptance(
    engine: Engine, story: list[int], plain_story: DecodeResult
) -> None:
    # a 40-token suffix never recurs in a short story: nothing is ever proposed
    r = engine.run(story, Strategy("ngram", 4, ngram_n_min=40, ngram_n_max=40), N)
    assert_accounting(r, N, 4)
    assert r.drafted == 0 and r.steps == N
    assert r.acceptance is None and "no tokens" in (r.acceptance_reason or "")
    assert r.token_ids == plain_story.token_ids


def test_callbacks_bracket_the_decode_window(engine: Engine, story: list[int]) -> None:
    events: list[tuple[str, float]] = []
    r = engine.run(
        story, parse_strategy("draft-2"), 8,
        on_decode_start=lambda: events.append(("start", time.time())),
        on_decode_end=lambda: events.append(("end", time.time())),
    )
    assert [e for e, _ in events] == ["start", "end"]
    (_, start), (_, end) = events
    assert r.started_unix_s <= start <= r.decode_started_unix_s
    assert r.decode_ended_unix_s <= end <= r.ended_unix_s


def test_one_token_and_one_token_prompt(engine: Engine) -> None:
    one = engine.format_prompt("Hi", chat_template=False)[-1:]
    for name in ("plain", "draft-4", "ngram"):
        r = engine.run(one, parse_strategy(name), 1)
        assert r.tokens == 1 and r.steps == 1 and r.drafted == 0


def test_prompt_plus_tokens_must_fit_the_context(small: Engine, story: list[int]) -> None:
    prompt = story[:50]
    # llama.cpp rounds the KV cache up to 256 but caps the batch at the 64 asked for: a
    # prefill or verification pass larger than that would abort inside llama.cpp.
    assert small.n_batch == 64 < small.n_ctx
    limit = min(small.n_ctx, small.n_batch)
    too_many = limit - len(prompt) + 1
    with pytest.raises(UsageProblem) as info:
        small.run(prompt, parse_strategy("plain"), too_many)
    message = str(info.value)
    assert f"has {len(prompt)} tokens; with {too_many} to generate" in message
    assert f"context {limit}" in message
    small.check_fits(len(prompt), too_many - 1)  # exactly full is fine
    with pytest.raises(UsageProblem):
        small.check_fits(limit, 1)


def test_bad_requests(engine: Engine, story: list[int]) -> None:
    with pytest.raises(UsageProblem):
        engine.run(story, parse_strategy("plain"), 0)
    with pytest.raises(UsageProblem):
        engine.run([], parse_strategy("plain"), 4)
    with pytest.raises(UsageProblem):
        engine.run([10**6], parse_strategy("plain"), 4)


def test_draft_strategy_without_draft_model(small: Engine) -> None:
    with pytest.raises(UsageProblem, match="draft"):
        small.run([1, 2, 3], parse_strategy("draft-2"), 2)
    with pytest.raises(UsageProblem):
        small.model_info("draft")


# -- vocabulary compatibility ------------------------------------------------------------


@pytest.fixture(scope="module")
def vocab(engine: Engine) -> VocabInfo:
    return engine.target.vocab_info()


def test_same_vocab_is_compatible(vocab: VocabInfo) -> None:
    check_compatible(vocab, vocab)


def _with_text(vocab: VocabInfo, token: int, text: bytes) -> VocabInfo:
    base = vocab.token_text
    return dataclasses.replace(vocab, token_text=lambda t: text if t == token else base(t))


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda v: dataclasses.replace(v, vocab_type=v.vocab_type + 1), "tokenizer types"),
        (lambda v: dataclasses.replace(v, bos=v.bos + 1), "BOS"),
        (lambda v: dataclasses.replace(v, add_bos=not v.add_bos), "BOS"),
        (lambda v: dataclasses.replace(v, eos=v.eos + 1), "EOS"),
        (lambda v: dataclasses.replace(v, n_vocab=v.n_vocab - 129), "sizes differ by 129"),
        (lambda v: _with_text(v, 1234, b"@@not-a-token@@"), "token 1234"),
        (lambda v: _with_text(v, 5, b"@@"), "token 5 "),
    ],
)
def test_incompatible_vocab_is_named(vocab: VocabInfo, change, needle: str) -> None:
    with pytest.raises(IncompatibleVocab, match=needle):
        check_compatible(vocab, change(vocab))


def test_tolerated_vocab_differences(vocab: VocabInfo) -> None:
    # padding differences up to 128 tokens and renumbered specials below id 5 are allowed
    check_compatible(vocab, dataclasses.replace(vocab, n_vocab=vocab.n_vocab - 128))
    check_compatible(vocab, _with_text(vocab, 4, b"<other-special>"))


def test_incompatible_pair_fails_before_anything_runs(
    test_model_path: Path, other_bos_model_path: Path
) -> None:
    with pytest.raises(PhaseError, match=r"cannot be paired.*BOS differs"):
        Engine(test_model_path, other_bos_model_path, n_ctx=64, n_threads=1)


# --- evidence for divergences ----------------------------------------------------------------


def test_plain_records_every_tokens_top2_gap(engine: Engine, story: list[int]) -> None:
    r = engine.run(story, parse_strategy("plain"), N, record_gaps=True)
    assert r.top2_gaps is not None and len(r.top2_gaps) == N
    assert all(g >= 0 for g in r.top2_gaps) and max(r.top2_gaps) > 0
    assert engine.run(story, parse_strategy("plain"), N).top2_gaps is None
    with pytest.raises(UsageProblem, match="record_gaps"):
        engine.run(story, parse_strategy("draft-2"), N, record_gaps=True)


@pytest.mark.parametrize("label", ["plain", "draft-3", "ngram"])
def test_a_run_records_where_it_left_its_reference_and_the_gap_there(
    engine: Engine, story: list[int], label: str
) -> None:
    plain = engine.run(story, parse_strategy("plain"), N, record_gaps=True)
    assert plain.top2_gaps is not None
    same = engine.run(story, parse_strategy(label), N, reference=plain.token_ids)
    assert same.token_ids == plain.token_ids
    assert same.divergence_index is None and same.divergence_gap is None

    # A reference that differs at token 11: the run's own token there is its argmax, whose
    # gap is what the evidence records (for plain, the very pass the reference gap came from).
    altered = list(plain.token_ids)
    altered[11] = (altered[11] + 1) % 49152
    r = engine.run(story, parse_strategy(label), N, reference=altered)
    assert r.divergence_index == 11 and r.divergence_gap is not None and r.divergence_gap >= 0
    if label == "plain":
        assert r.divergence_gap == pytest.approx(plain.top2_gaps[11])
    run = r.to_run(run_id="x", repeat=0, order=0, prompt="p", strategy=label,
                   reference=altered, reference_gaps=plain.top2_gaps, energy=[], samples=[],
                   temperatures_c={})
    assert (run.matches_plain, run.first_divergence) == (False, 11)
    assert run.divergence_gap_verify == r.divergence_gap
    assert run.divergence_gap_reference == plain.top2_gaps[11]


# --- following a reference text --------------------------------------------------------------


@pytest.mark.parametrize("label", ["plain", "draft-3", "ngram"])
def test_a_run_can_follow_a_reference_text_but_never_becomes_a_results_run(
    engine: Engine, story: list[int], plain_story: DecodeResult, label: str
) -> None:
    strategy = parse_strategy(label)
    same = engine.run_on_reference(story, strategy, N, plain_story.token_ids)
    assert same.token_ids == plain_story.token_ids
    assert same.overridden == 0  # the target's own argmax agreed at every position
    assert_accounting(same, N, strategy.max_proposal)
    # Where the target agrees with the text, following it makes the free run's very steps.
    free = engine.run(story, strategy, N)
    assert [(s.proposed, s.accepted) for s in same.trace] == \
        [(s.proposed, s.accepted) for s in free.trace]

    # A text the target would not write: token 11 altered. The run writes it exactly, its
    # verification still judges proposals (against the text), and it counts the override.
    altered = list(plain_story.token_ids)
    altered[11] = (altered[11] + 1) % 49152
    r = engine.run_on_reference(story, strategy, N, altered)
    assert r.token_ids == altered
    assert r.overridden is not None and r.overridden >= 1
    assert r.divergence_index is None
    assert_accounting(r, N, strategy.max_proposal)
    if label == "draft-3":  # the draft (the target's own weights) proposes its argmax
        assert r.accepted < same.accepted
    with pytest.raises(PhaseError, match="not greedy decoding"):
        r.to_run(run_id="x", repeat=0, order=0, prompt="p", strategy=label,
                 reference=altered, energy=[], samples=[], temperatures_c={})
    assert engine.run(story, strategy, N).overridden is None
    with pytest.raises(UsageProblem, match="reference of at least"):
        engine.run_on_reference(story, strategy, N, altered[:N - 1])
