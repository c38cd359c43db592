"""What `phase sensors` shows: each sensor found (scope, what it encloses, its bound and which
values were assumed), a reading or a short sampled window, the primary energy sensor(s) for
where the model would run, and every backend that is unavailable with the reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from phase.sensors.core.base import PostHocSensor, ReadError
from phase.sensors.core.clock import SYSTEM_CLOCK, Clock
from phase.sensors.core.periods import DEFAULT_PROBE_S, SLOW_PROBE_S
from phase.sensors.core.primary import GpuUse, Placement, choose_primary
from phase.sensors.core.sampler import Sampler
from phase.sensors.discovery import Discovery, discover
from phase.sensors.replay import replay


def placements_for(found: Discovery, build: str,
                   cuda_gpus: Sequence[GpuUse] = ()) -> dict[str, Placement]:
    """The places a model could run on this machine: the CPU, and the accelerator its
    hardware offers (NVIDIA GPUs, a Jetson's GPU, Apple's GPU, AMD and Intel GPUs through ROCm,
    SYCL and Vulkan), every layer offloaded; on CUDA, the devices CUDA lists where they are
    known (a snapshot's), as llama.cpp logs them."""
    parts = {s.part for s in found.sensors}
    out = {"cpu": Placement("cpu")}
    if parts & {"gpu", "compute-rail"} or build == "cuda":
        out["cuda"] = Placement("cuda", n_gpu_layers_offloaded=None, gpus=tuple(cuda_gpus))
    if parts & {"apple-gpu", "apple-soc", "apple-cpu"} or build == "metal":
        out["metal"] = Placement("metal", n_gpu_layers_offloaded=None)
    backends = {s.backend for s in found.sensors}
    for accelerator, has in (("rocm", backends & {"amdgpu", "amdsmi"}),
                             ("sycl", backends & {"intel_gpu"}),
                             ("vulkan", backends & {"amdgpu", "amdsmi", "intel_gpu"})):
        if has or build == accelerator:
            out[accelerator] = Placement(accelerator, n_gpu_layers_offloaded=None)
    return out


def primary_rows(found: Discovery, build: str, env: Mapping[str, str] | None,
                 cuda_gpus: Sequence[GpuUse] = ()) -> list[dict[str, Any]]:
    rows = []
    for where, placement in placements_for(found, build, cuda_gpus).items():
        choice, why = choose_primary(found.sensors, placement, env)
        rows.append({
            "if_model_runs_on": where,
            "this_build": where == build,
            "sensors": choice.sensors if choice else None,
            "device": choice.device if choice else None,
            "covers": choice.covers if choice else None,
            "reason": choice.reason if choice else why,
        })
    return rows


def survey(found: Discovery, *, hz: float, sample_s: float | None = None,
           probe_s: float = DEFAULT_PROBE_S, slow_probe_s: float = SLOW_PROBE_S,
           build: str = "cpu", env: Mapping[str, str] | None = None,
           cuda_gpus: Sequence[GpuUse] = (), clock: Clock = SYSTEM_CLOCK) -> dict[str, Any]:
    """Measure update periods, then a live reading per sensor or (sample_s) one window.

    Closes the sensors when done. The result is JSON-ready. `clock` is the sampler's (and a
    replayed machine's, which must share it).
    """
    primary = primary_rows(found, build, env, cuda_gpus)
    sampler = Sampler(found.sensors, hz=hz, probe_s=probe_s, slow_probe_s=slow_probe_s,
                      clock=clock)
    rows: list[dict[str, Any]] = []
    try:
        sampler.start()
        infos = sampler.sensor_infos()
        windows = {}
        if sample_s is not None and found.sensors:
            win = sampler.begin(idle_s=min(1.0, sample_s))
            win.start()
            clock.sleep(sample_s)
            win.stop()
            windows = {w.sensor: w for w in win.result()[0]}
        for sensor, info in zip(found.sensors, infos, strict=True):
            row: dict[str, Any] = info.model_dump()
            row["post_hoc"] = isinstance(sensor, PostHocSensor)
            if sample_s is not None:
                row["window"] = windows[sensor.name].model_dump()
            else:
                try:
                    reading = sensor.read()
                    row["reading"] = {"unix_s": reading.t_unix_s, "value": reading.value,
                                      "error": None}
                except ReadError as exc:
                    row["reading"] = {"unix_s": None, "value": None, "error": str(exc)}
            rows.append(row)
    finally:
        sampler.close()
    return {
        "sensors": rows,
        "primary": primary,
        "notes": list(found.notes),
        "unavailable": [u.model_dump() for u in found.unavailable],
        "sample_s": sample_s,
    }


def survey_snapshot(path: Path, *, hz: float, sample_s: float, probe_s: float,
                    slow_probe_s: float, meters: Sequence[str] = (),
                    roots: Mapping[str, Path] | None = None,
                    clock: Clock = SYSTEM_CLOCK) -> dict[str, Any]:
    """`phase sensors --replay`: discovery and a sampled window against the snapshot at `path`
    (SnapshotError, exit 2, when it cannot be read), as survey() gives them on a live machine,
    plus what the snapshot says of its host. `roots` replace the recorded sysfs roots; the
    recordings play back on `clock`."""
    data = replay.load(path)
    machine, found_roots = replay.machine(data, clock)
    found_roots.update(roots or {})
    found = discover(found_roots["rapl"], found_roots["hwmon"], list(meters),
                     iio_root=found_roots["iio"], machine=machine)
    build = data.get("build", {}).get("accelerator") or "cpu"
    result = survey(found, hz=hz, sample_s=sample_s, probe_s=probe_s,
                    slow_probe_s=slow_probe_s, build=build, env=data.get("env", {}),
                    cuda_gpus=replay.cuda_gpus(data), clock=clock)
    result["replay"] = {"file": str(path), "taken": data.get("taken"), "host": data.get("host"),
                        "build": build}
    # Recordings whose raw values no machine reads: their sensors are unavailable, and why.
    result["unavailable"] += [{"backend": "replay", "reason": reason}
                              for reason in data.get(replay.SCREENED, [])]
    return result


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    if value == 0:
        return "0"
    return f"{value * 1e3:.3g} ms" if value < 1 else f"{value:.3g} s"


def _cell(row: dict[str, Any]) -> str:
    if "window" in row:
        w = row["window"]
        if w["energy_j"] is None:
            return f"no energy: {w['energy_reason']}"
        idle = (f"idle {w['idle_power_w']:.3f} W" if w["idle_power_w"] is not None
                else "idle ?")
        edge = (f", edges ±{w['edge_error_j']:.3g} J" if w.get("edge_error_j") is not None
                else "")
        return (f"{w['energy_j']:.3f} J, mean {w['mean_power_w']:.3f} W, {idle} "
                f"({w['samples']} samples, {w['gaps']} gaps{edge})")
    r = row["reading"]
    if r["error"]:
        return f"read failed: {r['error']}"
    recorded = " (last value in the trace)" if row["post_hoc"] else ""
    return f"{r['value']:.3f} {row['unit']}{recorded}"


def _assumed(row: dict[str, Any], field: str, text: str) -> str:
    return f"{text}*" if field in row.get("assumed", []) else text


def _table(data: dict[str, Any]) -> list[str]:
    sensors = data["sensors"]
    what = (f"{data['sample_s']:g} s sampled window" if data["sample_s"] is not None
            else "reading now")
    header = ("sensor", "backend", "scope", "kind", "tau", "updates", "bound", what)
    table = [header] + [
        (r["name"], r["backend"], r["scope"], r["kind"],
         _assumed(r, "smoothing_s", _seconds(r["smoothing_s"])), _seconds(r["update_period_s"]),
         _assumed(r, "max_power_w", f"{r['max_power_w']:.4g} W" if r["max_power_w"] else "-"),
         _cell(r))
        for r in sensors
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    lines = [f"Energy sensors found: {len(sensors)}"]
    for row in table:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False))
                     + "  " + row[-1])
    if any(r.get("assumed") for r in sensors):
        lines.append("* assumed, not read from the device (see the reasons in the docs)")
    for r in sensors:
        if r.get("encloses"):
            lines.append(f"{r['name']} encloses {', '.join(r['encloses'])}")
    unknown: dict[str, list[str]] = {}
    for r in sensors:
        if r["update_period_s"] is None:
            unknown.setdefault(r["update_period_reason"], []).append(r["name"])
    for reason, names in unknown.items():
        lines.append(f"Update period unknown for {', '.join(names)}: {reason}")
    return lines


def format_survey(data: dict[str, Any]) -> str:
    if data["sensors"]:
        lines = _table(data)
    else:
        lines = ["No energy sensors found on this machine. Runs will still record speed, "
                 "acceptance and CPU time; their energy will be null with the reasons below."]
    if data.get("primary"):
        lines += ["", "Primary energy (what chip energy per token will mean):"]
        for p in data["primary"]:
            mark = " (this build)" if p["this_build"] else ""
            chosen = " + ".join(p["sensors"]) if p["sensors"] else "none"
            covers = f" [covers {', '.join(p['covers'])}]" if p.get("covers") else ""
            lines.append(f"  model on {p['if_model_runs_on']}{mark}: {chosen}{covers} — "
                         f"{p['reason']}")
    if data.get("notes"):
        lines += ["", "Notes:"] + [f"  {n}" for n in data["notes"]]
    if data["unavailable"]:
        lines += ["", "Unavailable:"]
        lines += [f"  {u['backend']}: {u['reason']}" for u in data["unavailable"]]
    return "\n".join(lines)
