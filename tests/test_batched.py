"""Many requests in one loop (phase.decode.batched) on the real test model.

Each request's greedy output must equal single-request plain decoding of its prompt, whatever
the strategy and however many requests share its steps. "Equal" allows what the rest of the
suite allows: batched passes compute a row differently from one-token passes in the last bits,
which can flip a near-tie, so at a request's first differing token both passes' top-2 logit
gaps must be below the validation's near-tie gap (RuleSettings.near_tie_gap, 0.5); a flip
against a clear margin is a decoder bug. Models load once for the module; one thread each;
short generations.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cost_factories import make_profile

from phase.decode import Engine
from phase.decode.batched import BatchedDecoder
from phase.policy.batching import Request, StepReport
from phase.policy.exactness import goodness_of_fit
from phase.policy.sampling import SamplingSettings, distribution
from phase.policy.strategies import Strategy, parse_strategy
from phase.validate.settings import RuleSettings

pytestmark = pytest.mark.model

NEW = 12
# Rounds of four sampled requests: 100 draws. The guess is the top token (p ~ 0.5), so a rule
# that mishandles it moves a category of ~50 expected draws (one that never keeps a point-mass
# guess, speculative_sampling.wrong, fails at p ~ 1e-23 here).
BATCHES = 25
NEAR_TIE = RuleSettings().near_tie_gap
PROMPTS = [
    "Repeat exactly: the cat sat on the mat, the cat sat on the mat, the cat sat on the",
    "Write a short story about a lighthouse keeper.",
    "Name three colours.",
    "What is the capital of France?",
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):",
    "List the days of the week.",
    "Explain why the sky is blue in one sentence.",
    "Count from one to ten: one, two, three,",
]


@pytest.fixture(scope="module")
def single(test_model_path: Path) -> Iterator[Engine]:
    with Engine(test_model_path, n_ctx=512, n_threads=1) as eng:
        yield eng


@pytest.fixture(scope="module")
def many(test_model_path: Path) -> Iterator[Engine]:
    """Target and draft (the same weights) with eight sequences each."""
    with Engine(test_model_path, test_model_path, n_ctx=1024, n_threads=1, n_seq_max=8) as eng:
        # A verification as on a GPU and a draft that costs little: auto proposes, and drafts.
        eng.use_profile(make_profile(lambda b: 10.0 + 0.1 * b, draft=lambda b: 0.5))
        yield eng


@pytest.fixture(scope="module")
def prompts(single: Engine) -> list[list[int]]:
    return [single.format_prompt(p) for p in PROMPTS]


@pytest.fixture(scope="module")
def references(single: Engine, prompts: list[list[int]]) -> list[tuple[list[int], list[float]]]:
    """Each prompt's single-request plain tokens and their top-2 gaps."""
    out = []
    for p in prompts:
        r = single.run(p, parse_strategy("plain"), NEW, record_gaps=True)
        assert r.top2_gaps is not None
        out.append((r.token_ids, r.top2_gaps))
    return out


def drain(decoder: BatchedDecoder) -> tuple[dict[int, list[int]], list[StepReport]]:
    out: dict[int, list[int]] = {}
    reports = []
    while decoder.active():
        report = decoder.step()
        reports.append(report)
        for e in report.emissions:
            out.setdefault(e.request_id, []).extend(e.tokens)
    return out, reports


def assert_plain(tokens: list[int], gaps: list[float], reference: tuple[list[int], list[float]],
                 single: Engine) -> None:
    """Equal to the reference up to where it ends (max tokens, or an end-of-generation token),
    or parting from it only at a near-tie of both passes."""
    ref, ref_gaps = reference
    end = next((i + 1 for i, t in enumerate(ref[:NEW]) if single.target.is_end(t)), NEW)
    first = next((i for i, (a, b) in enumerate(zip(tokens, ref, strict=False)) if a != b), None)
    if first is None:
        assert tokens == ref[:end]
        return
    assert gaps[first] < NEAR_TIE and ref_gaps[first] < NEAR_TIE, (
        f"token {first}: {tokens[first]} against plain's {ref[first]} with gaps "
        f"{gaps[first]:.3f} / {ref_gaps[first]:.3f}")


def check_accounting(reports: list[StepReport]) -> None:
    for report in reports:
        assert report.batch_tokens == sum(1 + e.proposed for e in report.emissions)
        for e in report.emissions:
            assert 0 <= e.accepted <= e.proposed
            assert 1 <= len(e.tokens) <= e.accepted + 1


# Every family alone, in a partial batch of an odd size and in a full one of the eight
# sequences (2 and 4 as well cost 16 s of a 2-core suite and reach no other code path);
# llama.cpp's ngram-simple (a port, for the server bench) at one N.
EACH_ALONE = [(label, n) for n in (1, 3, 8) for label in ("plain", "ngram", "draft-2", "auto")]
EACH_ALONE.append(("ngram-simple-2", 4))


@pytest.mark.parametrize(("label", "n"), EACH_ALONE)
def test_each_request_decodes_as_it_would_alone(
    many: Engine, single: Engine, prompts: list[list[int]],
    references: list[tuple[list[int], list[float]]], label: str, n: int,
) -> None:
    # Short n-gram contexts, so that the n-gram proposer fires on these short prompts.
    strategy = parse_strategy(label, ngram_n_min=2, ngram_n_max=4)
    decoder = many.batched(strategy, record_gaps=True)
    for i in range(n):
        decoder.admit(Request(i, tuple(prompts[i]), NEW))
    assert decoder.active() == n
    out, reports = drain(decoder)
    assert decoder.gaps is not None
    for i in range(n):
        assert_plain(out[i], decoder.gaps[i], references[i], single)
    # each admission's target prefill, timed alone (the serving runs' strategy-free yardstick)
    assert sorted(decoder.prefill_s) == list(range(n))
    assert all(t > 0 for t in decoder.prefill_s.values())
    check_accounting(reports)
    # One decode per step, carrying every active request: never more steps than the longest.
    assert len(reports) <= NEW
    assert max(len(r.emissions) for r in reports) == n
    if label != "plain":
        assert sum(e.proposed for r in reports for e in r.emissions) > 0
    if label == "draft-2":
        # The draft is the target: its guesses are kept but where numerics flip a near-tie.
        proposed = sum(e.proposed for r in reports for e in r.emissions)
        assert sum(e.accepted for r in reports for e in r.emissions) >= 0.8 * proposed


SHORT_ANSWERS = ("Reply with only the word yes.", "What is 2+2? Answer with the number only.",
                 "Answer with one word: what color is the sky?")


def _ends_early(single: Engine) -> list[int]:
    """The first of SHORT_ANSWERS whose plain answer ends before NEW tokens."""
    for text in SHORT_ANSWERS:
        prompt = single.format_prompt(text)
        ids = single.run(prompt, parse_strategy("plain"), NEW).token_ids
        if any(single.target.is_end(t) for t in ids[:NEW - 1]):
            return prompt
    raise AssertionError(f"none of {SHORT_ANSWERS} ends within {NEW - 1} tokens on this host")


def test_requests_join_and_leave_between_steps(
    many: Engine, single: Engine, prompts: list[list[int]],
    references: list[tuple[list[int], list[float]]],
) -> None:
    decoder = BatchedDecoder(many.target, parse_strategy("ngram"), capacity=3,
                             record_gaps=True)
    assert decoder.step() == StepReport((), 0)
    lengths = [5, NEW, 3, 9, NEW, 7]
    queue = [Request(i, tuple(prompts[i]), lengths[i]) for i in range(len(lengths))]
    # One more that ends early, at an end-of-generation token: which short question the
    # test model answers briefly depends on the host's numerics, so it is found, not assumed.
    short = _ends_early(single)
    queue.insert(2, Request(99, tuple(short), NEW))
    out: dict[int, list[int]] = {}
    seen_active: list[int] = []
    while queue or decoder.active():
        while queue and decoder.active() < decoder.capacity:
            decoder.admit(queue.pop(0))
        if queue:
            with pytest.raises(ValueError, match="no free sequence"):
                decoder.admit(queue[0])
        seen_active.append(decoder.active())
        report = decoder.step()
        for e in report.emissions:
            out.setdefault(e.request_id, []).extend(e.tokens)
            if e.finished:  # its sequence is freed at once, in the target's KV cache too
                assert all(many.target.seq_positions(s) == 0 for s in range(3)
                           if decoder._slots[s] is None)
    assert decoder.gaps is not None
    for i, n in enumerate(lengths):
        assert len(out[i]) <= n
        ref = references[i]
        assert_plain(out[i], decoder.gaps[i], (ref[0][:n], ref[1][:n]), single)
    alone = single.run(short, parse_strategy("plain"), NEW).token_ids
    assert len(out[99]) < NEW and single.target.is_end(out[99][-1])
    assert out[99] == alone[:len(out[99])]
    # Requests were admitted while others were mid-generation (7 requests, 3 sequences).
    assert max(seen_active) == 3 and all(many.target.seq_positions(s) == 0 for s in range(8))


def test_a_request_that_cannot_be_served_is_refused(many: Engine,
                                                    prompts: list[list[int]]) -> None:
    decoder = many.batched(parse_strategy("plain"))
    with pytest.raises(Exception, match="empty prompt"):
        decoder.admit(Request(0, (), 4))
    with pytest.raises(Exception, match="do not fit"):
        decoder.admit(Request(1, tuple(prompts[0]), 5000))
    assert decoder.active() == 0


def test_sampled_requests_keep_the_distribution(many: Engine, single: Engine) -> None:
    # A prompt whose end recurs earlier: each request's n-gram proposer guesses the next token
    # (" three", the target's likeliest at p ~ 0.5), which rejection sampling keeps with its
    # probability and otherwise replaces by a draw from the rest. A request's first token must
    # still be distributed as the target's p, four requests sharing every step.
    prompt = single.target.tokenize("Say one two three, one two three, one two",
                                    add_special=True, parse_special=False)
    settings = SamplingSettings(temperature=1.0, top_k=6, seed=7)
    single.target.clear()
    single.target.decode(prompt, 0, 1)
    exact = distribution(single.target.logits(0), settings)
    strategy = Strategy("ngram", 2, ngram_n_min=2, ngram_n_max=4)
    firsts: list[int] = []
    proposed = 0
    for batch in range(BATCHES):
        decoder = many.batched(strategy, settings)
        for i in range(4):
            decoder.admit(Request(batch * 4 + i, tuple(prompt), 2))
        out, reports = drain(decoder)
        proposed += sum(e.proposed for r in reports for e in r.emissions)
        firsts.extend(out[batch * 4 + i][0] for i in range(4))
    assert proposed >= 4 * BATCHES  # every request's first step verified a guess
    fit = goodness_of_fit(firsts, {t: float(p) for t, p in enumerate(exact) if p > 0})
    assert fit.p_value > 1e-3, fit

    # The same seed and request ids draw the same tokens, whoever shares the steps.
    again = many.batched(strategy, settings)
    for i in range(2):
        again.admit(Request(i, tuple(prompt), 2))
    tokens, _ = drain(again)
    assert [tokens[i][0] for i in range(2)] == firsts[:2]


@pytest.mark.parametrize("label", ["plain", "draft-2", "auto"])
def test_sampled_runs_repeat_with_their_seed(many: Engine, prompts: list[list[int]],
                                             label: str) -> None:
    # Sampled draft proposals come with the draft's q rows (drawn in the shared draft
    # passes), auto chooses among them: every path draws only from its request's generator.
    settings = SamplingSettings(temperature=0.8, top_k=20, seed=11)
    runs = []
    for _ in range(2):
        decoder = many.batched(parse_strategy(label), settings)
        for i in range(4):
            decoder.admit(Request(i, tuple(prompts[i]), 6))
        out, reports = drain(decoder)
        check_accounting(reports)
        assert all(1 <= len(out[i]) <= 6 for i in range(4))
        runs.append(out)
    assert runs[0] == runs[1]
    if label != "plain":
        assert any(e.proposed for r in reports for e in r.emissions)


@pytest.mark.parametrize("label", ["plain", "draft-2"])
def test_the_first_divergence_is_read_from_the_row_that_emitted_it(
    many: Engine, single: Engine, prompts: list[list[int]],
    references: list[tuple[list[int], list[float]]], label: str,
) -> None:
    """Watched against expected outputs (the serving campaign's evidence), the decoder records
    where each request first parts from its expected output and the top-2 gap of the row that
    emitted the differing token: the gap the all-rows mode computes for that row in the same
    step. Expected outputs altered at a known token force a divergence there (or earlier,
    where the batch flips a near tie); a request that stays on its expected output records
    nothing."""
    expected = []
    for i, at in enumerate((None, 4, 0)):
        ref = references[i][0][:NEW]
        end = next((j + 1 for j, t in enumerate(ref) if single.target.is_end(t)), NEW)
        cut = list(ref[:end])
        if at is not None and at < len(cut):
            cut[at] = (cut[at] + 1) % single.target.n_vocab
        expected.append(cut)
    decoder = many.batched(parse_strategy(label), record_gaps=True, expected={
        tuple(prompts[i]): expected[i] for i in range(3)})
    for i in range(3):
        decoder.admit(Request(i, tuple(prompts[i]), NEW))
    out, _ = drain(decoder)
    assert decoder.gaps is not None
    for i in range(3):
        first = next((j for j, (a, b) in enumerate(zip(out[i], expected[i], strict=False))
                      if a != b), None)
        if first is None:
            assert i not in decoder.divergences
            continue
        seen = decoder.divergences[i]
        assert seen.at == first and seen.gap == decoder.gaps[i][first]
    assert {1, 2} <= set(decoder.divergences)
    assert decoder.divergences[2].at == 0
