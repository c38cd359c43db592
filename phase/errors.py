"""The one error type the CLI catches: a message a user can act on, and an exit code."""

from __future__ import annotations


class PhaseError(Exception):
    """A domain error: one line saying what is wrong and how to fix it.

    The CLI prints the message (no traceback) and exits with `exit_code`: 1 by default,
    2 for bad input that is really a usage problem (unknown names, bad numbers).
    """

    exit_code: int = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageProblem(PhaseError):
    exit_code = 2
