"""`phase merge OUT FILES...`: the shards of one campaign -> one results file.

    merged = merge_files(Path("results/x.json"), [Path("s0.json"), Path("s1.json")])

The shards must be the complete parts of one campaign (same campaign id, every index 0..N-1
once) measured the same way (config, model sha256s, phase and llama.cpp versions, declared
sensors) on one host class (phase.results.HostIdentity: hosts may differ by name only); what
is refused, and why, is in `merge_checks`. Every refusal is exit 2 with one line naming what
differs and in which files, and nothing is written.

The merged file is an ordinary complete campaign: its runs keep the ids and the places in the
shuffled order they had in the whole plan, each says which host ran it (`Run.host`), `hosts`
lists every machine and its shards, and `merged_from` every input file with its sha256. The
inputs are only read; OUT is created exclusively (an existing file is never replaced).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from phase.base.errors import UsageProblem
from phase.campaign import merge_checks
from phase.campaign.merge_checks import ShardFile
from phase.results import (
    CostProfile,
    HostInfo,
    MergedShard,
    PlainReference,
    PrimaryEnergy,
    ProfilePoint,
    ResultsError,
    ResultsFile,
    Run,
    SensorInfo,
    UnavailableBackend,
    dump_json,
    parse,
)
from phase.storage.jsonread import decode_utf8, parse_json, read_regular_bytes
from phase.storage.outputs import NewFile


class MergeRefused(UsageProblem):
    """The files are not the shards of one campaign on one host class (exit 2)."""


def read_shard(path: Path) -> ShardFile:
    """Read one input once, as every results file is read (phase.storage.jsonread: a regular
    UTF-8 file, no duplicate key, NaN or runaway nesting; strict types): the sha256 is of the
    very bytes that were parsed."""
    try:
        data = read_regular_bytes(path)
        results = parse(parse_json(decode_utf8(data, path), path), path)
    except ResultsError as exc:
        raise MergeRefused(str(exc)) from None
    if not isinstance(results, ResultsFile):
        raise MergeRefused(f"{path}: $.kind: a summary file; only raw shard files merge")
    return ShardFile(path, hashlib.sha256(data).hexdigest(), results)


def _hosts(files: Sequence[ShardFile]) -> list[HostInfo]:
    """One entry per machine, with every shard it ran."""
    by_name: dict[str, HostInfo] = {}
    for f in files:
        for host in f.results.hosts:
            known = by_name.get(host.hostname)
            shards = sorted({*(known.shards if known else []), f.shard.index})
            by_name[host.hostname] = host.model_copy(update={"shards": shards})
    return list(by_name.values())


def _renames(f: ShardFile, first: ShardFile) -> dict[str, str]:
    """This shard's sensor names -> the merged file's (shard 0's), where a device-named sensor
    (a GPU's UUID) is called otherwise on this shard's host. The checks matched them by place."""
    return {own.name: base.name
            for own, base in zip(f.results.sensors, first.results.sensors, strict=True)
            if own.name != base.name}


def _renamed(run: Run, renames: dict[str, str]) -> Run:
    if not renames:
        return run
    return run.model_copy(update={
        "energy": [w.model_copy(update={"sensor": renames.get(w.sensor, w.sensor)})
                   for w in run.energy],
        "samples": [t.model_copy(update={"sensor": renames.get(t.sensor, t.sensor)})
                    for t in run.samples],
        "temperatures_c": {renames.get(k, k): v for k, v in run.temperatures_c.items()},
    })


def _devices_differ(files: Sequence[ShardFile]) -> bool:
    return any([s.device for s in f.results.sensors]
               != [s.device for s in files[0].results.sensors] for f in files)


def _sensors(files: Sequence[ShardFile]) -> list[SensorInfo]:
    """The shards' sensors (declared alike); each one's measured update period is the
    slowest any host measured, the conservative value for the rules that use it. Where the
    hosts' devices differ, the merged sensor names none (each shard's is in merged_from)."""
    out = []
    differ = _devices_differ(files)
    for i, sensor in enumerate(files[0].results.sensors):
        periods = [p for f in files if (p := f.results.sensors[i].update_period_s) is not None]
        if periods:
            sensor = sensor.model_copy(update={"update_period_s": max(periods),
                                               "update_period_reason": None})
        if differ:
            sensor = sensor.model_copy(update={"device": None})
        out.append(sensor)
    return out


def _primary(files: Sequence[ShardFile]) -> PrimaryEnergy | None:
    first = files[0].results.primary_energy
    if first is None:
        return None
    devices = list(dict.fromkeys(f"{_hostname(f)}: {f.results.primary_energy.device}"
                                 for f in files if f.results.primary_energy is not None))
    if len({d.split(": ", 1)[1] for d in devices}) < 2:
        return first
    return first.model_copy(update={"device": "; ".join(devices)})


def _hostname(f: ShardFile) -> str:
    return f.results.hosts[0].hostname if f.results.hosts else f.results.provenance.hostname


def _merged_shard(f: ShardFile, first: ShardFile, devices: bool) -> MergedShard:
    renames = _renames(f, first)
    return MergedShard(
        file=f.name, sha256=f.sha256, shard=f.shard, hostname=_hostname(f),
        created=f.results.created,
        sensor_names={merged: own for own, merged in renames.items()},
        sensor_devices={base.name: own.device for own, base
                        in zip(f.results.sensors, first.results.sensors, strict=True)
                        if own.device} if devices else {})


def _references(files: Sequence[ShardFile]) -> list[PlainReference]:
    found: dict[tuple[str, str], PlainReference] = {}
    for f in files:
        for ref in f.results.references:
            found.setdefault((ref.prompt, repr(ref.factors)), ref)
    order = [p.name for p in files[0].results.config.prompts]
    return sorted(found.values(), key=lambda r: order.index(r.prompt) if r.prompt in order
                  else len(order))


def _unavailable(files: Sequence[ShardFile]) -> list[UnavailableBackend]:
    seen: dict[tuple[str, str], UnavailableBackend] = {}
    for f in files:
        for u in f.results.sensors_unavailable:
            seen.setdefault((u.backend, u.reason), u)
    return list(seen.values())


def _profile(files: Sequence[ShardFile]) -> CostProfile | None:
    """Every shard's cost profile in one: each measured the fills of its own prompts on the
    same host class, so the points are pooled (a fill two shards both profiled, as in a split
    by repeats, is kept once, from the lower shard) and the profiling time is summed. None
    when no shard profiled."""
    profiles = [f.results.profile for f in files if f.results.profile is not None]
    if not profiles:
        return None
    points: dict[tuple[str | None, int], ProfilePoint] = {}
    for profile in profiles:
        for point in profile.points:
            points.setdefault((point.prompt, point.kv_tokens), point)
    return profiles[0].model_copy(update={
        "points": sorted(points.values(), key=lambda p: p.kv_tokens),
        "wall_s": sum(p.wall_s for p in profiles),
    })


def merged(files: Sequence[ShardFile], out_id: str) -> ResultsFile:
    """The one results file the checked shards make (shard 0's file is the template, so
    fields this module does not know are carried from it)."""
    files = sorted(files, key=lambda f: f.shard.index)
    first = files[0].results
    hosts = _hosts(files)
    runs = []
    for f in files:
        renames = _renames(f, files[0])
        runs += [_renamed(r if r.host else r.model_copy(update={"host": _hostname(f)}), renames)
                 for r in f.results.runs]
    runs.sort(key=lambda r: r.order)
    provenance = first.provenance.model_copy(
        update={"hostname": ", ".join(h.hostname for h in hosts)})
    devices = _devices_differ(files)
    # Complete only with every run of the whole plan (merge_checks.planned refuses a shard
    # that lacks one; this is the rule itself, whatever the checks let through).
    whole = first.model_copy(update={"shard": None})
    status = ("complete" if set(merge_checks.planned_ids(whole)) <= {r.id for r in runs}
              else "interrupted")
    return first.model_copy(update={
        "id": out_id,
        "created": min(f.results.created for f in files),
        "status": status,
        "provenance": provenance,
        "sensors": _sensors(files),
        "sensors_unavailable": _unavailable(files),
        "references": _references(files),
        "runs": runs,
        "profile": _profile(files),
        "shard": None,
        "hosts": hosts,
        "primary_energy": _primary(files),
        "merged_from": [_merged_shard(f, files[0], devices) for f in files],
        # Each shard stated the time of its own runs, and its file keeps that statement;
        # shard 0's would be held against every shard's runs here.
        "stated_duration": None,
    })


def merge_files(out: Path, paths: Sequence[Path]) -> ResultsFile:
    """Check the shard files, then write their merged file to `out` (exclusively)."""
    if not paths:
        raise MergeRefused("no shard files given")
    resolved = {p.resolve() for p in paths}
    if out.resolve() in resolved:
        raise MergeRefused(f"{out}: is one of the inputs; the output must be a new file")
    with NewFile.claim(out, "OUT") as target:
        files = [read_shard(p) for p in paths]
        found = merge_checks.problems(files)
        if found:
            raise MergeRefused("cannot merge: " + "; ".join(found))
        result = merged(files, out.stem)
        target.write(dump_json(result))
    return result
