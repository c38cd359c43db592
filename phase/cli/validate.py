"""`phase validate FILES`: the findings of every rule, as text or JSON."""

from __future__ import annotations

import json
from typing import Any

import click

from phase.validate import RuleSettings, exit_code, format_report, validate_file


@click.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list, one report per file.")
@click.option("--strict", is_flag=True, help="Exit 1 when any rule trips, warnings included.")
@click.option("--variance-max", type=float, default=None,
              help="Largest (max-min)/mean per condition before it is unstable [0.05].")
@click.option("--lag-bias-max", type=float, default=None,
              help="Largest worst-case lag under-read b(T) before energy is rejected [0.05].")
@click.option("--confound-r", type=float, default=None,
              help="Pearson r of rest power (enclosing - chip) against 1/window at or below "
              "minus this rejects the enclosing sensor [0.5].")
@click.option("--confound-min-runs", type=int, default=None,
              help="Fewest runs the confound rule needs [6].")
@click.option("--near-tie-gap", type=float, default=None,
              help="Top-2 logit gap below which (in both passes) a divergence from plain is a "
              "near-tie rather than a mismatch [0.5].")
@click.option("--repeats", type=int, default=None,
              help="Expected repeats per condition [the file's config].")
@click.option("--chip-sensor", "--energy-sensor", "chip_sensor", default=None,
              help="Sensor that chip energy means [the file's primary energy sensors, else "
              "automatic; see the report].")
def validate(files: tuple[str, ...], as_json: bool, strict: bool, variance_max: float | None,
             lag_bias_max: float | None, confound_r: float | None,
             confound_min_runs: int | None, near_tie_gap: float | None, repeats: int | None,
             chip_sensor: str | None) -> None:
    """Check results FILES against the validation rules and print the findings.

    \b
    Exit status:
      0  nothing blocks publishing (rejected values and warnings may remain)
      1  a blocking finding; with --strict, any finding at all
      2  a file cannot be read as a results file: missing, not JSON, or
         not matching the schema (reported as a blocking schema finding)
    """
    given: dict[str, Any] = {"variance_max": variance_max, "lag_bias_max": lag_bias_max,
             "confound_r": confound_r, "confound_min_runs": confound_min_runs,
             "near_tie_gap": near_tie_gap, "repeats": repeats, "chip_sensor": chip_sensor}
    settings = RuleSettings(**{k: v for k, v in given.items() if v is not None})
    reports = [validate_file(f, settings) for f in files]
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in reports], indent=1))
    else:
        click.echo("\n\n".join(format_report(r) for r in reports))
    code = exit_code(reports, strict=strict)
    if code:
        click.get_current_context().exit(code)
