"""`phase --help` lists every command without importing any (so it starts at once), and each
listed command resolves to the click command of that name."""

from __future__ import annotations

import subprocess
import sys

import click
from click.testing import CliRunner

from phase.cli import COMMANDS, main

HEAVY = ("pandas", "altair", "mkdocs", "llama_cpp", "vl_convert", "phase.publish",
         "phase.campaign", "phase.decode")


def test_help_imports_no_command_module() -> None:
    code = ("import sys; from phase.cli import run_cli; rc = run_cli(['--help']); "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} "
            f"or any(m.startswith(h) for h in {HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "Commands:" in out
    for name in COMMANDS:
        assert f"  {name} " in out
    assert out.strip().splitlines()[-1] == "[]"


def test_every_listed_command_resolves_to_its_command() -> None:
    ctx = click.Context(main)
    assert main.list_commands(ctx) == sorted(COMMANDS)
    for name in COMMANDS:
        command = main.get_command(ctx, name)
        assert isinstance(command, click.Command) and command.name == name, name
        result = CliRunner().invoke(main, [name, "--help"], prog_name="phase")
        assert result.exit_code == 0 and f"Usage: phase {name}" in result.output, name


def test_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["nosuch"])
    assert result.exit_code == 2 and "No such command" in result.output
