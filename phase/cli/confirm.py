"""`phase confirm FILE`: measure a campaign's headline again on fresh runs."""

from __future__ import annotations

from pathlib import Path

import click

from phase.cli.common import say


@click.command("confirm")
@click.argument("selection", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Results file to write [default: beside SELECTION, <its name>-confirm.json].")
@click.option("--pairs", type=click.IntRange(min=2), default=None,
              help="Rounds of the chosen condition and plain decoding, in alternation "
              "[default: 8].")
@click.option("--sensor/--no-sensor", "use_sensors", default=True, show_default=True,
              help="Sample every energy sensor found (see `phase sensors`).")
def confirm(selection: Path, output: Path | None, pairs: int | None, use_sensors: bool) -> None:
    """Confirm the headline of the complete campaign in SELECTION on fresh runs.

    A headline is the best of many conditions, and the best of many noisy estimates is biased
    upward: the condition with the highest speed ratio to plain decoding is run again with
    plain, alternating, for --pairs rounds, into a campaign of its own that names the selection
    (its id, file and sha256). The note then states the confirmation's ratio and interval; the
    selection's is never its evidence.

    \b
    phase confirm results/speculative_sampling-x86_64-2c-2026-12-03.json

    \b
    Exit status:
      0    the confirmation campaign is complete
      1    a run or a write failed (finished runs are kept)
      2    bad input: SELECTION is unreadable, incomplete, a confirmation itself, or has no
           ratio to plain to confirm; the output exists (nothing is written)
      130  interrupted (the finished runs are kept)
    """
    from phase.campaign import Destination, SensorOptions
    from phase.campaign.confirm import PAIRS, confirmation_plan
    from phase.campaign.experiment import load_experiment
    from phase.cli.measure import run_campaign
    from phase.results import load_raw

    experiment = load_experiment(load_raw(selection).experiment)
    plan = confirmation_plan(experiment, selection, pairs or PAIRS)
    assert plan.confirms is not None  # a confirmation plan always names its selection
    chosen = plan.confirms
    levels = "".join(f", {k}={v}" for k, v in chosen.factors.items())
    say(f"confirming {chosen.strategy} on {chosen.prompt}{levels}: chosen by {chosen.rule} "
        f"(of {chosen.selected_from}), {plan.repeats} fresh pairs with plain")
    out = output or selection.with_name(f"{selection.stem}-confirm.json")
    run_campaign(experiment, plan, Destination(out), SensorOptions(use=use_sensors))
