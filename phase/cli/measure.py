"""`phase measure EXPERIMENT [OPTIONS]`, and `python experiments/<name>.py [OPTIONS]`: the same
command, built from the experiment's declared plan (its defaults show in --help)."""

from __future__ import annotations

import os
import shlex
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from phase.campaign.experiment import Experiment, load_experiment
from phase.campaign.machine import hostname
from phase.campaign.plan import CampaignPlan
from phase.campaign.plan_check import check_plan
from phase.campaign.shards import (
    ShardRequest,
    identify,
    job_id,
    shard_file_name,
    shard_from_env,
    shard_request,
)
from phase.cli.common import PhaseCommand, run_reporting, say

if TYPE_CHECKING:
    from phase.campaign import Destination, SensorOptions

EXIT_STATUS = """\b
Exit status:
  0    the campaign is complete
  1    a run or a write failed, e.g. the disk is full (the finished runs are
       kept; the message says how many and the command that continues)
  2    bad input, refused before any model loads and with nothing written: an
       option, model, prompt that does not fit, a --meter spec, an output file
       that exists or a directory that cannot be written, a results file another
       campaign is writing (its holder is named), a --resume of a complete,
       read-only or different campaign (the differences are listed)
  130  interrupted with Ctrl-C (the finished runs are kept; the command that
       continues the campaign is printed)"""


@click.command(
    "measure",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                      "help_option_names": []},
    add_help_option=False,
)
@click.argument("experiment", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def measure(ctx: click.Context, experiment: str | None, args: tuple[str, ...]) -> None:
    """Run an experiment campaign: phase measure EXPERIMENT [OPTIONS] (see EXPERIMENT --help).

    \b
    phase measure speculative -o results/x.json
    phase measure speculative --quick          a few-minute smoke campaign
    phase measure speculative --help           every option
    """
    if experiment is None or experiment in ("-h", "--help"):
        click.echo(ctx.get_help())
        ctx.exit(0 if experiment else 2)
    command = experiment_command(load_experiment(experiment))
    command.main(args=list(args), prog_name=f"phase measure {experiment}")


def run_script(exp: Experiment) -> None:
    """What `python experiments/<name>.py` runs: the same command as `phase measure <name>`."""
    experiment_command(exp).main(prog_name=f"python {sys.argv[0]}")


def run_file(path: str) -> None:
    """What an experiment file runs first when it is the script (`python experiments/X.py`):
    load it as `phase measure` does, so a bad declaration is one `error:` line naming the file
    and the field (exit 2, nothing written), then run its command. Never returns."""
    exp = run_reporting(lambda: load_experiment(str(Path(path).resolve())))
    run_script(exp)
    sys.exit(0)  # pragma: no cover (click's main exits)


def _csv(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = tuple(v.strip() for v in value.split(",") if v.strip())
    if not items:
        raise click.BadParameter("give at least one name")
    return items


def plan_from_options(exp: Experiment, quick: bool, opts: dict[str, Any]) -> CampaignPlan:
    """The experiment's plan (or its quick plan) with the options given on the command line."""
    base = exp.quick_plan() if quick else exp.plan
    if base is None:
        raise click.UsageError(f"experiment {exp.name} declares no quick campaign")
    given: dict[str, Any] = {k: v for k, v in opts.items() if v is not None}
    for name in ("strategies", "prompts"):
        if name in given:
            given[name] = _csv(given[name])
    if "workload" in given:
        # Checked here, line by line, before anything is claimed or loaded.
        from phase.campaign.prompts import workload_prompts

        chosen, _ = workload_prompts(given["workload"], given.get("prompts", ()))
        given["prompts"] = tuple(p.name for p in chosen)
    if given.pop("no_shuffle", False):
        given["shuffle"] = False
    if given.get("blocked_by") == "none":
        given["blocked_by"] = None
    if given.pop("raw_prompt", False):
        given["chat_template"] = False
    if given.pop("no_profile", False):
        given["profile"] = False
    if given.pop("no_disturbance", False):
        given["disturbed_load"] = None
    if "repeats" in given and "target_half_width" not in given:
        # `--repeats N` asks for N repeats: the fixed design, no adaptive rounds after them.
        given["target_half_width"] = None
    plan = replace(base, **given)
    check_plan(plan, "options")
    return plan


def resume_hint(argv: list[str], output: Path) -> str:
    """The command that continues this campaign: the original one, resuming its file."""
    args = list(argv) or ["phase"]
    cleaned: list[str] = []
    skip = False
    for arg in args[1:]:
        if skip:
            skip = False
            continue
        if arg in ("-o", "--output", "--resume"):
            skip = True
            continue
        if arg.startswith(("--output=", "--resume=")) or arg.endswith(".json"):
            continue
        cleaned.append(arg)
    head = "phase" if Path(args[0]).name == "phase" else f"python {args[0]}"
    return " ".join([head, *map(shlex.quote, cleaned), "--resume", shlex.quote(str(output))])


def run_campaign(exp: Experiment, plan: CampaignPlan, destination: Destination,
                 sensors: SensorOptions, shard: ShardRequest | None = None,
                 job: tuple[str | None, str | None] = (None, None)) -> None:
    """Prepare (bad input: exit 2, nothing written), run with a progress bar, summarise.
    Ctrl-C keeps the finished runs, prints the command that continues, and exits 130."""
    # Here, not at the top: the runner loads llama.cpp, numpy and rich (a quarter of a second of
    # CPU of every start), which `--help` and a command refused on its options never need.
    from phase.campaign import CampaignFailed, discover_sensors, prepare, ui

    # A file-size limit (ulimit -f) would kill the process mid-write; ignored, the write fails
    # with EFBIG instead and the campaign stops with its message (finished runs kept).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    observer = ui.ProgressObserver()
    campaign = prepare(exp, plan, destination, discover_sensors(sensors), observer,
                       energy_sensors=sensors.energy_sensors, shard=shard, job_id=job)
    if campaign.identity is not None and campaign.identity.shard is not None:
        part = campaign.identity.shard
        say(f"shard {part.index} of {part.count} ({part.source}), campaign "
            f"{campaign.identity.campaign_id}: prompts {', '.join(part.prompts)}; "
            f"repeats {', '.join(map(str, part.repeats))}")
    with campaign:
        ui.show_start(campaign)
        try:
            results = campaign.run()
        except KeyboardInterrupt:
            observer.close()
            ui.show_interrupted(campaign.output, resume_hint(sys.argv, campaign.output))
            raise click.exceptions.Exit(130) from None
        except CampaignFailed as exc:
            observer.close()
            raise CampaignFailed(
                f"{exc}: {resume_hint(sys.argv, campaign.output)}", exit_code=exc.exit_code
            ) from None
        finally:
            observer.close()
    ui.print_summary(results)
    click.echo(str(campaign.output))


def experiment_command(exp: Experiment) -> click.Command:
    """The click command of one experiment; option help shows the experiment's own defaults."""
    return click.command(
        name=exp.name,
        cls=PhaseCommand,
        help=f"{exp.description}\n\nOUTPUT defaults to "
        f"results/{exp.name}-<host-class>-<date>.json; a shard's to "
        "results/<campaign id>-shard-<I>-of-<N>.json.",
        epilog=EXIT_STATUS,
        context_settings={"help_option_names": ["-h", "--help"]},
    )(_options(exp, exp.plan)(_callback(exp)))


def _default_path(exp: Experiment, plan: CampaignPlan, quick: bool, out_dir: Path | None,
                  shard: ShardRequest | None, job: tuple[str | None, str | None]) -> Path:
    """`<dir>/<experiment>-<host class>-<date>.json`, or a shard's `<dir>/<campaign id>-shard-
    <I>-of-<N>.json`; <dir> is --out-dir, else results/ (results/quick/ for --quick)."""
    if shard is None:
        from phase.campaign import default_output

        return default_output(exp.name, quick=quick and out_dir is None,
                              results_dir=out_dir or Path("results"))
    identity = identify(exp.name, plan, shard, job)
    assert identity.shard is not None  # a shard request gives a shard
    directory = out_dir or (Path("results") / "quick" if quick else Path("results"))
    directory.mkdir(parents=True, exist_ok=True)
    return directory / shard_file_name(identity.campaign_id, identity.shard)


def _callback(exp: Experiment) -> Any:
    def command(output_arg: Path | None, output: Path | None, resume: Path | None,
                quick: bool, use_sensors: bool, meters: tuple[str, ...],
                rapl_root: str | None, hwmon_root: str | None, iio_root: str | None,
                energy_sensor: str | None, shard: str | None, job_id_opt: str | None,
                out_dir: Path | None, **opts: Any) -> None:
        if sum(x is not None for x in (output_arg, output, resume)) > 1:
            raise click.UsageError("give the output once: OUTPUT, -o or --resume")
        plan = plan_from_options(exp, quick, opts)
        request = shard_request(shard) if shard is not None else shard_from_env(os.environ)
        job = job_id(job_id_opt, os.environ)
        hostname()  # an empty PHASE_HOSTNAME is refused now, not after the models load
        from phase.campaign import Destination, SensorOptions

        given = resume or output_arg or output
        # A default name is claimed atomically (numbered -2, -3... when taken); a shard's
        # name is its identity, so a second writer of it is refused instead.
        destination = (Destination(given, resume=resume is not None) if given is not None
                       else Destination(_default_path(exp, plan, quick, out_dir, request, job),
                                        numbered=request is None))
        sensors = SensorOptions(use=use_sensors, meters=meters,
                                energy_sensors=_csv(energy_sensor) or (),
                                **{k: v for k, v in (("rapl_root", rapl_root),
                                                     ("hwmon_root", hwmon_root),
                                                     ("iio_root", iio_root)) if v})
        run_campaign(exp, plan, destination, sensors, request, job)

    return command


def _target_default(plan: CampaignPlan) -> str:
    if plan.target_half_width is None:
        return "none: the fixed design"
    return f"{plan.target_half_width:g}"


def _adaptive_default(plan: CampaignPlan) -> str:
    if plan.target_half_width is None:
        return ""
    budget = ("as many extra runs as planned" if plan.extra_runs is None
              else f"up to {plan.extra_runs} extra runs")
    if plan.extra_time_s is not None:
        budget += f" and {plan.extra_time_s:g} s"
    return (f", then more until each ratio to plain is within ±{plan.target_half_width:.0%} "
            f"({budget}); --quick: fixed")


def _options(exp: Experiment, plan: CampaignPlan) -> Any:
    """Every `phase measure` option, defaults shown from the experiment's plan.

    Long because it is one flat list of options: split up, a reader would have to visit
    several functions to see the command's whole surface."""
    path = click.Path(dir_okay=False, path_type=Path)
    options = [
        click.argument("output_arg", metavar="[OUTPUT]", required=False, type=path),
        click.option("-o", "--output", type=path, help="Results file to write (same as OUTPUT)."),
        click.option("--resume", type=path, help="Continue an interrupted campaign in this file "
                     "(same options as before)."),
        click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path),
                     help="Directory for the default-named results file [default: results/]."),
        click.option("--shard", metavar="I/N", help="Run shard I (from 0) of N of the plan: "
                     "whole prompts per shard, or whole repeats when there are fewer prompts "
                     "than shards [default: SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT, "
                     "or JOB_COMPLETION_INDEX with PHASE_SHARD_COUNT, where set]"),
        click.option("--job-id", "job_id_opt", metavar="ID", help="Job id the campaign id is "
                     "derived from; every shard of one campaign needs the same [default: "
                     "PHASE_JOB_ID, else SLURM_ARRAY_JOB_ID]"),
        click.option("--quick", is_flag=True, help="Smoke campaign: small test model, short "
                     "generations, fewer strategies; written under results/quick/, which the "
                     "site does not publish."),
        click.option("--target", help=f"Target model: embedded name, .gguf path or "
                     f"hf:REPO/FILE [default: {plan.target}]"),
        click.option("--draft", help=f"Draft model for draft-k [default: {plan.draft}]"),
        click.option("--tokens", type=click.IntRange(min=1),
                     help=f"Tokens generated per run [default: {plan.tokens}]"),
        click.option("--repeats", type=click.IntRange(min=1),
                     help=f"Repeats of every prompt × strategy; given, the design is fixed "
                     f"(no adaptive rounds unless --target-width is given too) "
                     f"[default: {plan.repeats}{_adaptive_default(plan)}]"),
        click.option("--target-width", "target_half_width", metavar="FRACTION",
                     type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
                     help="Adaptive repeats: after the planned ones, repeat every condition "
                     "whose ratio to plain (speed; chip energy where measured) has a 95% "
                     "interval wider than ±FRACTION of it (0.05: ±5%), with plain, shuffled, "
                     "until narrow or the budget is spent "
                     f"[default: {_target_default(plan)}]"),
        click.option("--extra-runs", type=click.IntRange(min=0),
                     help="Adaptive repeats' run budget: runs past the planned ones [default: "
                     + ("as many as the planned runs" if plan.extra_runs is None
                        else str(plan.extra_runs)) + "]"),
        click.option("--extra-time", "extra_time_s", type=click.FloatRange(min=0),
                     metavar="SECONDS",
                     help="Adaptive repeats' time budget: seconds of runs past the planned "
                     "ones [default: " + ("none" if plan.extra_time_s is None
                                          else f"{plan.extra_time_s:g}") + "]"),
        click.option("--strategies", help=f"Comma list [default: {','.join(plan.strategies)}]"),
        click.option("--prompts", help=f"Comma list of prompt names in {exp.prompts_dir.name}/ "
                     f"(with --workload: of its prompt ids) [default: {','.join(plan.prompts)}; "
                     "with --workload: all of its prompts]"),
        click.option("--request-rate", "serving_request_rate", metavar="PER_S",
                     type=click.FloatRange(min=0, min_open=True),
                     help="Serving studies: an open loop, requests arriving as a seeded "
                     "Poisson process at PER_S requests per second, at most each run's "
                     "concurrency level served at once (vLLM's --request-rate with "
                     "--max-concurrency) [default: "
                     + ("a closed loop" if plan.serving_request_rate is None
                        else f"{plan.serving_request_rate:g}") + "]"),
        click.option("--workload", metavar="NAME|FILE.jsonl",
                     help="Run a workload's prompts in place of the experiment's: humaneval, "
                     "mt-bench, edit, or your own FILE.jsonl (one JSON object per line: "
                     '"prompt", optional "id" and "category"). The results file records its '
                     "name, source, sha256 and count."),
        click.option("--threads", type=click.IntRange(min=1),
                     help="CPU threads [default: physical cores]"),
        click.option("--n-ctx", type=click.IntRange(min=64),
                     help=f"Context length. [default: {plan.n_ctx}]"),
        click.option("--sensor/--no-sensor", "use_sensors", default=True, show_default=True,
                     help="Sample every energy sensor found (see `phase sensors`)."),
        click.option("--meter", "meters", multiple=True, metavar="FILE:SCOPE:TAU",
                     help="External meter trace (CSV/JSON), e.g. wall.csv:wall:1.0. Repeatable."),
        click.option("--energy-sensor", metavar="NAME[,NAME]",
                     help="The sensor(s) whose energy, summed, is the chip energy [default: "
                     "the device that ran the model; see `phase sensors`]."),
        click.option("--rapl-root", help="powercap sysfs root [default: /sys/class/powercap]"),
        click.option("--hwmon-root", help="hwmon sysfs root [default: /sys/class/hwmon]"),
        click.option("--iio-root", help="IIO root for JetPack 4 rails "
                     "[default: /sys/bus/iio/devices]"),
        click.option("--cooldown", "cooldown_s", type=click.FloatRange(min=0),
                     help=f"Seconds of rest before each run [default: {plan.cooldown_s}]"),
        click.option("--idle-window", "idle_window_s", type=click.FloatRange(min=0),
                     help=f"Seconds of idle sampling before each run "
                     f"[default: {plan.idle_window_s}]"),
        click.option("--sample-hz", type=click.FloatRange(min=0, min_open=True),
                     help=f"Sensor sampling rate. [default: {plan.sample_hz}]"),
        click.option("--seed", type=int,
                     help=f"Seed of the shuffled order. [default: {plan.seed}]"),
        click.option("--no-shuffle", is_flag=True, default=None,
                     help="Keep the same order in every repeat."),
        click.option("--blocked-by", metavar="FACTOR|none",
                     help="Run each level of this factor's conditions back to back in every "
                     "repeat, the levels in a shuffled order, so the runs a ratio to plain "
                     "pairs are minutes apart; none: shuffle each repeat whole [default: "
                     f"{plan.blocked_by or 'none'}]"),
        click.option("--raw-prompt", is_flag=True, default=None,
                     help="Send prompts without the chat template."),
        click.option("--objective", "auto_objective", type=click.Choice(["time", "energy"]),
                     help=f"What auto minimises per token; energy needs an energy sensor "
                     f"[default: {plan.auto_objective}]"),
        click.option("--no-profile", is_flag=True, default=None,
                     help="Skip the cost profile before the runs (auto needs it)."),
        click.option("--no-disturbance", is_flag=True, default=None,
                     help="Record each run's foreign load but judge nothing: no run or "
                     "profile block is marked disturbed, left out or re-run (for a machine "
                     "whose background load is part of what you measure)."),
    ]

    def apply(fn: Any) -> Any:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return apply
