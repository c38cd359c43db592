"""The order runs happen in: every prompt x strategy once per repeat, reshuffled per repeat.

Part of the results contract: a run's `id` and `order` in a results file are its place in this
schedule (or, for an adaptive round past the planned repeats, in `extra_round`), which
`phase measure` follows and `phase validate` checks. So is `split`: which part
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


def extra_round(prompts: Sequence[str], strategies: Sequence[str], repeats: int, seed: int,
                shuffle: bool, repeat: int, due: set[tuple[str, str]],
                max_reruns: int) -> list[ScheduledRun]:
    """An adaptive round (repeat >= repeats): the schedule's block for `repeat` (every prompt x
    strategy, shuffled from the seed and the repeat exactly as a planned repeat is), keeping
    only the `due` conditions. Run ids are the schedule's (`r<repeat>-<prompt>-<strategy>`).

    Orders lie past every planned run and every re-run of one (planned re-runs reach the
    schedule's length L times 1 + max_reruns), one block of B = prompts x strategies slots per
    round, and each slot leaves room for its own re-runs: slot j of round e (repeat - repeats)
    is at L(1 + R) + (eB + j)(1 + R), its re-run N at that plus N (`rerun(slot, N, 1)`)."""
    block = [(p, s) for p in prompts for s in strategies]
    if shuffle:
        random.Random(f"{seed}:{repeat}").shuffle(block)
    width = 1 + max_reruns
    base = repeat * len(block) * width  # L(1 + R) + (repeat - repeats) B (1 + R)
    return [ScheduledRun(repeat, base + j * width, p, s)
            for j, (p, s) in enumerate(block) if (p, s) in due]


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
