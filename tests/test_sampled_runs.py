"""Sampled runs on the real test model: exact lengths, reproducible from the seed, the KV
cache rolled back so that a run equals itself after others, and bad requests refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from phase.base.errors import UsageProblem
from phase.decode import Engine
from phase.decode.sampled import SampledDecoder
from phase.policy.sampling import SamplingSettings

pytestmark = pytest.mark.model

SETTINGS = SamplingSettings(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=7)
N = 12


@pytest.fixture(scope="module")
def decoder(test_model_path: Path) -> Iterator[SampledDecoder]:
    with Engine(test_model_path, test_model_path, n_ctx=256, n_threads=1) as engine:
        prompt = engine.format_prompt("Write a haiku about the sea.", chat_template=True)
        yield SampledDecoder(engine.target, engine.draft, prompt)


def test_plain_is_reproducible_from_its_seed(decoder: SampledDecoder) -> None:
    first = decoder.plain(N, SETTINGS).generated
    decoder.plain(N, SETTINGS.with_seed(8))  # another run in between: its KV must not leak
    assert decoder.plain(N, SETTINGS).generated == first
    assert len(first) == N
    others = {tuple(decoder.plain(N, SETTINGS.with_seed(s)).generated) for s in range(4)}
    assert len(others) > 1  # the seed matters


@pytest.mark.parametrize("rule", ["rejection", "greedy-match", "llama-speculative"])
def test_draft_runs_are_exact_length_and_reproducible(decoder: SampledDecoder,
                                                      rule: str) -> None:
    run = decoder.draft_k(N, 4, SETTINGS, rule)
    assert len(run.generated) == N
    assert 0 <= run.accepted <= run.proposed
    assert run.steps >= N / 5  # at most k + 1 tokens per target pass
    assert len(run.generated) == run.accepted + run.steps  # one token of the target's a step
    again = decoder.draft_k(N, 4, SETTINGS, rule)
    assert again.generated == run.generated


def test_self_draft_rejection_sampling_keeps_almost_everything(decoder: SampledDecoder) -> None:
    # Draft = target with the same settings: q equals p up to batch-shape rounding, so
    # min(1, p/q) is ~1 for every proposal.
    runs = [decoder.draft_k(N, 4, SETTINGS.with_seed(s)) for s in range(3)]
    proposed = sum(r.proposed for r in runs)
    assert proposed > 0
    assert sum(r.accepted for r in runs) / proposed > 0.9


def test_ngram_refuses_a_rule_that_needs_q(decoder: SampledDecoder) -> None:
    with pytest.raises(UsageProblem, match="point masses"):
        decoder.ngram(N, 4, SETTINGS, rule="llama-speculative")


def test_unknown_rule_is_named(decoder: SampledDecoder) -> None:
    with pytest.raises(UsageProblem, match="unknown verification rule 'exact'"):
        decoder.draft_k(N, 4, SETTINGS, "exact")


def test_a_run_past_the_context_is_refused_before_decoding(decoder: SampledDecoder) -> None:
    with pytest.raises(UsageProblem, match="raise the context size"):
        decoder.plain(10_000, SETTINGS)
    with pytest.raises(UsageProblem, match="proposals per step must be >= 1"):
        decoder.draft_k(N, 0, SETTINGS)
    assert len(decoder.plain(N, SETTINGS).generated) == N  # and the decoder still works
