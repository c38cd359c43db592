"""Shard files for merge tests, and what "the same campaign" means when comparing two files.

    paths = write_shards(tmp_path, count=2)              # a campaign's shards (test inputs)
    edit(paths[1], campaign_id="other")                  # make one of them differ
    structure(load_raw(a)) == structure(load_raw(b))     # same runs in the same places

Built with tests/factories.py: nothing here is a measurement.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from factories import make_results, replaced, write_results

from phase.campaign.shards import split
from phase.results import HostIdentity, HostInfo, ResultsFile, ShardInfo, load_raw

IDENTITY = HostIdentity(cpu_model="Fixture CPU 9000", cpu_cores=2, ram_gib=16, gpus=[],
                        gpu_driver=None, accelerator="cpu")
CAMPAIGN_ID = "fixture-0123456789ab"


def write_shards(
    directory: Path,
    *,
    count: int = 2,
    prompts: Sequence[str] = ("p1", "p2"),
    strategies: Sequence[str] = ("plain", "draft-4"),
    repeats: int = 2,
    decode_s: Any = 1.0,
) -> list[Path]:
    """The shard files of one campaign (whole prompts per shard where there are enough), each
    from its own host `node<I>` of one host class; `decode_s` as in make_results."""
    whole = make_results(prompts=list(prompts), strategies=list(strategies), repeats=repeats,
                         decode_s=decode_s)
    how, prompt_blocks, repeat_blocks = split(list(prompts), repeats, count)
    paths = []
    for i in range(count):
        shard = ShardInfo(index=i, count=count, split=how,
                          prompts=prompt_blocks[i], repeats=repeat_blocks[i], source="--shard")
        host = HostInfo(hostname=f"node{i}", host_class="fixture-2c", identity=IDENTITY,
                        shards=[i])
        results = replaced(
            whole,
            id=f"{CAMPAIGN_ID}-shard-{i}-of-{count}",
            runs=[r for r in whole.runs if r.prompt in shard.prompts and r.repeat in shard.repeats],
            references=[r for r in whole.references if r.prompt in shard.prompts],
            campaign_id=CAMPAIGN_ID,
            shard=shard,
            hosts=[host],
        )
        paths.append(write_results(results, directory / f"{results.id}.json"))
    return paths


def edit(path: Path, **changes: Any) -> Path:
    """Rewrite a test input with fields changed (still a valid file)."""
    return write_results(replaced(load_raw(path), **changes), path)


def structure(results: ResultsFile) -> dict[str, Any]:
    """What must be equal between a merged campaign and the same campaign run unsharded:
    the plan, the models, the plain references, and every run's identity and place."""
    return {
        "experiment": results.experiment,
        "status": results.status,
        "config": results.config.model_dump(),
        "models": sorted((m.role, m.sha256) for m in results.models),
        "references": sorted((r.prompt, r.output_sha256) for r in results.references),
        "runs": sorted((r.order, r.id, r.prompt, r.strategy, r.repeat, r.k, r.tokens)
                       for r in results.runs),
    }
