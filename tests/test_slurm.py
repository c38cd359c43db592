"""The Slurm job array for real: deploy/slurm/phase-array.sbatch submitted to a running Slurm
(CI starts a single-node cluster with .ci/slurm-cluster), a quick campaign in two array tasks
and the dependent merge job; the merged file must equal the same campaign run unsharded.

Skipped with the reason where no Slurm answers; CI sets PHASE_REQUIRE_SLURM=1, which turns
the skip into a failure."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from shard_files import structure
from test_shard_campaign import (  # the unsharded campaign: run once, shared by both tests
    QUICK,
    clean_env,
    unsharded_quick_fixture,  # noqa: F401
)

from phase.results import load_raw
from phase.validate import validate_file

# serial: its array tasks and merge job load both cores while the timing tests run elsewhere.
pytestmark = [pytest.mark.model, pytest.mark.slurm, pytest.mark.serial]

REPO = Path(__file__).resolve().parent.parent
SBATCH_SCRIPT = REPO / "deploy" / "slurm" / "phase-array.sbatch"
WAIT_S = 400.0


def _no_slurm(reason: str) -> None:
    if os.environ.get("PHASE_REQUIRE_SLURM"):
        pytest.fail(f"PHASE_REQUIRE_SLURM is set but {reason}")
    pytest.skip(reason)


@pytest.fixture
def slurm() -> None:
    if shutil.which("sbatch") is None or shutil.which("squeue") is None:
        _no_slurm("sbatch is not installed (Debian: apt-get install slurm-wlm munge)")
    done = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True,
                          timeout=30)
    if done.returncode != 0 or not done.stdout.strip():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        _no_slurm("no Slurm controller answers sinfo (start one: .ci/slurm-cluster start DIR, "
                  f"then export SLURM_CONF): {last}")


def _wait(jobs: list[str]) -> float:
    started = time.monotonic()
    while time.monotonic() - started < WAIT_S:
        queued = subprocess.run(["squeue", "-h", "-j", ",".join(jobs), "-o", "%i %T"],
                                capture_output=True, text=True, timeout=30)
        if queued.returncode == 0 and not queued.stdout.strip():
            return time.monotonic() - started
        time.sleep(1.0)
    subprocess.run(["scancel", *jobs], timeout=30)
    pytest.fail(f"Slurm jobs {jobs} still queued after {WAIT_S:.0f} s")


def _logs(work: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                     for p in sorted((work / "logs").glob("*.out")))


def test_job_array_and_dependent_merge_give_the_unsharded_campaign(
    slurm: None, tmp_path: Path, test_model_path: Path, unsharded_quick: Path
) -> None:
    work, out = tmp_path / "work", tmp_path / "merged.json"
    submitted = subprocess.run(
        ["bash", str(SBATCH_SCRIPT), "-n", "2", "-o", str(out), "-w", str(work), *QUICK[1:]],
        capture_output=True, text=True, env=clean_env(), timeout=120,
    )
    assert submitted.returncode == 0, submitted.stderr
    ids = dict(re.findall(r"^(array_job|merge_job|out)=(.+)$", submitted.stdout, re.M))
    assert ids["out"] == str(out)
    waited_s = _wait([ids["array_job"], ids["merge_job"]])
    assert out.is_file(), f"no merged file after {waited_s:.0f} s\n{_logs(work)}"

    merged = load_raw(out)
    shard_files = sorted((work / "shards" / ids["array_job"]).glob("*-shard-*-of-2.json"))
    assert len(shard_files) == 2
    shards = [load_raw(p) for p in shard_files]
    # The tasks read their shard from the array's variables and agreed on the campaign id.
    assert [(s.shard.index, s.shard.source, s.shard.job_id) for s in shards if s.shard] == [
        (0, "SLURM_ARRAY_TASK_ID", ids["array_job"]), (1, "SLURM_ARRAY_TASK_ID", ids["array_job"])]
    assert merged.campaign_id == shards[0].campaign_id == shards[1].campaign_id
    assert [m.sha256 for m in merged.merged_from] == [
        hashlib.sha256(p.read_bytes()).hexdigest() for p in shard_files]

    assert structure(merged) == structure(load_raw(unsharded_quick))
    report = validate_file(out)
    assert not report.blocking
    assert [f for f in report.findings if f.rule == "completeness"] == []
    conditions = {(r.prompt, r.strategy) for r in merged.runs}
    assert conditions == {(p, s) for p in ("code", "prose") for s in ("plain", "draft-2")}
