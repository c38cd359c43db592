"""What every command shares: stderr messages, and the one place a PhaseError becomes
`error: <message>` on stderr and the error's own exit code."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from phase.base.errors import PhaseError, UsageProblem


def say(message: str) -> None:
    """Progress and notes for people go to stderr; stdout carries the command's result."""
    click.echo(message, err=True)


@contextmanager
def reporting_errors() -> Iterator[None]:
    """Turn a PhaseError into one red `error:` line (no traceback) and its exit code."""
    try:
        yield
    except PhaseError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        raise click.exceptions.Exit(exc.exit_code) from None
    except OSError as exc:
        # The environment refused something the library did not expect to fail (a file that
        # vanished, a full disk): still one line naming the file, never a traceback.
        where = f"{exc.filename}: " if exc.filename else ""
        click.secho(f"error: {where}{exc.strerror or exc}", fg="red", err=True)
        raise click.exceptions.Exit(1) from None


T = TypeVar("T")


def run_reporting(fn: Callable[[], T]) -> T:
    """`fn()` outside any click command (an experiment script before its command exists): a
    PhaseError is its one `error:` line and the process exits with its code."""
    try:
        with reporting_errors():
            return fn()
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


def refuse_empty_values(args: Sequence[str]) -> None:
    """An empty or blank value of any option or argument is an error (exit 2), never "not
    given": it is what an unset variable expands to (`--shard "$SLURM_ARRAY_TASK_ID"`), and
    taking it as absent silently does something else (the whole campaign on every node).
    Checked on the raw command line, before click turns "" into a default or a Path(".")."""
    options = True
    for i, token in enumerate(args):
        if options and token == "--":
            options = False
            continue
        if options and token.startswith("--") and "=" in token:
            name, value = token.split("=", 1)
            if not value.strip():
                raise UsageProblem(f"{name}: the value is empty (an unset variable?); give a "
                                   "value, or leave the option out")
        elif not token.strip():
            before = args[i - 1] if i and options and args[i - 1].startswith("-") else None
            where = before or f"argument {i + 1}"
            raise UsageProblem(f"{where}: the value is empty (an unset variable?); give a "
                               "value, or leave it out")


class _Reporting(click.Command):
    """Refuses empty values and reports domain errors the same way, for a group (its every
    subcommand) or a command that runs outside it (an experiment script)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        with reporting_errors():
            refuse_empty_values(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        with reporting_errors():
            return super().invoke(ctx)


class PhaseGroup(_Reporting, click.Group):
    """Reports domain errors of every subcommand the same way."""


class LazyGroup(PhaseGroup):
    """A group whose commands are imported when used: `lazy_commands` maps a name to its
    module, attribute and the line the group's --help shows without importing it."""

    def __init__(self, *args: Any, lazy_commands: dict[str, tuple[str, str, str]],
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = lazy_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands and cmd_name not in self.commands:
            module, attribute, _ = self.lazy_commands[cmd_name]
            command = getattr(importlib.import_module(module), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{module}.{attribute} is not a click command")
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.lazy_commands[name][2] if name in self.lazy_commands
                 and name not in self.commands else self._short_help(ctx, name))
                for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def _short_help(self, ctx: click.Context, name: str) -> str:
        command = self.get_command(ctx, name)
        return command.get_short_help_str() if command else ""


class PhaseCommand(_Reporting):
    """A command that may run outside the `phase` group (an experiment script), reporting
    domain errors the same way."""
