"""Older results files, read as the current schema: one step per version, on the raw dict.

A step takes the JSON object of version N (freshly parsed: a step may rename keys in place)
and returns version N+1; `migrate` chains them up to SCHEMA_VERSION. Files on disk are never
rewritten: a v1 file stays v1 and is migrated each time it is read.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from phase.results.covers import covers_of
from phase.results.version import SCHEMA_VERSION
from phase.storage.errors import StorageError

# A results file that cannot be read fails in storage (not a regular file, not strict JSON)
# or here (the schema); one class for both, so `except ResultsError` catches either.
ResultsError = StorageError


Migration = Callable[[dict[str, Any]], dict[str, Any]]


def _rename(item: Any, old: str, new: str) -> None:
    # Leave anything that is not the expected shape alone: the schema check that follows
    # reports it with its JSON path.
    if isinstance(item, dict) and old in item and new not in item:
        item[new] = item.pop(old)


def _items(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    return value if isinstance(value, list) else []


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """draft_ms -> propose_ms, SensorTrace value -> values, ratio_vs_plain ->
    energy_ratio_vs_plain."""
    for run in _items(data, "runs"):
        if not isinstance(run, dict):
            continue
        for step in _items(run, "trace"):
            _rename(step, "draft_ms", "propose_ms")
        for trace in _items(run, "samples"):
            _rename(trace, "value", "values")
    for row in _items(data, "rows"):
        _rename(row, "ratio_vs_plain", "energy_ratio_vs_plain")
    data["schema_version"] = 2
    return data


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """Version 3 only added optional parts (see schema.py's history): nothing to convert."""
    data["schema_version"] = 3
    return data


def _v3_to_v4(data: dict[str, Any]) -> dict[str, Any]:
    """Version 4 added config.ngram_adaptive, whose absence means what version 3 meant (a
    fixed ngram length): nothing to convert."""
    data["schema_version"] = 4
    return data


def _v4_to_v5(data: dict[str, Any]) -> dict[str, Any]:
    """Version 5 added PassCost.logits, whose absence means what version 4 measured (every
    pass computed the logits of all its b tokens): nothing to convert."""
    data["schema_version"] = 5
    return data


def _v5_to_v6(data: dict[str, Any]) -> dict[str, Any]:
    """Version 6 added config.purpose and models[].test_model, whose absence means "not
    recorded" (phase.analysis.purpose then judges by the models' sha256): nothing to convert."""
    data["schema_version"] = 6
    return data


def _v6_to_v7(data: dict[str, Any]) -> dict[str, Any]:
    """Version 7 added the disturbance fields (Run.foreign_load, disturbed, rerun_of,
    config.disturbed_load, max_reruns), whose absence means "not measured, not disturbed":
    nothing to convert."""
    data["schema_version"] = 7
    return data


def _v7_to_v8(data: dict[str, Any]) -> dict[str, Any]:
    """Version 8 added optional records only: sized energy windows (Run.passes,
    config.window_min_s + reason, config.max_passes), a reference's prompt token ids, a
    counter's wrap range, other work on the GPU, a summary row's speed_vs_plain, cpu_vs_plain
    and intervals, and adaptive repeats (config.target_half_width, extra_budget_runs,
    extra_budget_s, ResultsFile.adaptive). Their absence means one pass in a window the
    decode's own length, "not recorded" (pages divide a row's figures and show no interval),
    and the fixed design: nothing to convert."""
    data["schema_version"] = 8
    return data


def _v8_to_v9(data: dict[str, Any]) -> dict[str, Any]:
    """Version 9 added primary_energy.covers. An older file's chip sensors are named by
    backend and rail (`rapl:package-0`, `ina3221:VDD_CPU_GPU_CV`), which is all the derivation
    reads (phase.results.covers), so it is derived; a sensor it does not know gives
    ["unknown"]."""
    primary = data.get("primary_energy")
    if isinstance(primary, dict) and "covers" not in primary:
        names = primary.get("sensors")
        backends = {s["name"]: s["backend"] for s in _items(data, "sensors")
                    if isinstance(s, dict) and isinstance(s.get("name"), str)
                    and isinstance(s.get("backend"), str)}
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            primary["covers"] = covers_of(names, backends)
    data["schema_version"] = 9
    return data


def _v9_to_v10(data: dict[str, Any]) -> dict[str, Any]:
    """Version 10 added extra factors (config.factors, Run.factors, SummaryRow.factors), whose
    absence means an experiment over prompt x strategy only: nothing to convert."""
    data["schema_version"] = 10
    return data


def _v10_to_v11(data: dict[str, Any]) -> dict[str, Any]:
    """Version 11 added, all optional: model variants' recipes, bytes-per-token estimates
    and measured memory bandwidth; and sampling (config.sampling, Run.seed, the temperature
    factor kind), whose absence means every run is greedy. Nothing to convert."""
    data["schema_version"] = 11
    return data


def _v11_to_v12(data: dict[str, Any]) -> dict[str, Any]:
    """Version 12 added, all optional: config.interval_method (absent: the adaptive rounds,
    if any, were decided by the bootstrap, and replay so), each summary interval's method,
    p-value and adjusted p-value, a confirmation's `confirms`, the CPU flags and weight
    buffer types that say which kernels ran (absent: not recorded), disturbance judged by
    slowdown (Run.speed_vs_profile, speed_vs_condition, disturbed_reason;
    config.slow_vs_profile, slow_vs_condition) and the profile's disturbed blocks
    (PassCost.block_load, block_disturbed), whose absence means judged by load alone and
    every block counted. Nothing to convert."""
    data["schema_version"] = 12
    return data


def _v12_to_v13(data: dict[str, Any]) -> dict[str, Any]:
    """Version 13 added config.workload, whose absence means the experiment's own prompt
    files. Nothing to convert."""
    data["schema_version"] = 13
    return data


def _v13_to_v14(data: dict[str, Any]) -> dict[str, Any]:
    """Version 14 added the serving study's records (config.serving, Run.serving), absent
    where runs serve one request. Nothing to convert."""
    data["schema_version"] = 14
    return data


def _v14_to_v15(data: dict[str, Any]) -> dict[str, Any]:
    """Version 15 added ResultsFile.stated_duration, whose absence means the campaign's
    stated time was not recorded. Nothing to convert."""
    data["schema_version"] = 15
    return data


def _v15_to_v16(data: dict[str, Any]) -> dict[str, Any]:
    """Version 16 added config.blocked_by, whose absence means each repeat was shuffled
    whole. Nothing to convert."""
    data["schema_version"] = 16
    return data


def _v16_to_v17(data: dict[str, Any]) -> dict[str, Any]:
    """Version 17 added config.serving.order_seed, whose absence means each serving run's
    request order was seeded by its own id. Nothing to convert."""
    data["schema_version"] = 17
    return data


MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5,
                                    5: _v5_to_v6, 6: _v6_to_v7, 7: _v7_to_v8, 8: _v8_to_v9,
                                    9: _v9_to_v10, 10: _v10_to_v11, 11: _v11_to_v12,
                                    12: _v12_to_v13, 13: _v13_to_v14,
                                    14: _v14_to_v15, 15: _v15_to_v16, 16: _v16_to_v17}


def migrate(data: dict[str, Any], path: Path | str = "<data>") -> dict[str, Any]:
    """The object as the current schema version."""
    version = data.get("schema_version")
    # bool is an int in Python, but `true` is not a version number in JSON.
    if not isinstance(version, int) or isinstance(version, bool):
        raise ResultsError(f"{path}: $.schema_version: missing or not an integer")
    if version > SCHEMA_VERSION:
        raise ResultsError(
            f"{path}: $.schema_version: {version} is newer than this phase understands "
            f"({SCHEMA_VERSION}); upgrade phase"
        )
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise ResultsError(f"{path}: $.schema_version: no migration from version {version}")
        data = step(data)
        version = data["schema_version"]
    return data
