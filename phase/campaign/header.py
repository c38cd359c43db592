"""A campaign's results-file header (everything but the runs), built before the models load.

Built before loading so that a `--resume` can be compared with it (phase.campaign.identity)
and refused before gigabytes of weights are read; the facts only a loaded model can tell
(llama.cpp's system info, the extra CPU buffer decision, the threads it really uses) are
filled in afterwards by `with_engine_facts`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from phase.campaign import machine
from phase.campaign.experiment import Experiment
from phase.campaign.plan import CampaignPlan, campaign_config
from phase.campaign.shards import CampaignIdentity
from phase.decode import Engine
from phase.decode.cores import physical_cores
from phase.results import (
    SCHEMA_VERSION,
    ModelInfo,
    PrimaryEnergy,
    PromptSpec,
    ResultsFile,
    SensorInfo,
    UnavailableBackend,
    WorkloadRecord,
)


def header_before_load(
    experiment: Experiment, plan: CampaignPlan, output: Path, prompts: list[PromptSpec],
    models: list[ModelInfo], sensors: list[SensorInfo], unavailable: list[UnavailableBackend],
    identity: CampaignIdentity | None = None, workload: WorkloadRecord | None = None,
) -> ResultsFile:
    """The header as far as it is known without loading a model (the campaign id and shard
    of `identity` and the workload the prompts came from included)."""
    threads = plan.threads or physical_cores()
    return ResultsFile(
        schema_version=SCHEMA_VERSION,
        id=output.stem,
        experiment=experiment.name,
        note=experiment.note,
        created=datetime.now(UTC),
        status="running",
        provenance=machine.provenance(threads, plan.threads_batch or threads, None),
        models=models,
        sensors=sensors,
        sensors_unavailable=unavailable,
        config=campaign_config(plan, prompts, workload),
        references=[],
        runs=[],
        campaign_id=identity.campaign_id if identity is not None else None,
        shard=identity.shard if identity is not None else None,
        confirms=plan.confirms,
    )


def with_engine_facts(header: ResultsFile, engine: Engine,
                      primary: tuple[PrimaryEnergy | None, str | None]) -> ResultsFile:
    """The header completed with what the loaded engine reports: where the model runs, this
    host, and the primary energy sensors chosen for that place (or why there are none)."""
    placement = engine.placement()
    provenance = header.provenance.model_copy(update={
        "threads": engine.n_threads,
        "threads_batch": engine.n_threads_batch,
        "llama_cpp_system_info": engine.system_info(),
        "cpu_extra_buffers": engine.extra_buffers.enabled,
        "cpu_extra_buffers_reason": engine.extra_buffers.reason,
        "accelerator": placement.accelerator,
        "n_gpu_layers_offloaded": placement.n_gpu_layers_offloaded,
        "n_layers": placement.n_layers,
        "weight_buffers": list(placement.buffers),
    })
    shards = [header.shard.index] if header.shard is not None else []
    chosen, why = primary
    return header.model_copy(update={
        "provenance": provenance,
        "hosts": [machine.host_info(engine.system_info(), shards)],
        "primary_energy": chosen,
        "primary_energy_reason": None if chosen is not None else
        (why or "no primary energy sensor was chosen"),
    })
