"""The speculative experiment with short prompts, for tests about a campaign's machinery.

A test-model campaign spends much of its CPU prefilling the prompt: every run prefills it
again in the target and the draft, and so do the references and the cost profile, and on a
CPU a prefill's cost grows with its tokens. The real `code` prompt is 86 tokens under the
test model's chat template; tests/fixtures/prompts/code.txt, under the same name, is 42.
A run records its prompt's text and source file, so a results file says which one it ran.
Tests about the prompts themselves, the real product path (one full `phase measure
speculative` in test_campaign, the smoke campaigns, shards and Slurm), or whose case needs
the real prompt's length keep the real experiment.

`python tests/short_prompts.py measure speculative ARGS` is `phase measure speculative ARGS`
with these prompts, for tests that need a separate process (`PHASE`, for sandbox.run_phase).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from phase.campaign import Experiment, load_experiment
from phase.cli.measure import experiment_command

SCRIPT = Path(__file__).resolve()
SHORT_PROMPTS = SCRIPT.parent / "fixtures" / "prompts"
SPECULATIVE: Experiment = replace(load_experiment("speculative"), prompts_dir=SHORT_PROMPTS)


def measure_command() -> click.Command:
    """The `phase measure speculative` command, with the short prompts."""
    return experiment_command(SPECULATIVE)


# What stands for `phase` in a separate process: `measure speculative` then runs with these
# prompts (anything else is refused: only that command is stood in for).
PHASE = (sys.executable, str(SCRIPT))


def _main(argv: list[str]) -> None:
    if argv[:2] != ["measure", "speculative"]:
        sys.exit(f"usage: {SCRIPT.name} measure speculative [OPTIONS]")
    measure_command().main(args=argv[2:], prog_name="phase measure speculative")


if __name__ == "__main__":
    _main(sys.argv[1:])
