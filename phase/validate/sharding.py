"""What makes files parts of one campaign on one host class: the checks `phase merge` refuses
on and the `shards` rule re-checks from a file alone (one definition for both).

Each function returns problems, one phrase each naming what differs and where. Pure: nothing
here reads or writes a file.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from phase.base.errors import UsageProblem
from phase.results import CampaignConfig, HostIdentity, ResultsFile, Run, ShardInfo
from phase.results.schedule import schedule_prompts, split


def differ_named(pairs: Sequence[tuple[str, Any]], what: str,
                 show: Callable[[Any], str] = repr) -> list[str]:
    """One problem when the values of (name, value) pairs are not all equal: each distinct
    value (as `show` writes it) and the names that hold it."""
    groups: dict[str, tuple[str, list[str]]] = {}
    for name, v in pairs:
        key = json.dumps(v, sort_keys=True, default=str)
        groups.setdefault(key, (show(v), []))[1].append(name)
    if len(groups) < 2:
        return []
    parts = [f"{shown} in {', '.join(names)}" for shown, names in groups.values()]
    return [f"{what} differs: " + "; ".join(parts)]


def identity_fields_differ(hosts: Sequence[tuple[str, HostIdentity]]) -> list[tuple[str, str]]:
    """(field, problem) for every field of the host identity on which named hosts differ:
    hosts of one class may differ by name only."""
    return [(field, problem) for field in HostIdentity.model_fields
            for problem in differ_named([(name, getattr(identity, field))
                                         for name, identity in hosts],
                                        f"host class ({field})")]


def neutral_name(name: str, device: str | None) -> str:
    """A sensor's name with its device's identity (a GPU's UUID, whole or as the prefix the
    name uses) replaced by `<device>`: hosts of one class differ there and nowhere else."""
    if device:
        for k in range(len(device), 7, -1):
            if device[:k] in name:
                return name.replace(device[:k], "<device>")
    return name


def in_part(run: Run, shard: ShardInfo) -> bool:
    """Whether a run belongs to this shard's part of the plan."""
    return run.prompt in shard.prompts and run.repeat in shard.repeats


def stray_runs(runs: Sequence[Run], shard: ShardInfo) -> list[str]:
    """Ids of the runs outside this shard's part of the plan."""
    return [r.id for r in runs if not in_part(r, shard)]


def coverage(indices: Sequence[tuple[int, str]], count: int) -> list[str]:
    """Every shard index 0..count-1 exactly once, given (index, where it is) pairs."""
    by_index: dict[int, list[str]] = {}
    for index, name in indices:
        by_index.setdefault(index, []).append(name)
    out = [f"shard {i} given twice: {', '.join(names)}"
           for i, names in sorted(by_index.items()) if len(names) > 1]
    out += [f"shard index {i} is not below the count {count}"
            for i in sorted(by_index) if i >= count]
    missing = [str(i) for i in range(count) if i not in by_index]
    if missing:
        out.append(f"shard(s) {', '.join(missing)} of {count} missing")
    return out


def planned_part(config: CampaignConfig, shard: ShardInfo) -> list[tuple[str, str]]:
    """(field, problem) where a shard's recorded part is not the one the plan gives its index:
    every shard computes the split from the whole plan (phase.results.schedule.split)."""
    try:
        how, prompts, repeats = split(schedule_prompts(config), config.repeats,
                                      shard.count)
    except UsageProblem as exc:
        return [("count", str(exc))]
    i = shard.index
    if i >= shard.count:
        return []  # the schema refuses it
    out = []
    for field, recorded, planned in (("split", shard.split, how),
                                     ("prompts", shard.prompts, prompts[i]),
                                     ("repeats", shard.repeats, repeats[i])):
        if recorded != planned:
            out.append((field, f"shard {i} of {shard.count} records {field} {recorded!r}, but "
                               f"the plan's split gives it {planned!r}"))
    return out


def machine_of(results: ResultsFile) -> Callable[[Run], str | None]:
    """Which machine ran a run: its host, told apart by the shard that holds the run where
    one host name ran several shards (two machines can share a name: containers, pods)."""
    names = Counter(m.hostname for m in results.merged_from)

    def machine(run: Run) -> str | None:
        if run.host is None or names[run.host] < 2:
            return run.host
        shard = next((m.shard.index for m in results.merged_from
                      if m.hostname == run.host and in_part(run, m.shard)), None)
        return run.host if shard is None else f"{run.host} (shard {shard})"

    return machine
