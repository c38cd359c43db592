"""What makes two campaigns the same measurement, and the differences between two of them.

`--resume` adds runs to a file whose header (provenance, models, sensors, config) describes
every run in it. A resumed campaign that differs in anything that shapes the numbers would
mix runs from two setups under the first one's description, so every such difference is
refused, listed, with the file left byte-identical.

The identity is: the whole config; each model's name, source, size and sha256; the machine
and software that ran it (host class, CPU, GPUs, phase and git commit, llama-cpp-python and the
llama.cpp build, Python, threads, extra CPU buffers, the CPU's kernel flags, the weight
buffers, and where the model ran); every sensor's
declared settings (name, backend, scope, kind, unit, smoothing, bounds, and anything else
declared), but not what is measured afresh each time (update period, and the energy window
sized from it); the primary energy
sensors (when the file records a choice); the campaign id and shard. The hostname is not part
of it: a campaign may be resumed on another machine of the same class (phase.campaign.shards;
the file's `hosts` and each run's `host` say where each run ran). Facts known only once
the models are loaded (the llama.cpp system info, the extra-buffer decision, offloaded layers)
are compared after loading; everything else before.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from phase.results import ResultsFile

PROVENANCE_FIELDS = (
    "phase_version", "git_commit", "llama_cpp_python_version", "llama_cpp_system_info",
    "python_version", "host_class", "cpu_model", "gpus", "threads", "threads_batch",
    "cpu_extra_buffers", "accelerator", "n_gpu_layers_offloaded", "n_layers",
    "cpu_flags", "weight_buffers",
)
PRIMARY = "primary_energy.sensors"
# Known only after llama.cpp has loaded the model (or initialised its backends).
AFTER_LOAD = frozenset({
    "provenance.llama_cpp_system_info", "provenance.cpu_extra_buffers",
    "provenance.accelerator", "provenance.n_gpu_layers_offloaded", "provenance.n_layers",
    "provenance.weight_buffers", PRIMARY,
})
MODEL_FIELDS = ("name", "source", "size_bytes", "sha256")
# Measured afresh by every sampler start: it may differ without the setup differing.
SENSOR_MEASURED = frozenset({"update_period_s", "update_period_reason"})
# Config derived from those periods when the runs start (phase.campaign.windows): a resumed
# campaign keeps the window its file records.
CONFIG_MEASURED = frozenset({"window_min_s", "window_min_reason"})
# Header fields other branches of the schema add; compared when the schema has them.
OTHER_FIELDS = ("campaign_id", "shard")


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def identity(results: ResultsFile) -> dict[str, Any]:
    """The measurement identity of a results file, as flat `path -> value` pairs."""
    out: dict[str, Any] = {}
    for key, value in results.config.model_dump(mode="json",
                                                exclude=set(CONFIG_MEASURED)).items():
        out[f"config.{key}"] = value
    for name in PROVENANCE_FIELDS:
        if name in type(results.provenance).model_fields:
            out[f"provenance.{name}"] = _plain(getattr(results.provenance, name))
    for model in results.models:
        role = model.role if model.level is None else f"{model.role}@{model.level}"
        for name in MODEL_FIELDS:
            out[f"models.{role}.{name}"] = getattr(model, name)
    for sensor in results.sensors:
        declared = sensor.model_dump(mode="json", exclude=set(SENSOR_MEASURED))
        for name, value in declared.items():
            out[f"sensors.{sensor.name}.{name}"] = value
    for name in OTHER_FIELDS:
        if name in type(results).model_fields:
            out[name] = _plain(getattr(results, name))
    out[PRIMARY] = results.primary_energy.sensors if results.primary_energy else None
    return out


def _shown(key: str, value: Any) -> str:
    if value is None:
        return "none"
    if key == "config.prompts":
        return ", ".join(p["name"] for p in value)
    text = repr(value)
    if key.endswith(".sha256") and isinstance(value, str):
        return value[:12]
    return text if len(text) <= 48 else text[:45] + "..."


def differences(old: ResultsFile, new: ResultsFile, *, loaded: bool) -> list[str]:
    """Each difference as `path: old → new`; before loading (`loaded` False) the facts only
    llama.cpp can tell are skipped."""
    a, b = identity(old), identity(new)
    sensors_a = {s.name for s in old.sensors}
    sensors_b = {s.name for s in new.sensors}
    diffs = [f"sensors: {name} removed" for name in sorted(sensors_a - sensors_b)]
    diffs += [f"sensors: {name} added" for name in sorted(sensors_b - sensors_a)]
    gone = {f"sensors.{n}." for n in sensors_a ^ sensors_b}
    for key in [*a, *(k for k in b if k not in a)]:
        if any(key.startswith(g) for g in gone) or (not loaded and key in AFTER_LOAD):
            continue
        if key == PRIMARY and old.primary_energy is None and old.primary_energy_reason is None:
            continue  # a file from before the choice was recorded: nothing to compare
        old_value, new_value = a.get(key), b.get(key)
        if old_value == new_value:
            continue
        if key == "config.prompts" and _shown(key, old_value) == _shown(key, new_value):
            diffs.append("config.prompts: text differs")
        else:
            diffs.append(f"{key}: {_shown(key, old_value)} → {_shown(key, new_value)}")
    return diffs
