"""bench/serving_reference.py without a model or a server: the closed loop that drives a
BatchDecoder (here a scripted one, as phase/policy/batching.py intends for tests of load
generation), the seeded request order, the phase-vs-server rows, and the phase side's clear
refusal while phase's batched decoder does not exist yet."""

from __future__ import annotations

import pytest

from bench import serving_reference as ref
from bench.llama_server import Aggregate
from phase.base.errors import PhaseError
from phase.policy.batching import Emission, Request, StepReport


class Scripted:
    """A BatchDecoder that emits `per_step` tokens per active request per step (one of them
    the target's own, the rest accepted from a proposal of `proposed`), ending a request at
    its max_new_tokens."""

    def __init__(self, capacity: int, per_step: int = 1, proposed: int = 0) -> None:
        self.capacity = capacity
        self.per_step, self.proposed = per_step, proposed
        self.live: dict[int, list[int]] = {}
        self.limits: dict[int, int] = {}
        self.most_active = 0
        self.admitted: list[Request] = []

    def active(self) -> int:
        return len(self.live)

    def admit(self, request: Request) -> None:
        if len(self.live) >= self.capacity:
            raise ValueError("no free sequence")
        self.live[request.id] = []
        self.limits[request.id] = request.max_new_tokens
        self.admitted.append(request)

    def step(self) -> StepReport:
        self.most_active = max(self.most_active, len(self.live))
        out = []
        for rid, tokens in list(self.live.items()):
            n = min(self.per_step, self.limits[rid] - len(tokens))
            tokens.extend([7] * n)
            done = len(tokens) >= self.limits[rid]
            out.append(Emission(rid, (7,) * n, self.proposed, n - 1, done))
            if done:
                del self.live[rid]
        return StepReport(tuple(out), sum(1 + self.proposed for _ in out))


def test_drive_keeps_n_active_and_counts_every_emitted_token() -> None:
    decoder = Scripted(capacity=8, per_step=3, proposed=4)
    prompts = [[1, 2], [3], [4, 5, 6]]
    order = ref.request_order(len(prompts), 4)
    agg = ref.drive(decoder, prompts, order, concurrency=4, n_predict=10)
    assert decoder.most_active == 4  # the closed loop's concurrency, not the capacity
    assert [r.prompt for r in decoder.admitted] == [tuple(prompts[p]) for p in order]
    assert agg.requests == len(order) == 8 and agg.output_tokens == 8 * 10
    assert agg.wall_s > 0 and agg.tokens_per_s > 0
    # per request: steps of 3, 3, 3, 1 tokens; 4 proposed each step, 2, 2, 2, 0 accepted
    assert agg.drafted == 8 * 4 * 4 and agg.accepted == 8 * 6


def test_drive_never_admits_past_the_decoders_capacity() -> None:
    decoder = Scripted(capacity=2)
    ref.drive(decoder, [[1]], [0] * 5, concurrency=8, n_predict=3)
    assert decoder.most_active == 2


def test_a_decoder_that_emits_nothing_is_an_error_not_a_hang() -> None:
    class Stuck(Scripted):
        def step(self) -> StepReport:
            return StepReport((), 0)

    with pytest.raises(PhaseError, match="emitted nothing"):
        ref.drive(Stuck(capacity=2), [[1]], [0, 0], concurrency=2, n_predict=3)


def test_the_request_order_is_seeded_and_gives_every_client_its_rounds() -> None:
    order = ref.request_order(3, 4)
    assert order == ref.request_order(3, 4) and len(order) == 4 * ref.ROUNDS
    assert set(order) == {0, 1, 2}
    assert ref.request_order(3, 4, seed=1) != order or ref.request_order(3, 4, seed=2) != order


def agg(tps: float, drafted: int = 0, accepted: int = 0) -> Aggregate:
    return Aggregate(requests=4, output_tokens=int(tps * 10), wall_s=10.0, drafted=drafted,
                     accepted=accepted)


def test_rows_compare_phase_with_the_server_against_the_targets() -> None:
    runs = {"phase": [agg(95), agg(97), agg(99)],
            ref.SERVER: [agg(100), agg(104), agg(101)]}
    (speed,) = ref.ratio_rows("plain", 2, runs, None)  # plain: no acceptance row
    assert speed.item == "plain N=2 tok/s" and speed.reference_name == "llama-server"
    assert speed.phase == 97 and speed.reference == 101
    assert speed.ratio == pytest.approx(97 / 101) and speed.passed is True
    assert speed.samples == {"phase": [95.0, 97.0, 99.0], "llama-server": [100.0, 104.0, 101.0]}

    runs = {"phase": [agg(80, 100, 60)], ref.SERVER: [agg(100, 100, 70)]}
    speed, acceptance = ref.ratio_rows("ngram-8", 8, runs, None)
    assert speed.passed is False  # 0.80x: more than 10% off
    assert acceptance.item == "ngram-8 N=8 acceptance"
    assert acceptance.ratio == pytest.approx(-0.10) and acceptance.passed is False


def test_rows_without_the_phase_side_say_why_and_judge_nothing() -> None:
    runs = {ref.SERVER: [agg(100, 50, 20)]}
    rows = ref.ratio_rows("ngram-8", 1, runs, "not available yet")
    assert [r.reference for r in rows] == [100.0, pytest.approx(0.4)]
    assert all(r.phase is None and r.ratio is None and r.passed is None for r in rows)
    assert all("not available yet" in r.detail for r in rows)
