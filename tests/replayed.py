"""Replayed machines for sensor tests: the fixtures under tests/fixtures/sensors/machines, read
through `phase sensors --replay` or discovery as a user's snapshot would be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from phase.cli import run_cli
from phase.sensors import discover, replay
from phase.sensors.discovery import Discovery
from phase.sensors.primary import GpuUse, Placement, choose_primary

MACHINES = Path(__file__).parent / "fixtures" / "sensors" / "machines"


def found_on(name: str) -> Discovery:
    """Discovery on the replayed machine `name` (close it when done)."""
    data = replay.load(MACHINES / f"{name}.json")
    machine, roots = replay.machine(data)
    return discover(roots["rapl"], roots["hwmon"], iio_root=roots["iio"], machine=machine)


def cli_json(name: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    """`phase sensors --replay NAME --json`, which must exit 0 without a traceback."""
    assert run_cli(["sensors", "--replay", str(MACHINES / f"{name}.json"), "--json",
                    "--probe", "0.2", "--sample", "0.2"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return json.loads(out.out)


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
