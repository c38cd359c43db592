"""`phase sensors`: the energy sensors this machine has, and why the others are missing;
`--snapshot` records what discovery read into a file, `--replay` runs against one."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from phase.base.errors import UsageProblem
from phase.campaign import DEFAULT_PLAN, SensorOptions, discover_sensors
from phase.sensors.meter.meter import parse_meter_spec
from phase.sensors.replay import snapshot
from phase.sensors.report import format_survey, survey, survey_snapshot
from phase.storage.outputs import NewFile

REPLAY_SAMPLE_S = 1.0


def _this_build() -> str:
    from phase.decode import this_build  # loads llama.cpp: only when it is needed

    return this_build()


def _take_snapshot(path: Path, roots: dict[str, Path]) -> None:
    with NewFile.claim(path, "--snapshot") as out:
        build = {"accelerator": _this_build()}
        data = snapshot.take(roots, build)
        out.write(json.dumps(data, indent=1) + "\n")
    click.echo(f"wrote {path}: attach it to a bug report, or try `phase sensors --replay "
               f"{path}`", err=True)


@click.command("sensors")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--sample", "sample_s", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="SECONDS", help="Sample a window this long; show energy and mean power "
              f"[replay: {REPLAY_SAMPLE_S:g}].")
@click.option("--probe", "probe_s", type=click.FloatRange(min=0.01), default=5.0,
              show_default=True, metavar="SECONDS",
              help="Longest time to watch a slowly updating counter for its update period.")
@click.option("--rapl-root", type=click.Path(file_okay=False), default=None,
              help="powercap sysfs root [/sys/class/powercap].")
@click.option("--hwmon-root", type=click.Path(file_okay=False), default=None,
              help="hwmon sysfs root (Jetson INA3221 rails, amd_energy, amdgpu, i915/xe GPUs) "
              "[/sys/class/hwmon].")
@click.option("--iio-root", type=click.Path(file_okay=False), default=None,
              help="IIO root for JetPack 4 ina3221x rails [/sys/bus/iio/devices].")
@click.option("--meter", "meters", multiple=True, metavar="FILE:SCOPE:TAU[,OPTIONS]",
              help="An external meter trace (CSV/JSON), e.g. wall.csv:wall:1.0. Repeatable.")
@click.option("--snapshot", "snapshot_to", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Record what discovery reads into this new JSON file.")
@click.option("--replay", "replay_from", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Run discovery and a sampled window against a snapshot.")
def sensors(as_json: bool, sample_s: float | None, probe_s: float, rapl_root: str | None,
            hwmon_root: str | None, iio_root: str | None, meters: tuple[str, ...],
            snapshot_to: Path | None, replay_from: Path | None) -> None:
    """List the energy sensors found here (scope, kind, smoothing, measured update period,
    bound, what each encloses), the primary energy sensor(s) for where a model would run,
    and why each missing backend is unavailable. Exits 0 even when none is found; 2 on bad
    input (a meter trace or snapshot that cannot be read)."""
    given = {"rapl": rapl_root, "hwmon": hwmon_root, "iio": iio_root}
    if snapshot_to is not None and replay_from is not None:
        raise UsageProblem("give --snapshot or --replay, not both")
    for spec in meters:
        parse_meter_spec(spec)
    # A sampled window is taken at the rate a campaign samples at; --probe bounds the slow
    # probe, the first probe takes at most a second of it.
    sampling: dict[str, Any] = {"hz": DEFAULT_PLAN.sample_hz, "probe_s": min(1.0, probe_s),
                "slow_probe_s": probe_s}
    if replay_from is not None:
        result = survey_snapshot(
            replay_from, **sampling, meters=meters,
            sample_s=REPLAY_SAMPLE_S if sample_s is None else sample_s,
            roots={k: Path(v) for k, v in given.items() if v})
    else:
        roots = {**snapshot.default_roots(), **{k: Path(v) for k, v in given.items() if v}}
        if snapshot_to is not None:
            _take_snapshot(snapshot_to, roots)
        found = discover_sensors(SensorOptions(
            meters=meters, rapl_root=str(roots["rapl"]), hwmon_root=str(roots["hwmon"]),
            iio_root=str(roots["iio"])))
        result = survey(found, **sampling, sample_s=sample_s, build=_this_build(),
                        env=dict(os.environ))
    click.echo(json.dumps(result, indent=1) if as_json else format_survey(result))
