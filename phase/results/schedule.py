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
