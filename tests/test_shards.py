"""Shards: I/N from the option or a scheduler's variables, the split, the shared campaign id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from phase.base.errors import UsageProblem
from phase.campaign import DEFAULT_PLAN, schedule
from phase.campaign.shards import (
    campaign_id,
    identify,
    job_id,
    keep,
    shard_file_name,
    shard_from_env,
    shard_request,
    split,
)

PLAN = replace(DEFAULT_PLAN, prompts=("code", "prose", "edit"), repeats=3,
               strategies=("plain", "draft-4", "ngram"))


def test_shard_option_is_zero_based_index_of_count() -> None:
    r = shard_request("2/3")
    assert (r.index, r.count, r.source) == (2, 3, "--shard")
    for bad in ("3/3", "1/0", "-1/2", "a/b", "1", "1/2/3"):
        with pytest.raises(UsageProblem, match="--shard"):
            shard_request(bad)


def test_slurm_array_variables_give_the_shard() -> None:
    env = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3"}
    r = shard_from_env(env)
    assert r is not None and (r.index, r.count) == (1, 3)
    assert r.source == "SLURM_ARRAY_TASK_ID"
    # MIN/MAX without COUNT, and an array that starts at 1: index counts from MIN.
    r = shard_from_env({"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1",
                        "SLURM_ARRAY_TASK_MAX": "4"})
    assert r is not None and (r.index, r.count) == (3, 4)


def test_slurm_array_with_gaps_is_refused() -> None:
    with pytest.raises(UsageProblem, match="contiguous"):
        shard_from_env({"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0",
                        "SLURM_ARRAY_TASK_MAX": "4", "SLURM_ARRAY_TASK_COUNT": "3"})
    with pytest.raises(UsageProblem, match="contiguous"):
        shard_from_env({"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "3",
                        "SLURM_ARRAY_TASK_STEP": "2"})
    with pytest.raises(UsageProblem, match="SLURM_ARRAY_TASK_COUNT"):
        shard_from_env({"SLURM_ARRAY_TASK_ID": "0"})


def test_kubernetes_indexed_job_needs_the_count() -> None:
    r = shard_from_env({"JOB_COMPLETION_INDEX": "0", "PHASE_SHARD_COUNT": "2"})
    assert r is not None and (r.index, r.count, r.source) == (0, 2, "JOB_COMPLETION_INDEX")
    with pytest.raises(UsageProblem, match="PHASE_SHARD_COUNT"):
        shard_from_env({"JOB_COMPLETION_INDEX": "0"})
    with pytest.raises(UsageProblem, match="outside"):
        shard_from_env({"JOB_COMPLETION_INDEX": "2", "PHASE_SHARD_COUNT": "2"})
    assert shard_from_env({"PATH": "/bin"}) is None


def test_job_id_order_of_precedence() -> None:
    env = {"PHASE_JOB_ID": "k8s-uid", "SLURM_ARRAY_JOB_ID": "77"}
    assert job_id("mine", env) == ("mine", "--job-id")
    assert job_id(None, env) == ("k8s-uid", "PHASE_JOB_ID")
    assert job_id(None, {"SLURM_ARRAY_JOB_ID": "77"}) == ("77", "SLURM_ARRAY_JOB_ID")
    assert job_id(None, {}) == (None, None)


def test_whole_prompts_per_shard_when_there_are_enough() -> None:
    how, prompts, repeats = split(["a", "b", "c", "d", "e"], 3, 2)
    assert how == "prompts"
    assert prompts == [["a", "b"], ["c", "d", "e"]]
    assert repeats == [[0, 1, 2], [0, 1, 2]]


def test_whole_repeats_when_fewer_prompts_than_shards() -> None:
    how, prompts, repeats = split(["a", "b"], 5, 3)
    assert how == "repeats"
    assert prompts == [["a", "b"]] * 3
    assert repeats == [[0], [1, 2], [3, 4]]
    with pytest.raises(UsageProblem, match="at most 5 shards"):
        split(["a", "b"], 5, 6)


def test_shards_keep_disjoint_parts_that_cover_the_plan_in_its_order() -> None:
    whole = schedule(PLAN.prompts, PLAN.strategies, PLAN.repeats, PLAN.seed, PLAN.shuffle)
    for count in (1, 2, 3):
        parts = [keep(whole, identify("speculative", PLAN,
                                      shard_request(f"{i}/{count}")).shard)
                 for i in range(count)]
        joined = sorted((r for p in parts for r in p), key=lambda r: r.order)
        assert joined == whole  # nothing lost, nothing twice, same ids and places
        for part in parts:
            # every run of a prompt is in the shard that has the prompt (comparisons stay put)
            assert len({r.prompt for r in part}) * len(PLAN.strategies) * PLAN.repeats == len(part)


def test_campaign_id_is_shared_by_shards_and_differs_by_plan_count_and_job() -> None:
    a = identify("speculative", PLAN, shard_request("0/3"), ("42", "--job-id"))
    b = identify("speculative", PLAN, shard_request("2/3"), ("42", "--job-id"))
    assert a.campaign_id == b.campaign_id
    assert a.campaign_id.startswith("speculative-42-")
    assert campaign_id("speculative", PLAN, 3, "43") != a.campaign_id
    assert campaign_id("speculative", PLAN, 2, "42") != a.campaign_id
    assert campaign_id("speculative", replace(PLAN, seed=1), 3, "42") != a.campaign_id
    assert a.shard is not None and b.shard is not None
    assert shard_file_name(a.campaign_id, a.shard) == f"{a.campaign_id}-shard-0-of-3.json"
    assert (a.shard.job_id, a.shard.job_id_source) == ("42", "--job-id")


@pytest.mark.slow
def test_separate_processes_agree_on_the_campaign_id_and_the_plan() -> None:
    """Each shard computes the plan alone: two interpreters (with different hash seeds) must
    derive the same campaign id and the same shuffled runs."""
    code = (
        "import json, sys\n"
        "from dataclasses import replace\n"
        "from phase.campaign import DEFAULT_PLAN, schedule\n"
        "from phase.campaign.shards import identify, keep, shard_request\n"
        "plan = replace(DEFAULT_PLAN, prompts=('code', 'prose', 'edit'), repeats=3)\n"
        "ident = identify('speculative', plan, shard_request(sys.argv[1]), ('9', 'x'))\n"
        "runs = keep(schedule(plan.prompts, plan.strategies, plan.repeats, plan.seed, "
        "plan.shuffle), ident.shard)\n"
        "print(json.dumps([ident.campaign_id, [(r.run_id, r.order) for r in runs]]))\n"
    )
    outs = []
    for shard, seed in (("0/3", "1"), ("1/3", "2"), ("2/3", "3")):
        done = subprocess.run([sys.executable, "-c", code, shard], capture_output=True,
                              text=True, check=True, env={**os.environ, "PYTHONHASHSEED": seed})
        outs.append(json.loads(done.stdout))
    assert len({cid for cid, _ in outs}) == 1
    orders = sorted(order for _, runs in outs for _, order in runs)
    assert orders == list(range(3 * len(DEFAULT_PLAN.strategies) * 3))
