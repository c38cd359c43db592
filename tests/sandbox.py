"""Running `phase` as a separate process, as a user would, with hostile surroundings: a
read-only directory (really read-only, also for root), a file-size limit (a full disk).

Separate processes, not threads or CliRunner: locks, signals, resource limits and hangs are
properties of processes, and a hung command must fail a test by timeout, not hang it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

PHASE = str(Path(sys.executable).with_name("phase"))
TRACEBACK = "Traceback (most recent call last)"


def readonly_prefix(directory: Path) -> list[str]:
    """A command prefix under which `directory` cannot be written, even by root.

    As root (CI runs as root, and root ignores permission bits) the directory is bind-mounted
    read-only in a private mount namespace of the command; otherwise its write bits go."""
    if os.geteuid() == 0 and shutil.which("unshare"):
        script = ('mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"')
        return ["unshare", "-m", "sh", "-c", script, str(directory)]
    directory.chmod(0o555)
    return []


# `phase` under a maximum file size. SIGXFSZ stays at its default, so the command itself must
# cope (phase measure ignores it and gets EFBIG, as from a full disk).
FSIZE_WRAPPER = (
    "import resource, sys; "
    "limit = int(sys.argv.pop(1)); "
    "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)); "
    "sys.argv[0] = 'phase'; "
    "from phase.cli import main; main()"
)


def run_phase(args: Sequence[str], *, readonly: Path | None = None, fsize: int | None = None,
              timeout: float = 600, env: dict[str, str] | None = None,
              cwd: Path | None = None,
              phase: Sequence[str] = (PHASE,)) -> subprocess.CompletedProcess[str]:
    """`phase ARGS` in a separate process; `readonly`: a directory it cannot write;
    `fsize`: the largest file it may write, in bytes; `phase`: the command line that stands
    for `phase` (tests/short_prompts.py's, for its short prompts)."""
    if fsize is not None and tuple(phase) != (PHASE,):
        raise ValueError("fsize runs the phase CLI itself")
    program = [*phase] if fsize is None else [sys.executable, "-c", FSIZE_WRAPPER, str(fsize)]
    prefix = readonly_prefix(readonly) if readonly is not None else []
    return subprocess.run([*prefix, *program, *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd,
                          stdin=subprocess.DEVNULL)


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """phase's `error:` lines, and click's `Error:` line of an option it refused itself."""
    return [line for line in proc.stderr.splitlines() if line.startswith(("error:", "Error:"))]


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int,
                          *needles: str) -> str:
    """Exit `code`, exactly one `error:` line on stderr containing every needle, no
    traceback anywhere; returns the line."""
    assert TRACEBACK not in proc.stderr + proc.stdout, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = error_lines(proc)
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def as_interrupted(results: Path) -> bytes:
    """A finished campaign's file as if it had been interrupted after its first run."""
    data = json.loads(results.read_text())
    data["status"] = "interrupted"
    data["runs"] = data["runs"][:1]
    return (json.dumps(data, indent=1) + "\n").encode()
