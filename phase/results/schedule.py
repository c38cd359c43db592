"""The order runs happen in: every condition (prompt x strategy x a level of each extra factor,
config.factors) once per repeat, reshuffled per repeat; with config.blocked_by (schema 16),
each repeat runs one level of that factor's conditions back to back, the levels in a shuffled
order and each level's conditions shuffled.

Part of the results contract: a run's `id` and `order` in a results file are its place in this
schedule (or, for an adaptive round past the planned repeats, in `extra_round`), which
`phase measure` follows and `phase validate` checks. So is `split`: which part
of the plan each shard of a campaign runs, which shard files record and validation re-derives.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from phase.base.errors import UsageProblem
from phase.results.config import CampaignConfig, FactorSpec, Level

# A condition's level of each extra factor, in declared order: ((name, level), ...).
Levels = tuple[tuple[str, Level], ...]


@dataclass(frozen=True)
class Combination:
    """One level of each extra factor, and the run id's part that names them
    (`-threads=2-mode=a`; empty where there are no extra factors)."""

    levels: Levels = ()
    tag: str = ""


def combinations(factors: Sequence[FactorSpec]) -> list[Combination]:
    """Every combination of the extra factors' levels, the first factor's slowest; one empty
    combination when there are none (so prompt x strategy alone)."""
    choices = [[(f.name, level, label) for level, label in zip(f.levels, f.labels, strict=True)]
               for f in factors]
    return [Combination(tuple((n, v) for n, v, _ in combo),
                        "".join(f"-{n}={label}" for n, _, label in combo))
            for combo in itertools.product(*choices)]


@dataclass(frozen=True)
class ScheduledRun:
    repeat: int
    order: int
    prompt: str
    strategy: str
    combination: Combination = Combination()

    @property
    def run_id(self) -> str:
        return f"r{self.repeat}-{self.prompt}-{self.strategy}{self.combination.tag}"

    @property
    def levels(self) -> Levels:
        return self.combination.levels

    @property
    def condition(self) -> tuple[str, str, Levels]:
        return (self.prompt, self.strategy, self.combination.levels)


def _block(prompts: Sequence[str], strategies: Sequence[str],
           factors: Sequence[FactorSpec]) -> list[tuple[str, str, Combination]]:
    # Without extra factors this is prompt x strategy in the order it always was, and
    # random.shuffle's permutation depends only on the list's length and the seed, so the
    # speculative study's order and ids are exactly those of files before factors existed.
    combos = combinations(factors)
    return [(p, s, c) for p in prompts for s in strategies for c in combos]


def _ordered(block: list[tuple[str, str, Combination]], seed: int, repeat: int, shuffle: bool,
             blocked_by: str | None) -> list[tuple[str, str, Combination]]:
    """A repeat's conditions in the order they run.

    Without `blocked_by`: the whole block shuffled, exactly as before blocks existed (old
    files' orders and ids replay). With it: grouped by that factor's level, so the conditions
    a ratio pairs (every strategy at one level) run minutes apart rather than a repeat apart,
    and drift of the machine's pace over a repeat falls between levels, not inside a pair;
    the groups' order and each group's order are drawn from the same seeded generator."""
    if blocked_by is None:
        if shuffle:
            random.Random(f"{seed}:{repeat}").shuffle(block)
        return block
    groups: dict[Level, list[tuple[str, str, Combination]]] = {}
    for item in block:
        groups.setdefault(dict(item[2].levels)[blocked_by], []).append(item)
    ordered = list(groups.values())
    if shuffle:
        rng = random.Random(f"{seed}:{repeat}:blocks")
        rng.shuffle(ordered)
        for group in ordered:
            rng.shuffle(group)
    return [item for group in ordered for item in group]


def schedule(
    prompts: Sequence[str], strategies: Sequence[str], repeats: int, seed: int, shuffle: bool,
    factors: Sequence[FactorSpec] = (), blocked_by: str | None = None,
) -> list[ScheduledRun]:
    """Every condition once per repeat; each repeat in its own shuffled order (in blocks of
    one `blocked_by` level, where given).

    The order depends only on the seed, so a resumed campaign replays the same schedule.
    """
    out: list[ScheduledRun] = []
    for repeat in range(repeats):
        block = _ordered(_block(prompts, strategies, factors), seed, repeat, shuffle,
                         blocked_by)
        for prompt, strategy, combo in block:
            out.append(ScheduledRun(repeat, len(out), prompt, strategy, combo))
    return out


def planned_schedule(config: CampaignConfig) -> list[ScheduledRun]:
    """The whole schedule a results file's config describes. A serving campaign's run
    serves the whole pool of prompts, so its schedule's one "prompt" is the pool's name."""
    return schedule(schedule_prompts(config), config.strategies, config.repeats,
                    config.seed, config.shuffle, config.factors, config.blocked_by)


def schedule_prompts(config: CampaignConfig) -> list[str]:
    """What the schedule crosses with strategies and levels: the prompts, or a serving
    campaign's pool (config.serving.pool)."""
    if config.serving is not None:
        return [config.serving.pool]
    return [p.name for p in config.prompts]


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
                 slot.strategy, slot.combination, of=slot.run_id, attempt=attempt)


def extra_round(prompts: Sequence[str], strategies: Sequence[str], repeats: int, seed: int,
                shuffle: bool, repeat: int, due: set[tuple[str, str, Levels]],
                max_reruns: int, factors: Sequence[FactorSpec] = (),
                blocked_by: str | None = None) -> list[ScheduledRun]:
    """An adaptive round (repeat >= repeats): the schedule's block for `repeat` (every
    condition, ordered from the seed and the repeat exactly as a planned repeat is), keeping
    only the `due` conditions (prompt, strategy, levels). Run ids are the schedule's
    (`r<repeat>-<prompt>-<strategy>[-<factor>=<label>...]`).

    Orders lie past every planned run and every re-run of one (planned re-runs reach the
    schedule's length L times 1 + max_reruns), one block of B = prompts x strategies slots per
    round, and each slot leaves room for its own re-runs: slot j of round e (repeat - repeats)
    is at L(1 + R) + (eB + j)(1 + R), its re-run N at that plus N (`rerun(slot, N, 1)`)."""
    block = _ordered(_block(prompts, strategies, factors), seed, repeat, shuffle, blocked_by)
    width = 1 + max_reruns
    base = repeat * len(block) * width  # L(1 + R) + (repeat - repeats) B (1 + R)
    return [ScheduledRun(repeat, base + j * width, p, s, c)
            for j, (p, s, c) in enumerate(block) if (p, s, c.levels) in due]


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
