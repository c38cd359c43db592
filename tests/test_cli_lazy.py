"""`phase --help` lists every command without importing any (so it starts at once), each
listed command resolves to the click command of that name, and the light commands start
without the heavy libraries (the suite starts `phase` some hundreds of times: each import of
llama.cpp, numpy and jinja2, or of Altair and pandas, costs a start a few tenths of a second of
CPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import click
import pytest
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


# What no light command may load; each belongs to the commands that decode or draw.
NOT_FOR_LIGHT = ("llama_cpp", "altair", "pandas", "vl_convert", "mkdocs", "jinja2", "rich")
COMMITTED = sorted((Path(__file__).resolve().parent.parent / "results").glob("speculative-*.json"))
# Imported once by the interpreter the commands are forked from (tests/light_commands.py): what
# nearly every command imports, and nothing of NOT_FOR_LIGHT (each child would report it).
PRELOAD = ("phase.results", "phase.validate")
LIGHT_COMMANDS = Path(__file__).resolve().parent / "light_commands.py"


Loaded = tuple[int, list[str]] | str


def _loaded_by_each(argvs: list[list[str]]) -> list[Loaded]:
    """Run `phase ARGV` for each ARGV, each in a child of one fresh interpreter
    (tests/light_commands.py): its exit code and which of NOT_FOR_LIGHT it had loaded, or
    the stderr of them all where that command raised."""
    done = subprocess.run([sys.executable, str(LIGHT_COMMANDS), json.dumps(argvs),
                           json.dumps(NOT_FOR_LIGHT), json.dumps(PRELOAD)],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, check=True)
    results = json.loads(done.stdout.strip().splitlines()[-1])
    return [done.stderr if found is None else (found[0], found[1]) for found in results]


def test_importing_the_cli_loads_no_heavy_library() -> None:
    code = (f"import sys, phase.cli; print([m for m in {NOT_FOR_LIGHT!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


LIGHT = [
    ["validate", str(COMMITTED[0])],
    ["schema"],
    ["models", "list"],
    ["sensors", "--help"],  # `phase sensors` itself asks llama.cpp for its build
    ["merge", "--help"],
    ["predict", "--help"],
    ["measure", "speculative", "--help"],
    ["measure", "speculative", "--tokens", "0"],  # refused on its options: exit 2
]


@lru_cache(maxsize=1)
def _light_runs() -> dict[tuple[str, ...], Loaded]:
    """Every light command run once, together (one interpreter's start for them all)."""
    return dict(zip(map(tuple, LIGHT), _loaded_by_each(LIGHT), strict=True))


@pytest.mark.parametrize("argv", LIGHT, ids=lambda argv: " ".join(argv[:2])
                         if argv[0] != "validate" else "validate FILE")
def test_light_commands_start_without_heavy_libraries(argv: list[str]) -> None:
    found = _light_runs()[tuple(argv)]
    assert not isinstance(found, str), found  # it raised
    rc, loaded = found
    assert rc in (0, 2) and loaded == [], (rc, loaded)


def test_a_refused_build_loads_no_chart_or_table_library(tmp_path: Path) -> None:
    """`phase build` imports Altair, vl-convert and pandas where a page draws a chart or a
    table (phase/publish/charts/spec.py): a build refused on its inputs loads none of them."""
    (tmp_path / "results").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "results" / "bad.json").write_text("{")
    (found,) = _loaded_by_each([["build", "--results-dir", str(tmp_path / "results"),
                                 "--notes-dir", str(tmp_path / "notes"),
                                 "--docs-dir", str(tmp_path / "docs")]])
    assert not isinstance(found, str), found  # it raised
    rc, loaded = found
    assert rc == 1 and not {"altair", "vl_convert", "pandas", "mkdocs", "llama_cpp"} & set(loaded)
