"""The cost profile and `auto` on the real test model (SmolLM2-135M, also its own draft).

Timings on a shared CPU are not asserted: the profile's shape and reasons are, and auto's
decisions are tested against fixture cost profiles whose curves make the right choice
unambiguous. Whatever auto decides, its output must equal plain decoding's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cost_factories import make_profile

from phase.base.errors import UsageProblem
from phase.decode import Engine
from phase.decode.profiler import (
    NO_DRAFT,
    ProfileContext,
    ProfileSettings,
    choose_contexts,
)
from phase.policy.result import DecodeResult
from phase.policy.strategies import parse_strategy

pytestmark = pytest.mark.model

N = 40
PASSAGE = (
    "Once upon a time, in a small village by the sea, there lived an old fisherman named Tom. "
    "Every morning he rowed his little boat out past the rocks, cast his nets, and waited "
    "patiently for the fish to come. His wife, Mary, baked bread and sold it at the market."
)
REPEAT = f"Repeat the following text exactly, word for word:\n\n{PASSAGE}"
STORY = "Write a short story about a lighthouse keeper."
QUICK = ProfileSettings(blocks=2, min_block_s=0.0)


@pytest.fixture(scope="module")
def engine(test_model_path: Path) -> Iterator[Engine]:
    with Engine(test_model_path, test_model_path, n_ctx=512, n_threads=1) as eng:
        yield eng


@pytest.fixture(scope="module")
def repeat(engine: Engine) -> tuple[list[int], DecodeResult]:
    prompt = engine.format_prompt(REPEAT)
    return prompt, engine.run(prompt, parse_strategy("plain"), N)


def test_profile_measures_every_pass_size_at_each_fill(
    engine: Engine, repeat: tuple[list[int], DecodeResult]
) -> None:
    prompt, plain = repeat
    history = prompt + plain.token_ids
    contexts = [ProfileContext("a", history, len(prompt)),
                ProfileContext("b", history, len(prompt) + 20)]
    profile = engine.profile(contexts, QUICK, energy_reason="no sensor in this test")
    assert [p.kv_tokens for p in profile.points] == [len(prompt), len(prompt) + 20]
    for point in profile.points:
        assert [c.tokens for c in point.target] == list(range(1, 18))
        assert [c.tokens for c in point.draft] == list(QUICK.draft_batches)
        for cost in [*point.target, *point.draft]:
            assert cost.ms > 0 and len(cost.block_ms) == 2 and cost.block_passes == [1, 1]
            assert cost.energy_j == {}
        # Each pass computed the logits rows decoding asks of it: every row of a target
        # verification, the one row of a drafted token, none for the draft's mirror batch.
        assert [c.logits for c in point.target] == list(range(1, 18))
        assert [c.logits for c in point.draft] == [1 if b == 1 else 0
                                                  for b in QUICK.draft_batches]
    assert profile.energy_reason == "no sensor in this test"
    assert profile.draft_reason is None
    assert profile.ngram_lookup_ms is not None and profile.ngram_lookup_ms > 0
    # Profiling leaves nothing behind: the next run is plain decoding as before.
    assert engine.run(prompt, parse_strategy("plain"), N).token_ids == plain.token_ids


def test_profile_without_draft_says_why(test_model_path: Path) -> None:
    with Engine(test_model_path, n_ctx=256, n_threads=1) as eng:
        prompt = eng.format_prompt(STORY)
        profile = eng.profile([ProfileContext(None, prompt * 3, len(prompt))], QUICK)
    assert profile.draft_reason == NO_DRAFT
    assert all(not p.draft for p in profile.points)
    assert profile.energy_reason  # no meter: the reason is never empty


def test_a_fill_that_does_not_fit_is_refused(engine: Engine) -> None:
    with pytest.raises(UsageProblem, match=r"needs \d+ > context"):
        engine.profile([ProfileContext(None, [1] * 600, 500)], QUICK)


def test_choose_contexts_keeps_the_lowest_and_highest_fill() -> None:
    ctxs = [ProfileContext(name, [], kv) for name, kv in
            (("code", 273), ("prose", 257), ("edit", 1106), ("same", 257))]
    assert [c.prompt for c in choose_contexts(ctxs)] == ["prose", "edit"]
    assert [c.prompt for c in choose_contexts(ctxs[:2])] == ["prose", "code"]


def test_auto_needs_a_profile(test_model_path: Path) -> None:
    with Engine(test_model_path, n_ctx=256, n_threads=1) as eng:
        with pytest.raises(UsageProblem, match="cost profile"):
            eng.run(eng.format_prompt(STORY), parse_strategy("auto"), 4)
        with pytest.raises(UsageProblem, match="energy"):
            eng.use_profile(make_profile(), "energy")


def check_auto(r: DecodeResult, plain: DecodeResult) -> None:
    assert r.token_ids == plain.token_ids
    assert r.accepted + r.steps == N and len(r.trace) == r.steps
    for s in r.trace:
        assert s.proposer in ("none", "ngram", "draft")
        assert (s.proposed == 0) == (s.proposer == "none")
        assert s.expected_tokens is not None and s.expected_tokens >= 1.0
        assert s.expected_gain is not None and s.match_tokens is not None


def test_auto_drafts_where_the_draft_is_nearly_free(
    engine: Engine, repeat: tuple[list[int], DecodeResult]
) -> None:
    # Verification as on a GPU, a draft that costs almost nothing, a model that is its own
    # draft (every guess is kept): drafting long is the right choice nearly every step.
    prompt, plain = repeat
    engine.use_profile(make_profile(lambda b: 10.0 + 0.1 * b, draft=lambda b: 0.1))
    r = engine.run(prompt, parse_strategy("auto"), N)
    check_auto(r, plain)
    assert sum(s.proposer == "draft" for s in r.trace) >= r.steps - 1
    assert r.acceptance == 1.0 and r.steps <= 4


def test_auto_never_drafts_where_no_acceptance_can_pay(
    engine: Engine, repeat: tuple[list[int], DecodeResult]
) -> None:
    # The CPU case: the draft costs as much as the target and every verified row nearly a
    # plain step. On a copy task auto still copies with n-gram proposals.
    prompt, plain = repeat
    engine.use_profile(make_profile(lambda b: 11.0 + 30.0 * b, draft=lambda b: 20.0 * b))
    r = engine.run(prompt, parse_strategy("auto"), N)
    check_auto(r, plain)
    assert not any(s.proposer == "draft" for s in r.trace)
    assert any(s.proposer == "ngram" for s in r.trace) and r.accepted > 0


def test_auto_where_nothing_pays_is_plain_decoding_with_a_decision_per_step(
    engine: Engine, repeat: tuple[list[int], DecodeResult]
) -> None:
    # Verifying k proposals costs (k + 1)^2 plain steps: no proposal can pay, so every step
    # is a plain step, down to the last one (where nothing may be proposed at all).
    prompt, plain = repeat
    engine.use_profile(make_profile(lambda b: 10.0 * b * b))
    r = engine.run(prompt, parse_strategy("auto"), N)
    check_auto(r, plain)
    assert r.steps == N and r.drafted == 0
    assert all(s.proposer == "none" and s.expected_tokens == 1.0 for s in r.trace)
