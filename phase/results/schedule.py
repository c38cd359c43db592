"""The order runs happen in: every prompt x strategy once per repeat, reshuffled per repeat.

Part of the results contract: a run's `id` and `order` in a results file are its place in this
schedule, which `phase measure` follows and `phase validate` checks.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ScheduledRun:
    repeat: int
    order: int
    prompt: str
    strategy: str

    @property
    def run_id(self) -> str:
        return f"r{self.repeat}-{self.prompt}-{self.strategy}"


def schedule(
    prompts: Sequence[str], strategies: Sequence[str], repeats: int, seed: int, shuffle: bool
) -> list[ScheduledRun]:
    """Every prompt × strategy once per repeat; each repeat in its own shuffled order.

    The order depends only on the seed, so a resumed campaign replays the same schedule.
    """
    out: list[ScheduledRun] = []
    for repeat in range(repeats):
        block = [(p, s) for p in prompts for s in strategies]
        if shuffle:
            random.Random(f"{seed}:{repeat}").shuffle(block)
        for prompt, strategy in block:
            out.append(ScheduledRun(repeat, len(out), prompt, strategy))
    return out


@dataclass(frozen=True)
class Rerun(ScheduledRun):
    """A scheduled run's slot again, after a disturbed attempt (Run.disturbed). Its `order` is
    the slot's plus `attempt` x the schedule's length, past every first attempt and unique
    across shards; its id names the slot it fills again."""

    of: str = ""
    attempt: int = 1

    @property
    def run_id(self) -> str:
        return f"{self.of}-rerun{self.attempt}"


def rerun(slot: ScheduledRun, attempt: int, schedule_length: int) -> Rerun:
    return Rerun(slot.repeat, slot.order + attempt * schedule_length, slot.prompt,
                 slot.strategy, of=slot.run_id, attempt=attempt)
