"""Issue 31, class 6: empty is not absent. An empty or blank value of any option of any command
(`--shard ""`, `--shard=`, `-o " "`), and of any environment variable phase reads (the
scheduler's array variables, PHASE_*), is an error with exit 2 naming it: never "not given",
which would silently do something else (the whole campaign on every node).

Every option of every command is enumerated from the CLI itself, so a new option is covered
without editing this test; the variables are the ones phase reads (phase.base.errors.env_value)."""

from __future__ import annotations

import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from sandbox import assert_one_line_error, run_phase

from phase.campaign import load_experiment
from phase.campaign.experiment import known_experiments
from phase.cli import COMMANDS, main
from phase.cli.measure import experiment_command

# slow (not in `make test-fast`): every variable phase reads, each a separate `phase` process.
pytestmark = pytest.mark.slow


def _commands() -> list[tuple[list[str], click.Command]]:
    """(argv prefix, command) for every leaf command, experiments' measure commands included."""
    ctx = click.Context(main)
    out: list[tuple[list[str], click.Command]] = []
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert command is not None
        if name == "measure":
            for exp in known_experiments():
                out.append((["measure", exp], experiment_command(load_experiment(exp))))
        elif isinstance(command, click.Group):
            out += [([name, sub], command.commands[sub]) for sub in command.commands]
        else:
            out.append(([name], command))
    return out


def _value_options() -> list[tuple[list[str], str]]:
    """Every option that takes a value, as (argv prefix, its longest name)."""
    found = []
    for prefix, command in _commands():
        for param in command.params:
            if isinstance(param, click.Option) and not param.is_flag and not param.count:
                found.append((prefix, max(param.opts, key=len)))
    return found


OPTIONS = _value_options()
BLANKS = {"empty": ["{opt}", ""], "blank": ["{opt}", "  "], "equals": ["{opt}="],
          "equals-blank": ["{opt}= "]}


def test_the_sweep_sees_the_options_that_matter() -> None:
    names = {(" ".join(p), o) for p, o in OPTIONS}
    for expected in [("measure speculative", "--shard"), ("measure speculative", "--job-id"),
                     ("measure speculative", "--output"), ("profile", "--output"),
                     ("sensors", "--snapshot"), ("site", "--results-dir")]:
        assert expected in names, expected
    assert len(OPTIONS) > 40


@pytest.mark.parametrize("form", list(BLANKS))
def test_every_option_of_every_command_refuses_an_empty_value(form: str) -> None:
    failures = []
    for prefix, opt in OPTIONS:
        argv = [*prefix, *(t.format(opt=opt) for t in BLANKS[form])]
        result = CliRunner().invoke(main, argv)
        errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
        if (result.exit_code != 2 or len(errors) != 1 or opt not in errors[0]
                or "empty" not in errors[0]
                or not isinstance(result.exception, SystemExit | None)):
            failures.append(f"{' '.join(argv)!r}: exit {result.exit_code}: {result.output!r}")
    assert not failures, "\n".join(failures)


def test_an_empty_positional_argument_is_refused() -> None:
    for argv in (["validate", ""], ["merge", "out.json", " "], ["predict", "--", ""]):
        result = CliRunner().invoke(main, argv)
        assert result.exit_code == 2, (argv, result.output)
        assert "empty" in result.output, result.output


# Each variable phase reads, with the others it needs set to good values to be read at all.
SLURM = {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_TASK_MIN": "0",
         "SLURM_ARRAY_TASK_MAX": "1", "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_JOB_ID": "77"}
KUBE = {"JOB_COMPLETION_INDEX": "0", "PHASE_SHARD_COUNT": "2"}
VARIABLES = {name: SLURM for name in SLURM} | {name: KUBE for name in KUBE} | {
    "PHASE_JOB_ID": SLURM, "PHASE_HOSTNAME": {}, "PHASE_CACHE": {}}


@pytest.mark.parametrize("blank", ["", "   "], ids=["empty", "blank"])
@pytest.mark.parametrize("name", list(VARIABLES))
def test_every_variable_phase_reads_refuses_an_empty_value(tmp_path: Path, name: str,
                                                           blank: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PHASE_",
                                                                       "JOB_COMPLETION"))}
    env = {**clean, **VARIABLES[name], name: blank}
    proc = run_phase(["measure", "speculative", "--quick", "--no-sensor", "--prompts", "code",
                      "--strategies", "plain", "--tokens", "4", "--repeats", "2",
                      "--out-dir", str(out)], env=env, timeout=120)
    assert_one_line_error(proc, 2, name, "empty")
    assert "loading" not in proc.stderr
    assert list(out.iterdir()) == []


def test_shard_empty_as_a_job_script_writes_it_runs_nothing(tmp_path: Path) -> None:
    """The issue's case: `--shard "$SLURM_ARRAY_TASK_ID"` with the variable unset."""
    proc = run_phase(["measure", "speculative", "--quick", "--no-sensor", "--shard", "",
                      "--out-dir", str(tmp_path)], timeout=120)
    assert_one_line_error(proc, 2, "--shard", "empty")
    assert list(tmp_path.iterdir()) == []
