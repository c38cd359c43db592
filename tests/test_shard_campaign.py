"""Shards for real: separate `phase measure --shard` processes on the test model, merged by a
separate `phase merge` process, equal in structure to the same campaign run unsharded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from shard_files import structure
from shared_run import once_per_run

from phase.results import load_raw
from phase.validate import validate_file

pytestmark = pytest.mark.model

# The installed console script, as a user (or a scheduler) runs it.
PHASE = [str(Path(sys.executable).with_name("phase"))]
# Two prompts, two strategies, two repeats, 8 tokens: a few seconds per process.
# --no-disturbance: --quick judges disturbance, and a shared test machine's background load
# would add "disturbed" findings to what these tests compare (tests/test_slowdown.py judges it).
# --no-profile: the cost profile was half of each process's time (about 10 of 21 s), and
# neither plain nor draft-2 reads it; how merge pools the shards' profiles is
# tests/test_merge_profile.py's.
QUICK = ["measure", "speculative", "--quick", "--no-sensor", "--prompts", "code,prose",
         "--strategies", "plain,draft-2", "--tokens", "8", "--repeats", "2", "--cooldown", "0",
         "--idle-window", "0", "--threads", "1", "--no-disturbance", "--no-profile"]
SCHEDULER_VARS = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN",
                  "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_JOB_ID", "JOB_COMPLETION_INDEX",
                  "PHASE_SHARD_COUNT", "PHASE_JOB_ID")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCHEDULER_VARS}
    return {**env, **extra}


@pytest.fixture(scope="session", name="unsharded_quick")
def unsharded_quick_fixture(tmp_path_factory: pytest.TempPathFactory,
                            test_model_path: Path) -> Path:
    """The QUICK campaign run whole, in its own process: what merged shards must equal. Run once
    per test run (test_slurm imports this fixture; whichever worker asks first runs it)."""

    def run(directory: Path) -> None:
        done = subprocess.run([*PHASE, *QUICK, "-o", str(directory / "unsharded-quick.json")],
                              capture_output=True, text=True, env=clean_env(), timeout=600)
        assert done.returncode == 0, done.stderr

    return once_per_run(tmp_path_factory, "unsharded-quick", run) / "unsharded-quick.json"


def test_shards_in_separate_processes_merge_into_the_unsharded_campaign(
    tmp_path: Path, unsharded_quick: Path
) -> None:
    shard_dir = tmp_path / "shards"
    # Shard 0 from the option, shard 1 from a Kubernetes Indexed Job's variables; both at once.
    procs = [
        subprocess.Popen([*PHASE, *QUICK, "--shard", "0/2", "--job-id", "t1",
                          "--out-dir", str(shard_dir)], env=clean_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
        subprocess.Popen([*PHASE, *QUICK, "--out-dir", str(shard_dir)],
                         env=clean_env(JOB_COMPLETION_INDEX="1", PHASE_SHARD_COUNT="2",
                                       PHASE_JOB_ID="t1"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
    ]
    outputs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
    paths = [Path(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert [p.name.rsplit("-shard-", 1)[1] for p in paths] == ["0-of-2.json", "1-of-2.json"]
    assert paths[0].name.rsplit("-shard-", 1)[0] == paths[1].name.rsplit("-shard-", 1)[0]
    shards = [load_raw(p) for p in paths]
    assert [s.shard.prompts for s in shards if s.shard] == [["code"], ["prose"]]
    assert shards[1].shard is not None and shards[1].shard.source == "JOB_COMPLETION_INDEX"
    assert [[r.prompt for r in s.references] for s in shards] == [["code"], ["prose"]]

    merged_path = tmp_path / "merged.json"
    done = subprocess.run([*PHASE, "merge", str(merged_path), *map(str, paths)],
                          capture_output=True, text=True, env=clean_env(), timeout=120)
    assert done.returncode == 0, done.stderr

    merged, whole = load_raw(merged_path), load_raw(unsharded_quick)
    assert structure(merged) == structure(whole)
    assert merged.campaign_id == shards[0].campaign_id != whole.campaign_id
    assert whole.shard is None and len(whole.hosts) == 1
    assert {r.host for r in merged.runs} == {h.hostname for h in merged.hosts}
    assert not validate_file(merged_path).blocking
    assert [f for f in validate_file(merged_path).findings if f.rule == "completeness"] == []
