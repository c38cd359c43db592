"""host-spread (warning): one condition measured on several hosts of one host class should
agree across them.

A merged campaign (`phase merge`) records which host ran each run (`Run.host`). Where a
condition (prompt x strategy) has runs from two or more hosts (shards split by repeats), the
mean per host is compared: chip energy per token where every host has standing values (those
earlier rules did not reject), else tokens/s. When (max - min) / mean of the per-host means
exceeds `host_spread_max`, the hosts do not measure alike (a throttled node, a noisy
neighbour, a different BIOS setting) and the condition's figures mix machines; the finding
names each host's mean. Shards split by prompts keep every condition on one host, so the rule
has nothing to compare there. Runs are grouped by the machine that ran them: the host, told
apart by shard where one host name ran several shards (two containers or pods can share a
name); that the hosts are of one class is rule shards' (blocking).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable

from phase.analysis import energy_j_per_token, runs_by_condition, spread
from phase.results import ResultsFile, Run
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings
from phase.validate.sharding import machine_of


def _per_host(runs: list[Run], machine: Callable[[Run], str | None]) -> dict[str, list[Run]]:
    grouped: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        name = machine(run)
        if name is not None:
            grouped[name].append(run)
    return grouped


def _chip_means(by_host: dict[str, list[Run]], ctx: Context) -> dict[str, float] | None:
    """Each host's mean standing chip J/token; None unless every host has one."""
    chip = ctx.chip_sensor
    if chip is None:
        return None
    means = {}
    for host, runs in by_host.items():
        values = [v for r in runs if (v := energy_j_per_token(r, chip)) is not None
                  and not ctx.is_rejected(r.id, chip)]
        if not values:
            return None
        means[host] = statistics.fmean(values)
    return means


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []
    machine = machine_of(results)
    for (prompt, strategy, levels), runs in runs_by_condition(results).items():
        by_host = _per_host(runs, machine)
        if len(by_host) < 2:
            continue
        chip = _chip_means(by_host, ctx)
        if chip is not None:
            means, metric, unit, sensor = chip, "chip energy per token", "mJ", ctx.chip_sensor
            shown = {h: v * 1000.0 for h, v in means.items()}
        else:
            means = {h: statistics.fmean(r.tokens_per_s for r in rs) for h, rs in by_host.items()}
            metric, unit, sensor, shown = "tokens/s", "tokens/s", None, means
        measured = spread(list(means.values()))
        if measured is None or measured <= settings.host_spread_max:
            continue
        listed = ", ".join(f"{h} {v:.3g} {unit}" for h, v in sorted(shown.items()))
        out.append(ctx.finding(
            "host-spread", "warning",
            f"{metric} differs {measured:.1%} between hosts of one class ({listed}; limit "
            f"{settings.host_spread_max:.1%}): this condition's figures mix machines",
            prompt=prompt, strategy=strategy, levels=levels, sensor=sensor,
            numbers={"spread": measured, "limit": settings.host_spread_max,
                     "hosts": len(means), "min": min(means.values()),
                     "max": max(means.values())},
        ))
    return out


RULE = Rule(order=230, check=check)
