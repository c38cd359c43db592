"""`phase sensors`: the energy sensors this machine has, and why the others are missing."""

from __future__ import annotations

import json

import click

from phase.campaign import DEFAULT_PLAN
from phase.sensors import discover
from phase.sensors.report import format_survey, survey


@click.command("sensors")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option("--sample", "sample_s", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="SECONDS", help="Sample a window this long; show energy and mean power.")
@click.option("--rapl-root", type=click.Path(file_okay=False), default=None,
              help="powercap sysfs root [/sys/class/powercap].")
@click.option("--hwmon-root", type=click.Path(file_okay=False), default=None,
              help="hwmon sysfs root for Jetson INA3221 rails [/sys/class/hwmon].")
@click.option("--meter", "meters", multiple=True, metavar="FILE:SCOPE:TAU",
              help="An external meter trace (CSV/JSON), e.g. wall.csv:wall:1.0. Repeatable.")
def sensors(as_json: bool, sample_s: float | None, rapl_root: str | None,
            hwmon_root: str | None, meters: tuple[str, ...]) -> None:
    """List the energy sensors found here (scope, kind, smoothing, measured update period)
    and why each missing backend is unavailable. Exits 0 even when none is found."""
    roots = {k: v for k, v in (("rapl_root", rapl_root), ("hwmon_root", hwmon_root)) if v}
    found = discover(meters=list(meters), **roots)
    # A sampled window is taken at the rate a campaign samples at.
    data = survey(found, hz=DEFAULT_PLAN.sample_hz, sample_s=sample_s)
    click.echo(json.dumps(data, indent=1) if as_json else format_survey(data))
