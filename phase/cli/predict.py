"""`phase predict RESULTS.json`: the cost model against a campaign's measurements."""

from __future__ import annotations

from pathlib import Path

import click

from phase.analysis import primary_sensors
from phase.analysis.prediction import (
    PROFILE_SHARE_LIMIT,
    TOLERANCE,
    predict_conditions,
    profile_share,
    report_lines,
)
from phase.base.errors import UsageProblem
from phase.results import ResultsFile, load
from phase.validate.chip import choose_chip_sensor


@click.command("predict", epilog="Exit status: 0 compared; 1 with --strict, a condition's "
               "prediction missed by more than 10%, or the profile took 5% or more of the "
               "campaign's wall time; 2 bad input (an unreadable file, a summary "
               "file, a file without a cost profile).")
@click.argument("results_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--sensor", metavar="NAME[,NAME]", help="Sensor(s) whose J/token, summed, is "
              "predicted [default: the file's chip-energy sensors].")
@click.option("--strict", is_flag=True, help=f"Exit 1 when any condition misses by more than "
              f"{TOLERANCE:.0%}, or the profile took {PROFILE_SHARE_LIMIT:.0%} or more of the "
              "campaign's wall time.")
def predict_command(results_file: Path, sensor: str | None, strict: bool) -> None:
    """Predicted vs measured tokens/s (and J/token) per condition from the file's own cost
    profile and steps, break-even acceptance per k, the best k per prompt, auto's choices."""
    results = load(results_file)
    if not isinstance(results, ResultsFile):
        raise UsageProblem(f"{results_file}: a summary file has no runs to predict")
    if results.profile is None:
        raise UsageProblem(f"{results_file}: $.profile: this campaign has no cost profile "
                           "(measured before profiling existed, or with --no-profile)")
    chip = ([n.strip() for n in sensor.split(",") if n.strip()] if sensor
            else primary_sensors(results, next(iter(choose_chip_sensor(results)), None)))
    for line in report_lines(results, chip):
        click.echo(line)
    if not strict:
        return
    share = profile_share(results)
    if (not all(p.within for p in predict_conditions(results, chip))
            or (share is not None and share >= PROFILE_SHARE_LIMIT)):
        raise click.exceptions.Exit(1)
