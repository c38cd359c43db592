"""shards (blocking): hosts, shards and merged files re-checked from the file alone.

`phase merge` refuses shards that are not the parts of one campaign on one host class; a file
that reaches validation may never have passed through it (an edited merge, a shard resumed
elsewhere, a hand-joined file). What can be told from one file is checked again, with the
definitions merge itself uses (phase.validate.sharding):

- every run names a host the file lists in `hosts` (listed once each), and every listed host
  has the same identity, field by field, and the same host class: hosts may differ by name
  only;
- a shard's file holds the part of the plan its index gives it (split, prompts, repeats), only
  runs and plain references of that part, and its host lists the shard;
- a merged file (`merged_from`) is no shard itself, its shards are of one count and one split,
  every index once, every file other bytes (no sha256 twice), each the part its index gives
  it; every shard's host is listed and lists the shard, and every run ran on a host that ran
  the shard holding it; a sensor a shard named after its device (a GPU's UUID) is the merged
  sensor in the same place, device aside.

A file that merge would refuse cannot be published: its figures would mix machines or hold
runs no shard measured.
"""

from __future__ import annotations

from phase.results import ResultsFile, Run, ShardInfo
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings
from phase.validate.sharding import (
    coverage,
    differ_named,
    identity_fields_differ,
    in_part,
    neutral_name,
    planned_part,
)


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out = _hosts(results, ctx)
    if results.shard is not None:
        out += _shard(results, results.shard, ctx)
    if results.merged_from:
        out += _merged(results, ctx)
    return out


def _finding(ctx: Context, message: str, json_path: str, *, run: Run | None = None,
             prompt: str | None = None, sensor: str | None = None) -> Finding:
    return ctx.finding("shards", "blocking", message, json_path=json_path, run=run,
                       prompt=prompt, sensor=sensor)


def _hosts(results: ResultsFile, ctx: Context) -> list[Finding]:
    out = []
    listed: dict[str, int] = {}
    for i, host in enumerate(results.hosts):
        if host.hostname in listed:
            out.append(_finding(ctx, f"host {host.hostname!r} is listed twice in $.hosts",
                                f"$.hosts[{i}].hostname"))
        listed.setdefault(host.hostname, i)
    for i, run in enumerate(results.runs):
        if run.host is not None and run.host not in listed:
            shown = ", ".join(repr(h) for h in listed) or "none"
            out.append(_finding(ctx, f"the run names host {run.host!r}, which $.hosts does not "
                                     f"list (it lists {shown})",
                                f"$.runs[{i}].host", run=run))
    named = [(h.hostname, h.identity) for h in results.hosts]
    for field, problem in identity_fields_differ(named):
        j = next(k for k, h in enumerate(results.hosts)
                 if getattr(h.identity, field) != getattr(results.hosts[0].identity, field))
        out.append(_finding(ctx, f"{problem}: hosts of one file may differ by name only",
                            f"$.hosts[{j}].identity.{field}"))
    for problem in differ_named([(h.hostname, h.host_class) for h in results.hosts],
                                "host class label"):
        j = next(k for k, h in enumerate(results.hosts)
                 if h.host_class != results.hosts[0].host_class)
        out.append(_finding(ctx, problem, f"$.hosts[{j}].host_class"))
    return out


def _shard(results: ResultsFile, shard: ShardInfo, ctx: Context) -> list[Finding]:
    out = [_finding(ctx, problem, f"$.shard.{field}")
           for field, problem in planned_part(results.config, shard)]
    if results.merged_from:
        out.append(_finding(ctx, "a file is either a shard (`shard`) or merged from shards "
                                 "(`merged_from`), not both", "$.shard"))
        return out
    for i, run in enumerate(results.runs):
        if not in_part(run, shard):
            field = "prompt" if run.prompt not in shard.prompts else "repeat"
            out.append(_finding(
                ctx, f"shard {shard.index} of {shard.count} runs prompts {shard.prompts} and "
                     f"repeats {shard.repeats}, but holds this run ({field} "
                     f"{getattr(run, field)!r}): another shard's part",
                f"$.runs[{i}].{field}", run=run))
    for i, ref in enumerate(results.references):
        if ref.prompt not in shard.prompts:
            out.append(_finding(
                ctx, f"shard {shard.index} holds the plain reference of prompt {ref.prompt!r}, "
                     f"which its part (prompts {shard.prompts}) does not include",
                f"$.references[{i}].prompt", prompt=ref.prompt))
    for i, host in enumerate(results.hosts):
        if host.shards and shard.index not in host.shards:
            out.append(_finding(ctx, f"host {host.hostname!r} ran this file's shard "
                                     f"{shard.index}, but lists shards {host.shards}",
                                f"$.hosts[{i}].shards"))
    return out


def _merged(results: ResultsFile, ctx: Context) -> list[Finding]:
    merged = results.merged_from
    out = []
    for problem in (differ_named([(m.file, m.shard.count) for m in merged], "shard count")
                    + differ_named([(m.file, m.shard.split) for m in merged], "split")
                    + differ_named([(m.file, m.shard.job_id) for m in merged], "job id")):
        out.append(_finding(ctx, problem, "$.merged_from"))
    count = merged[0].shard.count
    out += [_finding(ctx, problem, "$.merged_from")
            for problem in coverage([(m.shard.index, m.file) for m in merged], count)]
    for i, m in enumerate(merged):
        out += [_finding(ctx, f"{m.file}: {problem}", f"$.merged_from[{i}].shard.{field}")
                for field, problem in planned_part(results.config, m.shard)]
    out += _same_bytes(results, ctx)
    out += _shard_hosts(results, ctx)
    out += _run_hosts(results, ctx)
    out += _sensor_places(results, ctx)
    return out


def _same_bytes(results: ResultsFile, ctx: Context) -> list[Finding]:
    """Each shard's file is other bytes: two entries with one sha256 are one file read twice
    (whatever names and indices they carry), so one shard's runs stand in for another's."""
    first: dict[str, int] = {}
    out = []
    for i, m in enumerate(results.merged_from):
        j = first.setdefault(m.sha256, i)
        if j != i:
            other = results.merged_from[j]
            out.append(_finding(ctx, f"{m.file} (shard {m.shard.index}) has the sha256 of "
                                     f"{other.file} (shard {other.shard.index}): the same "
                                     "file merged twice", f"$.merged_from[{i}].sha256"))
    return out


def _shard_hosts(results: ResultsFile, ctx: Context) -> list[Finding]:
    hosts = {h.hostname: (i, h) for i, h in enumerate(results.hosts)}
    out = []
    for i, m in enumerate(results.merged_from):
        entry = hosts.get(m.hostname)
        if entry is None:
            out.append(_finding(ctx, f"{m.file} was measured on {m.hostname!r}, which $.hosts "
                                     "does not list", f"$.merged_from[{i}].hostname"))
        elif m.shard.index not in entry[1].shards:
            out.append(_finding(ctx, f"{m.file} is shard {m.shard.index}, measured on "
                                     f"{m.hostname!r}, but that host lists shards "
                                     f"{entry[1].shards}", f"$.hosts[{entry[0]}].shards"))
    indices = {m.shard.index for m in results.merged_from}
    for i, h in enumerate(results.hosts):
        unknown = [s for s in h.shards if s not in indices]
        if unknown:
            out.append(_finding(ctx, f"host {h.hostname!r} lists shard(s) {unknown}, which "
                                     "$.merged_from does not hold", f"$.hosts[{i}].shards"))
    return out


def _run_hosts(results: ResultsFile, ctx: Context) -> list[Finding]:
    """Every run ran on a host that ran (or resumed) the shard whose part holds it."""
    ran: dict[int, set[str]] = {}
    for m in results.merged_from:
        ran.setdefault(m.shard.index, set()).add(m.hostname)
    for h in results.hosts:
        for index in h.shards:
            ran.setdefault(index, set()).add(h.hostname)
    out = []
    for i, run in enumerate(results.runs):
        holders = [m.shard for m in results.merged_from if in_part(run, m.shard)]
        if not holders:
            out.append(_finding(ctx, "no shard in $.merged_from holds this run's prompt and "
                                     "repeat: no shard measured it", f"$.runs[{i}].prompt",
                                run=run))
            continue
        allowed = set().union(*(ran.get(s.index, set()) for s in holders))
        listed = any(h.hostname == run.host for h in results.hosts)
        if run.host is not None and listed and run.host not in allowed:
            shard = holders[0].index
            out.append(_finding(ctx, f"the run is in shard {shard}'s part, which "
                                     f"{', '.join(sorted(allowed))} ran, not {run.host!r}",
                                f"$.runs[{i}].host", run=run))
    return out


def _sensor_places(results: ResultsFile, ctx: Context) -> list[Finding]:
    """A shard's own name for a merged sensor names the same sensor, its device aside."""
    base_devices = next((m.sensor_devices for m in results.merged_from if m.shard.index == 0),
                        {})
    out = []
    for i, m in enumerate(results.merged_from):
        for s in results.sensors:
            own = m.sensor_names.get(s.name, s.name)
            base = neutral_name(s.name, base_devices.get(s.name) or s.device)
            if neutral_name(own, m.sensor_devices.get(s.name)) != base:
                out.append(_finding(
                    ctx, f"{m.file} called merged sensor {s.name!r} {own!r}: not the same "
                         "sensor by place (names may differ only in the device they read)",
                    f"$.merged_from[{i}].sensor_names", sensor=s.name))
        unknown = [n for n in {*m.sensor_names, *m.sensor_devices}
                   if n not in {s.name for s in results.sensors}]
        for name in sorted(unknown):
            out.append(_finding(ctx, f"{m.file} maps sensor {name!r}, which $.sensors does not "
                                     "declare", f"$.merged_from[{i}].sensor_names",
                                sensor=name))
    return out


RULE = Rule(order=70, check=check)
