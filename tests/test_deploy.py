"""deploy/: the Kubernetes manifest has what an Indexed Job needs and hands phase what phase
reads; the Dockerfile installs from the lock file and bakes in no model; the Slurm script is
valid bash and refuses bad use before submitting anything.

The manifest has not run on a cluster here: these checks parse it, they do not apply it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from phase.campaign.shards import JOB_ID_ENV, SHARD_COUNT_ENV, shard_from_env

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "deploy" / "k8s" / "phase-indexed-job.yaml"
DOCKERFILE = REPO / "deploy" / "Dockerfile"
SBATCH_SCRIPT = REPO / "deploy" / "slurm" / "phase-array.sbatch"


def documents() -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d is not None]
    for d in docs:
        assert {"apiVersion", "kind", "metadata", "spec"} <= d.keys(), d.get("kind")
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", d["metadata"]["name"])
    return docs


def jobs() -> tuple[dict[str, Any], dict[str, Any]]:
    found = [d for d in documents() if d["kind"] == "Job"]
    assert all(d["apiVersion"] == "batch/v1" for d in found)
    indexed = [d for d in found if d["spec"].get("completionMode") == "Indexed"]
    others = [d for d in found if d not in indexed]
    assert len(indexed) == 1 and len(others) == 1
    return indexed[0], others[0]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def pod_spec(job: dict[str, Any]) -> dict[str, Any]:
    spec = job["spec"]["template"]["spec"]
    # A Job's pods may only restart Never or OnFailure.
    assert spec["restartPolicy"] in ("Never", "OnFailure")
    containers = spec.get("initContainers", []) + spec["containers"]
    assert containers and all(c["name"] and c["image"] for c in containers)
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for c in containers:
        for mount in c.get("volumeMounts", []):
            assert mount["name"] in volumes, f"{c['name']} mounts undeclared {mount['name']}"
    return spec


def test_the_indexed_job_has_the_fields_an_indexed_job_requires() -> None:
    shards, _ = jobs()
    spec = shards["spec"]
    completions = spec["completions"]  # required for completionMode: Indexed
    assert isinstance(completions, int) and completions >= 1
    assert 1 <= spec.get("parallelism", 1) <= completions
    pod = pod_spec(shards)
    (shard,) = pod["containers"]
    env = env_of(shard)
    # phase reads the index from JOB_COMPLETION_INDEX (Kubernetes sets it) and the count from
    # PHASE_SHARD_COUNT, which must equal completions.
    assert "JOB_COMPLETION_INDEX" not in env
    assert env[SHARD_COUNT_ENV] == str(completions)
    assert env[JOB_ID_ENV]
    for index in range(completions):
        request = shard_from_env({"JOB_COMPLETION_INDEX": str(index),
                                  SHARD_COUNT_ENV: env[SHARD_COUNT_ENV]})
        assert request is not None and (request.index, request.count) == (index, completions)
    script = " ".join(shard.get("command", []) + shard.get("args", []))
    assert "phase measure" in script and "--out-dir" in script and "--shard" not in script
    # One shard per node: a required anti-affinity on the node's hostname.
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= \
        shards["spec"]["template"]["metadata"]["labels"].items()


def test_models_live_on_a_volume_and_are_fetched_not_baked() -> None:
    shards, _ = jobs()
    pod = pod_spec(shards)
    claims = {d["metadata"]["name"] for d in documents() if d["kind"] == "PersistentVolumeClaim"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    fetch = next(c for c in pod["initContainers"] if "fetch" in " ".join(c["args"]))
    for container in (fetch, pod["containers"][0]):
        cache = env_of(container)["PHASE_CACHE"]
        (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == cache]
        assert volumes[mount["name"]]["persistentVolumeClaim"]["claimName"] in claims
    assert fetch["args"][:2] == ["models", "fetch"]


def test_the_merge_job_merges_the_same_run_from_the_shared_volume() -> None:
    shards, merge = jobs()
    shard_env = env_of(shards["spec"]["template"]["spec"]["containers"][0])
    pod = pod_spec(merge)
    (container,) = pod["containers"]
    env = env_of(container)
    assert env["PHASE_RUN"] == shard_env["PHASE_RUN"]
    assert env["PHASE_SHARD_COUNT"] == shard_env["PHASE_SHARD_COUNT"]
    assert "phase merge" in " ".join(container["args"])
    assert merge["spec"]["activeDeadlineSeconds"] > 0  # never waits for ever
    shard_claims = {v["persistentVolumeClaim"]["claimName"]
                    for v in shards["spec"]["template"]["spec"]["volumes"]}
    assert {v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]} <= shard_claims
    images = {c["image"] for j in (shards, merge) for c in
              j["spec"]["template"]["spec"]["containers"]
              + j["spec"]["template"]["spec"].get("initContainers", [])}
    assert len(images) == 1


def test_dockerfile_installs_from_the_lock_and_bakes_in_no_model() -> None:
    text = DOCKERFILE.read_text()
    instructions = [line for line in text.splitlines() if line and not line.startswith("#")]
    syncs = [line for line in instructions if "uv sync" in line]
    assert syncs and all("--frozen" in line for line in syncs)
    copies = " ".join(line for line in instructions if line.startswith("COPY"))
    assert "uv.lock" in copies
    assert ".gguf" not in copies and "results" not in copies and ".cache" not in copies
    assert not any(re.search(r"models fetch|\.gguf", line) for line in instructions
                   if line.startswith("RUN"))
    assert "PHASE_CACHE=/cache" in text and 'VOLUME ["/cache"]' in text


def test_sbatch_script_is_valid_bash_and_refuses_bad_use(tmp_path: Path) -> None:
    subprocess.run(["bash", "-n", str(SBATCH_SCRIPT)], check=True)
    text = SBATCH_SCRIPT.read_text()
    assert "--dependency=\"afterok:$array\"" in text and "--array=" in text
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for args, needle in (([], "give the experiment"),
                         (["-n", "0", "speculative"], "-n must be a whole number")):
        done = subprocess.run(["bash", str(SBATCH_SCRIPT), *args], capture_output=True,
                              text=True, env=env, cwd=tmp_path)
        assert done.returncode == 2 and needle in done.stderr
    done = subprocess.run(["bash", str(SBATCH_SCRIPT), "speculative"], capture_output=True,
                          text=True, env={**env, "PHASE_STAGE": "nonsense"}, cwd=tmp_path)
    assert done.returncode == 2 and "PHASE_STAGE" in done.stderr


def test_claims_ask_for_shared_access() -> None:
    for d in documents():
        if d["kind"] == "PersistentVolumeClaim":
            assert d["spec"]["accessModes"] == ["ReadWriteMany"]  # every node mounts it
            assert d["spec"]["resources"]["requests"]["storage"]
