"""Shards: one campaign's plan split over several machines, each running its part on its own.

    request = shard_request("1/3") or shard_from_env(os.environ)   # which part, of how many
    job = job_id(given, os.environ)                                 # the scheduler's job id
    identity = identify(experiment, plan, request, job)             # campaign id + ShardInfo
    runs = keep(schedule(...), identity.shard)                      # this shard's runs

Every shard computes the whole plan (the same seed gives the same shuffled order everywhere)
and keeps its own part, so no shard needs to hear from another. The split keeps every
comparison on one machine: a shard holds whole prompts (every strategy and repeat of a prompt,
with that prompt's plain reference), or, when the plan has fewer prompts than shards, whole
repeats (every prompt and strategy once per repeat, with every prompt's plain reference).
Runs keep their ids and their places (`order`) in the whole plan, so merging the shards gives
the same runs an unsharded campaign has.

The campaign id is derived, not drawn: sha256 of the experiment's name, its plan (every setting,
models as named), the shard count and the job id, so independent processes agree on it. The
job id is `--job-id`, else `PHASE_JOB_ID`, else Slurm's `SLURM_ARRAY_JOB_ID` (one id for every
task of an array); two sharded campaigns of the same plan need different job ids to get
different campaign ids.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from phase.base.errors import UsageProblem, env_value
from phase.campaign.plan import CampaignPlan
from phase.campaign.schedule import ScheduledRun
from phase.results import ShardInfo

# `split` lives with the results contract (validation re-derives each shard's part from it).
from phase.results.schedule import split as split

# Where a Kubernetes Indexed Job's shard count comes from: the Job sets JOB_COMPLETION_INDEX in
# every pod but not the number of completions, so the manifest sets this to `completions`.
SHARD_COUNT_ENV = "PHASE_SHARD_COUNT"
JOB_ID_ENV = "PHASE_JOB_ID"
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class ShardRequest:
    """Shard `index` (from 0) of `count`, and where that was read (for the file and errors)."""

    index: int
    count: int
    source: str


@dataclass(frozen=True)
class CampaignIdentity:
    """What every shard of one campaign shares (the id) and what is this shard's own."""

    campaign_id: str
    shard: ShardInfo | None


def _checked(index: int, count: int, source: str) -> ShardRequest:
    if count < 1:
        raise UsageProblem(f"{source}: the shard count must be at least 1, not {count}")
    if not 0 <= index < count:
        raise UsageProblem(
            f"{source}: shard index {index} is outside 0..{count - 1} (shards count from 0)"
        )
    return ShardRequest(index, count, source)


def shard_request(text: str, source: str = "--shard") -> ShardRequest:
    """`I/N` -> shard I (0-based) of N. An empty value is an error, not "no shard"."""
    if not text.strip():
        raise UsageProblem(f"{source}: the value is empty (an unset variable?); give I/N, "
                           "or leave the option out")
    match = _SHARD.match(text)
    if not match:
        raise UsageProblem(f"{source}: {text!r} is not I/N (e.g. 0/4: the first of four shards)")
    return _checked(int(match[1]), int(match[2]), source)


def _int_env(env: Mapping[str, str], name: str) -> int | None:
    value = env_value(env, name)  # set but empty is an error, never "not a shard"
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise UsageProblem(f"environment variable {name}={value!r} is not a whole number") from None


def _slurm(env: Mapping[str, str]) -> ShardRequest | None:
    task = _int_env(env, "SLURM_ARRAY_TASK_ID")
    if task is None:
        return None
    low = _int_env(env, "SLURM_ARRAY_TASK_MIN")
    high = _int_env(env, "SLURM_ARRAY_TASK_MAX")
    count = _int_env(env, "SLURM_ARRAY_TASK_COUNT")
    step = _int_env(env, "SLURM_ARRAY_TASK_STEP")
    low = 0 if low is None else low
    span = None if high is None else high - low + 1
    source = "SLURM_ARRAY_TASK_ID"
    if count is None and span is None:
        raise UsageProblem(f"{source} is set but neither SLURM_ARRAY_TASK_COUNT nor "
                           "SLURM_ARRAY_TASK_MAX is: pass --shard I/N")
    if (step not in (None, 1)) or (count is not None and span is not None and count != span):
        raise UsageProblem(
            f"{source}: the array is not one contiguous range (indices {low}..{high}, "
            f"{count} tasks): submit it as --array=0-{(count or 1) - 1}"
        )
    return _checked(task - low, count if count is not None else span or 1, source)


def _kubernetes(env: Mapping[str, str]) -> ShardRequest | None:
    index = _int_env(env, "JOB_COMPLETION_INDEX")
    if index is None:
        return None
    count = _int_env(env, SHARD_COUNT_ENV)
    if count is None:
        raise UsageProblem(
            f"JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but {SHARD_COUNT_ENV} is "
            "not: set it to the Job's `completions` in the manifest"
        )
    return _checked(index, count, "JOB_COMPLETION_INDEX")


def shard_from_env(env: Mapping[str, str]) -> ShardRequest | None:
    """The shard a scheduler assigned to this process: a Slurm job array task, or a pod of a
    Kubernetes Indexed Job; None outside both."""
    return _slurm(env) or _kubernetes(env)


def job_id(given: str | None, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(job id, where it came from): `--job-id`, else PHASE_JOB_ID, else SLURM_ARRAY_JOB_ID."""
    if given is not None:
        if not given.strip():
            raise UsageProblem("--job-id: the value is empty; give one, or leave it out")
        return given, "--job-id"
    for name in (JOB_ID_ENV, "SLURM_ARRAY_JOB_ID"):
        value = env_value(env, name)
        if value is not None:
            return value, name
    return None, None


def campaign_id(experiment: str, plan: CampaignPlan, count: int, job: str | None) -> str:
    """`<experiment>[-<job id>]-<12 hex digits>`: the same in every process given the same
    experiment, plan, shard count and job id."""
    settings = asdict(plan)
    if not plan.factors:
        del settings["factors"]  # the ids of campaigns from before factors stay as they were
    if not plan.measure_bandwidth:  # nor those from before the memory study's fields
        for name in ("measure_bandwidth", "bandwidth_repeats", "bandwidth_array_bytes"):
            del settings[name]
    if plan.blocked_by is None:  # nor those from before blocked orders
        del settings["blocked_by"]
    del settings["confirms"]  # nor those of plans that confirm nothing
    if plan.confirms is not None:
        settings["confirms"] = plan.confirms.model_dump(mode="json")
    identity = {"experiment": experiment, "plan": settings, "shards": count, "job_id": job}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]
    label = re.sub(r"[^A-Za-z0-9._-]+", "-", job or "").strip("-.")[:40]
    return "-".join(part for part in (experiment, label, digest) if part)


def identify(experiment: str, plan: CampaignPlan, request: ShardRequest | None,
             job: tuple[str | None, str | None] = (None, None)) -> CampaignIdentity:
    """The campaign id and, for a shard, the part of the plan it runs (bad split: exit 2)."""
    count = request.count if request is not None else 1
    cid = campaign_id(experiment, plan, count, job[0])
    if request is None:
        return CampaignIdentity(cid, None)
    if plan.target_half_width is not None:
        # A round's decision rests on every earlier run of its prompts, and the budget is the
        # campaign's: shards that cannot hear from each other could not share either.
        raise UsageProblem(
            f"{request.source}: adaptive repeats (until each ratio to plain is within "
            f"±{plan.target_half_width:.0%}) run on one machine, not in shards; give "
            "--repeats N for a fixed design of N repeats")
    how, prompts, repeats = split(plan.prompts, plan.repeats, request.count)
    info = ShardInfo(index=request.index, count=request.count, split=how,
                     prompts=prompts[request.index], repeats=repeats[request.index],
                     job_id=job[0], job_id_source=job[1], source=request.source)
    return CampaignIdentity(cid, info)


def keep(runs: Sequence[ScheduledRun], shard: ShardInfo | None) -> list[ScheduledRun]:
    """The runs of the whole plan that belong to this shard (all of them without one)."""
    if shard is None:
        return list(runs)
    prompts, repeats = set(shard.prompts), set(shard.repeats)
    return [r for r in runs if r.prompt in prompts and r.repeat in repeats]


def shard_file_name(cid: str, shard: ShardInfo) -> str:
    """A shard's default file name: `<campaign id>-shard-<I>-of-<N>.json`."""
    return f"{cid}-shard-{shard.index}-of-{shard.count}.json"


def same_shard(request: ShardRequest | None, recorded: ShardInfo | None, path: str) -> None:
    """A resumed shard continues the part its file records; a different one is refused."""
    if request is None:
        return
    if recorded is None or (recorded.index, recorded.count) != (request.index, request.count):
        was = "no shard" if recorded is None else f"shard {recorded.index}/{recorded.count}"
        raise UsageProblem(
            f"{path}: cannot resume as shard {request.index}/{request.count} "
            f"({request.source}): the file records {was}"
        )
