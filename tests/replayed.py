"""Replayed machines for sensor tests: the fixtures under tests/fixtures/sensors/machines, read
through `phase sensors --replay` or discovery as a user's snapshot would be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from manual_clock import ManualClock

from phase.campaign import DEFAULT_PLAN
from phase.sensors import discover
from phase.sensors.core.clock import SYSTEM_CLOCK, Clock
from phase.sensors.core.primary import GpuUse, Placement, choose_primary
from phase.sensors.discovery import Discovery
from phase.sensors.replay import replay
from phase.sensors.report import survey_snapshot

MACHINES = Path(__file__).parent / "fixtures" / "sensors" / "machines"


def driven_clock(data: dict[str, Any]) -> Clock:
    """The clock to replay `data` on: a ManualClock, so a probe or a sampled window passes
    without waiting, except where powermetrics was recorded: its stream is read by a thread
    of its own that stamps each plist on the real clock (phase.sensors.apple.apple)."""
    if data.get("apple", {}).get("powermetrics"):
        return SYSTEM_CLOCK
    return ManualClock()


def found_on(name: str) -> Discovery:
    """Discovery on the replayed machine `name` (close it when done)."""
    data = replay.load(MACHINES / f"{name}.json")
    machine, roots = replay.machine(data)
    return discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=machine)


def replay_json(name: str) -> dict[str, Any]:
    """What `phase sensors --replay NAME --json` prints (phase.sensors.report.survey_snapshot,
    round-tripped through JSON), on a driven clock so its probe and window need no waiting;
    test_sensors_replay.py runs the command itself."""
    return replay_json_at(MACHINES / f"{name}.json")


def replay_json_at(path: Path) -> dict[str, Any]:
    """replay_json of a snapshot at `path` (one a test altered)."""
    result = survey_snapshot(path, hz=DEFAULT_PLAN.sample_hz, probe_s=0.2, slow_probe_s=0.2,
                             sample_s=0.2, clock=driven_clock(replay.load(path)))
    return json.loads(json.dumps(result))


def primary(data: dict[str, Any], where: str) -> dict[str, Any]:
    """The primary-energy entry for a model run on `where` (cpu, cuda, rocm...)."""
    return next(p for p in data["primary"] if p["if_model_runs_on"] == where)


def choose(name: str, accelerator: str, *gpus: GpuUse, layers: int | None = None,
           env: dict[str, str] | None = None) -> tuple[Any, str | None]:
    """choose_primary on the replayed machine, the model on `accelerator` (29 layers)."""
    found = found_on(name)
    try:
        return choose_primary(found.sensors, Placement(accelerator, layers, 29, gpus),
                              env or {})
    finally:
        found.close()
