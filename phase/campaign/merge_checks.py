"""What `phase merge` refuses: shards that are not parts of one campaign on one host class.

Each check returns problems, one phrase each naming what differs and in which files; the
merge refuses (exit 2) with all of them on one line. Nothing here reads or writes a file.
What can be told from one merged or shard file alone (host class, coverage, each shard's
part, sensors matched by place) is defined once in phase.validate.sharding, which the
`shards` validation rule uses too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phase.results import PlainReference, Provenance, ResultsFile, ShardInfo
from phase.results.schedule import planned_schedule
from phase.validate import sharding
from phase.validate.sharding import differ_named


@dataclass(frozen=True)
class ShardFile:
    """One input as read: its path, the sha256 of the bytes read, and the parsed file."""

    path: Path
    sha256: str
    results: ResultsFile

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def shard(self) -> ShardInfo:
        assert self.results.shard is not None  # checked by `not_shards` before anything else
        return self.results.shard


def _differ(files: Sequence[ShardFile], what: str, value: Callable[[ShardFile], Any],
            show: Callable[[Any], str] = repr) -> list[str]:
    return differ_named([(f.name, value(f)) for f in files], what, show)


def not_shards(files: Sequence[ShardFile]) -> list[str]:
    out = []
    for f in files:
        if f.results.shard is None:
            out.append(f"{f.name} is not a shard (no `shard` field): only files written by "
                       "`phase measure --shard I/N` (or a scheduler's array) merge")
        elif f.results.status != "complete":
            out.append(f"{f.name} is {f.results.status!r}, not complete: resume it with "
                       f"`phase measure … --resume {f.path}` first")
    return out


def campaign(files: Sequence[ShardFile]) -> list[str]:
    return (_differ(files, "campaign id", lambda f: f.results.campaign_id)
            + _differ(files, "experiment", lambda f: f.results.experiment)
            + _differ(files, "shard count", lambda f: f.shard.count, str))


def coverage(files: Sequence[ShardFile]) -> list[str]:
    """Every shard index 0..N-1 exactly once."""
    return sharding.coverage([(f.shard.index, f.name) for f in files], files[0].shard.count)


def _config_keys(files: Sequence[ShardFile]) -> list[str]:
    dumps = [f.results.config.model_dump() for f in files]
    return [key for key in dumps[0] if any(d.get(key) != dumps[0][key] for d in dumps[1:])]


def config(files: Sequence[ShardFile]) -> list[str]:
    out = []
    keys = _config_keys(files)
    if keys:
        names = ", ".join(f.name for f in files)
        out.append(f"config differs in {', '.join('config.' + k for k in keys)} "
                   f"(across {names})")
    out += _differ(files, "threads", lambda f: (f.results.provenance.threads,
                                                f.results.provenance.threads_batch))
    return out


def _model_sha(f: ShardFile, role: str) -> str | None:
    return next((m.sha256 for m in f.results.models if m.role == role), None)


def models(files: Sequence[ShardFile]) -> list[str]:
    roles = sorted({m.role for f in files for m in f.results.models})
    out = []
    for role in roles:
        out += _differ(files, f"{role} model sha256", functools.partial(_model_sha, role=role),
                       lambda sha: str(sha)[:12])
    return out


def versions(files: Sequence[ShardFile]) -> list[str]:
    def prov(f: ShardFile) -> Provenance:
        return f.results.provenance

    return (_differ(files, "phase version (and commit)",
                    lambda f: (prov(f).phase_version, prov(f).git_commit))
            + _differ(files, "llama-cpp-python version",
                      lambda f: prov(f).llama_cpp_python_version)
            + _differ(files, "llama.cpp build", lambda f: prov(f).llama_cpp_system_info)
            # The same build runs other kernels with or without its extra CPU buffers.
            + _differ(files, "kernels used (extra CPU buffers, weight buffers)",
                      lambda f: (prov(f).cpu_extra_buffers, prov(f).weight_buffers)))


def host_class(files: Sequence[ShardFile]) -> list[str]:
    """Hosts may differ by name only: every field of every host's identity must agree (a shard
    resumed on another machine lists two hosts; both count)."""
    missing = [f.name for f in files if not f.results.hosts]
    if missing:
        return [f"{', '.join(missing)} record(s) no host identity (`hosts`)"]
    hosts = [(f"{f.name} ({h.hostname})", h.identity) for f in files for h in f.results.hosts]
    return [problem for _, problem in sharding.identity_fields_differ(hosts)]


def neutral_names(f: ShardFile) -> dict[str, str]:
    return {s.name: sharding.neutral_name(s.name, s.device) for s in f.results.sensors}


def _declared(f: ShardFile) -> list[dict[str, Any]]:
    names = neutral_names(f)
    out = []
    for s in f.results.sensors:
        d = s.model_dump(exclude={"update_period_s", "update_period_reason", "device"})
        d["name"] = names[s.name]
        if d.get("encloses") is not None:
            d["encloses"] = [names.get(n, n) for n in d["encloses"]]
        out.append(d)
    return out


def sensors(files: Sequence[ShardFile]) -> list[str]:
    """The same sensors, declared the same way; only the measured update period and the
    device a sensor reads (a GPU's UUID, also in its name) may differ between hosts."""
    def shown(d: list[dict[str, Any]]) -> str:
        return "[" + ", ".join(f"{s['name']} ({s['scope']} {s['kind']}, smoothing "
                               f"{s['smoothing_s']} s)" for s in d) + "]" if d else "none"

    return _differ(files, "declared sensors", _declared, shown)


def primary_energy(files: Sequence[ShardFile]) -> list[str]:
    """The same sensors (by position, device aside) count as chip energy in every shard."""
    def chosen(f: ShardFile) -> Any:
        pe = f.results.primary_energy
        if pe is None:
            return None
        names = neutral_names(f)
        return [[names.get(n, n) for n in pe.sensors], pe.chosen_by]

    return _differ(files, "chip-energy sensors (primary_energy)", chosen, str)


def parts(files: Sequence[ShardFile]) -> list[str]:
    """Shards split the plan the same way, each the part the plan gives its index, and each
    holds only runs of its own part."""
    out = _differ(files, "split", lambda f: f.shard.split, str)
    seen: dict[str, str] = {}
    for f in files:
        out += [f"{f.name}: {problem}"
                for _, problem in sharding.planned_part(f.results.config, f.shard)]
        stray = sharding.stray_runs(f.results.runs, f.shard)
        if stray:
            out.append(f"{f.name} holds run(s) outside its shard's part: {', '.join(stray[:3])}")
        for run in f.results.runs:
            if run.id in seen:
                out.append(f"run {run.id} is in both {seen[run.id]} and {f.name}")
            seen.setdefault(run.id, f.name)
    return out


def planned_ids(results: ResultsFile) -> list[str]:
    """The ids of every run of the plan `results` records (its shard's part, if a shard)."""
    config = results.config
    runs = planned_schedule(config)
    shard = results.shard
    return [r.run_id for r in runs
            if shard is None or (r.prompt in shard.prompts and r.repeat in shard.repeats)]


def planned(files: Sequence[ShardFile]) -> list[str]:
    """A shard marked complete holds every run of its part of the plan: `status` alone is
    not trusted, or a merged "complete" campaign would lack planned runs."""
    out = []
    for f in files:
        have = {r.id for r in f.results.runs}
        missing = [i for i in planned_ids(f.results) if i not in have]
        if missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more"
                                               if len(missing) > 3 else "")
            out.append(f"{f.name} is marked complete but lacks {len(missing)} planned run(s) "
                       f"({shown}); it was cut short or edited: measure that shard again")
    return out


def _reference_sha(f: ShardFile, key: Callable[[PlainReference], tuple[str, str]],
                   wanted: tuple[str, str]) -> str:
    return next(r.output_sha256 for r in f.results.references if key(r) == wanted)


def references(files: Sequence[ShardFile]) -> list[str]:
    """Shards that decoded the same prompt's plain reference must agree on it."""
    def key(ref: PlainReference) -> tuple[str, str]:
        # A reference per prompt, and per output level where the experiment has any.
        return (ref.prompt, ", ".join(f"{n}={v}" for n, v in ref.factors.items()))

    out = []
    for prompt, levels in sorted({key(r) for f in files for r in f.results.references}):
        at = f" at {levels}" if levels else ""
        out += _differ([f for f in files
                        if any(key(r) == (prompt, levels) for r in f.results.references)],
                       f"plain reference of prompt {prompt!r}{at}",
                       functools.partial(_reference_sha, key=key, wanted=(prompt, levels)),
                       lambda sha: sha[:12])
    return out


# In order: a file that is not a complete shard stops the rest (they read its shard info).
FIRST = (not_shards,)
CHECKS = (campaign, coverage, config, models, versions, host_class, sensors, primary_energy,
          parts, planned, references)


def problems(files: Sequence[ShardFile]) -> list[str]:
    found = [p for check in FIRST for p in check(files)]
    if found:
        return found
    return [p for check in CHECKS for p in check(files)]
