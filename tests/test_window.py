"""The one timed window (phase.decode.window) that greedy and sampled runs share: every model's
KV memory and the proposer's state are cleared before each window, the prompt prefilled
outside it, and later passes restart from the prompt's cache. First with recording stand-ins
for the models (no model file), then on the real test model for greedy and sampled runs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

import pytest

from phase.decode import Engine
from phase.decode.loops import Decoded
from phase.decode.native import NativeModel
from phase.decode.sampled_timed import run_sampled
from phase.decode.window import Edges, Repeat, timed_window
from phase.policy.proposers import AdaptiveNgramProposer
from phase.policy.sampling import SamplingSettings
from phase.policy.strategies import parse_strategy


class _Model:
    """Records what the window asks of a model's KV memory, and holds its positions."""

    def __init__(self, name: str, log: list[str], stale: int) -> None:
        self.name, self.log, self.kv = name, log, stale

    def clear(self) -> None:
        self.log.append(f"{self.name}.clear")
        self.kv = 0

    def decode(self, tokens: list[int], pos0: int, n_logits: int) -> None:
        self.log.append(f"{self.name}.decode {pos0}+{len(tokens)}")
        self.kv = pos0 + len(tokens)

    def truncate(self, n_keep: int) -> None:
        self.log.append(f"{self.name}.truncate {n_keep}")
        self.kv = min(self.kv, n_keep)


def _window(max_passes: int) -> tuple[list[str], list[tuple[int, int]], list[Decoded]]:
    log: list[str] = []
    target, draft = _Model("target", log, stale=50), _Model("draft", log, stale=70)
    seen: list[tuple[int, int]] = []  # (target, draft) positions as each pass starts
    decoded: list[Decoded] = []

    def loop() -> Decoded:
        seen.append((target.kv, draft.kv))
        log.append("pass")
        target.kv += 4
        draft.kv += 3
        decoded.append(Decoded([1, 2, 3, 4], [(0, 0, 0.0, 0.0)] * 4, None))
        return decoded[-1]

    def start(prompt: list[int]) -> None:
        log.append(f"start {len(prompt)}")
        draft.kv = len(prompt) - 1

    def again(prompt: list[int]) -> None:
        log.append(f"again {len(prompt)}")
        draft.kv = len(prompt) - 1

    models = cast(Sequence[NativeModel], [target, draft])
    repeat = Repeat(loop, min_window_s=60.0, max_passes=max_passes)
    window = timed_window(models, [7, 8, 9, 10, 11], Edges(start, again), loop, None,
                          lambda: None, lambda: log.append("window starts"),
                          lambda: log.append("window ends"), repeat)
    assert len(window.passes) == max_passes
    assert window.first.generated == [1, 2, 3, 4]
    return log, seen, decoded


def test_every_model_is_cleared_and_the_proposer_started_before_the_window() -> None:
    log, seen, _ = _window(max_passes=1)
    assert log == ["target.clear", "draft.clear", "target.decode 0+4", "start 5",
                   "window starts", "pass", "window ends"]
    assert seen == [(4, 4)]  # the stale 50 and 70 positions are gone


def test_each_later_pass_starts_from_the_prompts_cache() -> None:
    log, seen, _ = _window(max_passes=3)
    assert log[log.index("window starts"):] == [
        "window starts", "pass", "target.truncate 4", "again 5", "pass",
        "target.truncate 4", "again 5", "pass", "window ends"]
    assert seen == [(4, 4)] * 3


def test_the_window_closes_when_decoding_fails() -> None:
    log: list[str] = []
    model = _Model("target", log, stale=0)

    def fail() -> Decoded:
        raise RuntimeError("decode failed")

    with pytest.raises(RuntimeError):
        timed_window(cast(Sequence[NativeModel], [model]), [1, 2], Edges(), fail, None,
                     lambda: None, lambda: log.append("window starts"),
                     lambda: log.append("window ends"))
    assert log[-2:] == ["window starts", "window ends"]


@pytest.fixture(scope="module")
def engine(test_model_path: Path) -> Iterator[Engine]:
    with Engine(test_model_path, test_model_path, n_ctx=256, n_threads=1) as engine:
        yield engine


def _litter(engine: Engine) -> None:
    """What an aborted run could leave: positions past any prompt here, in both models."""
    for model, first in ((engine.target, 100), (engine.draft, 200)):
        assert model is not None
        end = model.kv_positions()
        model.decode(list(range(first, first + 60)), end, 0)
        assert model.kv_positions() == end + 60


SAMPLED = SamplingSettings(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, seed=3)


@pytest.mark.model
@pytest.mark.parametrize("sampled", [False, True], ids=["greedy", "sampled"])
@pytest.mark.parametrize(("label", "draft_in_play"), [("ngram", False), ("draft-3", True),
                                                      ("plain", False)])
def test_each_window_starts_with_every_models_memory_cleared(
        engine: Engine, sampled: bool, label: str, draft_in_play: bool) -> None:
    assert engine.draft is not None
    prompt = engine.format_prompt("Name three rivers.", chat_template=True)
    strategy = parse_strategy(label)
    kv: list[tuple[int, int]] = []

    def at_start() -> None:
        assert engine.draft is not None
        kv.append((engine.target.kv_positions(), engine.draft.kv_positions()))

    _litter(engine)
    if sampled:
        run_sampled(engine, prompt, strategy, 6, SAMPLED, on_decode_start=at_start,
                    min_window_s=60.0, max_passes=2)
    else:
        engine.run(prompt, strategy, 6, on_decode_start=at_start, min_window_s=60.0,
                   max_passes=2)
    # The target holds the prompt but its last token; the draft the same where it drafts,
    # nothing where it is not in play: no position of the litter survives in either.
    assert kv == [(len(prompt) - 1, len(prompt) - 1 if draft_in_play else 0)]


@pytest.mark.model
def test_a_proposer_given_twice_starts_afresh_each_window(engine: Engine) -> None:
    prompt = engine.format_prompt("Count from one to twenty in words.", chat_template=True)
    strategy = parse_strategy("ngram")
    proposer = AdaptiveNgramProposer(strategy.ngram_n_min, strategy.ngram_n_max,
                                     strategy.max_proposal)
    first = engine.run(prompt, strategy, 24, proposer=proposer)
    again = engine.run(prompt, strategy, 24, proposer=proposer)
    assert again.token_ids == first.token_ids
    assert [(s.proposed, s.accepted) for s in again.trace] == \
        [(s.proposed, s.accepted) for s in first.trace]
