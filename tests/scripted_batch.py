"""A simulated clock and a scripted `BatchDecoder` for the serving tests: no model, and every
step takes exactly the time its script says, so the load generators' records can be checked
to the exact second.

The decoder stands in for the real batched decoder (phase.decode.batched), not for the thing
under test: the load generators and metrics in phase.serving are the real ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from phase.policy.batching import Emission, Request, StepReport


@dataclass
class SimClock:
    """Seconds that pass only when the decoder works or the driver sleeps."""

    now: float = 100.0
    slept: list[float] = field(default_factory=list)

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0, "the driver slept for no time: it would spin"
        self.slept.append(seconds)
        self.now += seconds


# One step's output for a request: (tokens emitted, proposed, accepted).
Out = tuple[int, int, int]


@dataclass
class ScriptedDecoder:
    """Emits, for the request whose prompt is (p, ...), the steps `scripts[p]` lists, one per
    step, and finishes it on the last. A step takes `step_s + per_request_s * active`;
    admitting (prefill) takes `prefill_s`. It remembers what each step saw."""

    clock: SimClock
    scripts: dict[int, list[Out]]
    capacity_: int = 8
    step_s: float = 1.0
    per_request_s: float = 0.0
    prefill_s: float = 0.0
    admitted: list[int] = field(default_factory=list)
    active_per_step: list[int] = field(default_factory=list)
    _live: dict[int, list[Out]] = field(default_factory=dict)

    @property
    def capacity(self) -> int:
        return self.capacity_

    def active(self) -> int:
        return len(self._live)

    def admit(self, request: Request) -> None:
        if len(self._live) >= self.capacity_:
            raise ValueError("no free sequence")
        self.admitted.append(request.id)
        self._live[request.id] = list(self.scripts[request.prompt[0]])
        self.clock.now += self.prefill_s

    def step(self) -> StepReport:
        if not self._live:
            return StepReport((), 0)
        self.active_per_step.append(len(self._live))
        self.clock.now += self.step_s + self.per_request_s * len(self._live)
        emissions = []
        for rid in list(self._live):
            tokens, proposed, accepted = self._live[rid].pop(0)
            finished = not self._live[rid]
            if finished:
                del self._live[rid]
            emissions.append(Emission(rid, (7,) * tokens, proposed, accepted, finished))
        return StepReport(tuple(emissions), len(emissions))


def prompts(n: int) -> list[tuple[int, ...]]:
    """n prompts; prompt p starts with p, which is how the decoder finds its script."""
    return [(p, 1, 2) for p in range(n)]
