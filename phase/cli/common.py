"""What every command shares: stderr messages, and the one place a PhaseError becomes
`error: <message>` on stderr and the error's own exit code."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from phase.errors import PhaseError


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


class PhaseGroup(click.Group):
    """Reports domain errors of every subcommand the same way."""

    def invoke(self, ctx: click.Context) -> Any:
        with reporting_errors():
            return super().invoke(ctx)


class PhaseCommand(click.Command):
    """A command that may run outside the `phase` group (an experiment script), reporting
    domain errors the same way."""

    def invoke(self, ctx: click.Context) -> Any:
        with reporting_errors():
            return super().invoke(ctx)
