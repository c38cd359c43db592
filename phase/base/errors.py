"""The one error type the CLI catches: a message a user can act on, and an exit code; and
`env_value`, the one way phase reads an environment variable (empty is not unset)."""

from __future__ import annotations

from collections.abc import Mapping


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


def env_value(env: Mapping[str, str], name: str) -> str | None:
    """The value of environment variable `name`, None when it is unset.

    Set but empty or blank is an error (exit 2), never "unset": that is what an unset
    variable expands to in a job script (`--shard "$SLURM_ARRAY_TASK_ID"`, `PHASE_CACHE=$X`),
    and reading it as absent would silently do something else (the whole campaign on every
    node, the default cache)."""
    value = env.get(name)
    if value is None:
        return None
    if not value.strip():
        raise UsageProblem(f"environment variable {name} is set but empty; give it a value, "
                           f"or unset it (`unset {name}`)")
    return value
