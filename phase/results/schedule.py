"""The order runs happen in: every prompt x strategy once per repeat, reshuffled per repeat.

Part of the results contract: a run's `id` and `order` in a results file are its place in this
schedule, which `phase measure` follows and `phase validate` checks. So is `split`: which part
of the plan each shard of a campaign runs, which shard files record and validation re-derives.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from phase.errors import UsageProblem


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


Split = tuple[Literal["prompts", "repeats"], list[list[str]], list[list[int]]]


def split(prompts: Sequence[str], repeats: int, count: int) -> Split:
    """("prompts" | "repeats", prompts per shard, repeats per shard): whole prompts when there
    are at least as many prompts as shards, else whole repeats; contiguous, balanced blocks."""
    if len(prompts) >= count:
        blocks = [list(prompts[i * len(prompts) // count:(i + 1) * len(prompts) // count])
                  for i in range(count)]
        return "prompts", blocks, [list(range(repeats))] * count
    if repeats >= count:
        blocks_r = [list(range(i * repeats // count, (i + 1) * repeats // count))
                    for i in range(count)]
        return "repeats", [list(prompts)] * count, blocks_r
    raise UsageProblem(
        f"{count} shards, but the plan has {len(prompts)} prompt(s) and {repeats} repeat(s): "
        f"a shard holds whole prompts or whole repeats, so use at most "
        f"{max(len(prompts), repeats)} shards"
    )
