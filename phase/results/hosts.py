"""Where a campaign ran: host identities, shards, and the shard files a merged file came from.

`ResultsFile.hosts`, `ResultsFile.shard` and `ResultsFile.merged_from` hold these (see
phase.campaign.shards and phase.campaign.merge for how they are filled).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, model_validator

from phase.results.base import FileName, NonNegInt, PosInt, Sha256, Strict


class HostIdentity(Strict):
    """What makes two machines the same kind for measuring: `phase merge` joins shards only
    from hosts whose identities are equal. Memory is rounded to whole GiB (kernels reserve
    slightly different amounts on identical machines); `accelerator` is the llama.cpp build
    ("cpu", "cuda", "metal", ...)."""

    cpu_model: str | None
    cpu_cores: PosInt
    ram_gib: NonNegInt | None
    gpus: list[str]
    gpu_driver: str | None
    accelerator: str | None


class HostInfo(Strict):
    """One machine that ran runs of this file: its name (what `Run.host` holds), the short
    host-class label (file names, grouping) and the full identity behind it."""

    hostname: str
    host_class: str
    identity: HostIdentity
    # The shards (by index) this host ran; empty for a campaign that was not sharded.
    shards: list[NonNegInt] = Field(default_factory=list)


class ShardInfo(Strict):
    """Which part of a campaign's plan one shard ran (`phase measure --shard I/N`).

    Every shard computes the whole plan (same seed, same shuffled order) and keeps the runs of
    its own prompts (`split: "prompts"`, each with that prompt's plain reference) or, when the
    plan has fewer prompts than shards, its own repeats (`split: "repeats"`).
    """

    index: NonNegInt
    count: PosInt
    split: Literal["prompts", "repeats"]
    prompts: list[str] = Field(min_length=1)
    repeats: list[NonNegInt] = Field(min_length=1)
    # The scheduler's (or the user's) job id the campaign id was derived from, and where it
    # came from (`--job-id`, `PHASE_JOB_ID`, `SLURM_ARRAY_JOB_ID`); None when none was given.
    job_id: str | None = None
    job_id_source: str | None = None
    # How the index and count were chosen: `--shard` or the scheduler's variables.
    source: str

    @model_validator(mode="after")
    def _check(self) -> ShardInfo:
        if self.index >= self.count:
            raise ValueError(f"shard index {self.index} is not below the count {self.count}")
        return self


class MergedShard(Strict):
    """One shard file `phase merge` read: its name and sha256 (as read), the part of the plan
    it ran and the host that ran it."""

    file: FileName
    sha256: Sha256
    shard: ShardInfo
    hostname: str
    created: datetime
    # Sensors named after their device (a GPU's UUID) have another name on every host: the
    # merged file uses shard 0's names; this shard's own names and devices, by merged name,
    # are kept here (empty when they are the same).
    sensor_names: dict[str, str] = Field(default_factory=dict)
    sensor_devices: dict[str, str] = Field(default_factory=dict)
