"""Run several `phase` commands, each in a child forked from one interpreter, and print what
each loaded (for tests/test_cli_lazy.py).

    python tests/light_commands.py ARGVS CHECKED PRELOAD    (each a JSON list)

The interpreter imports the CLI and the PRELOAD modules once; every command then runs in a
child forked from it, so no command sees what another one imported. A new interpreter per
command paid its start and those imports again each time: most of the seconds the test took.
Preloading hides nothing: the modules a command imports are the same whatever was imported
before it, and a preloaded module that loaded a CHECKED one would show in every child.
The last line of stdout is a JSON list: per command, [exit code, the CHECKED modules loaded]
after it ran, or null where the command raised (its traceback on stderr).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from pathlib import Path

# The repository's own package, wherever the virtual environment's editable install points.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _child(argv: list[str], checked: list[str], result_fd: int) -> None:
    from phase.cli import run_cli

    code = 1
    try:
        rc = run_cli(argv)
        loaded = [m for m in checked if m in sys.modules]
        os.write(result_fd, json.dumps([rc, loaded]).encode())
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _forked(argv: list[str], checked: list[str]) -> object:
    read, write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(argv, checked, write)
    os.close(write)
    with os.fdopen(read) as result:
        text = result.read()
    os.waitpid(pid, 0)
    return json.loads(text) if text else None


def main() -> None:
    argvs, checked, preload = (json.loads(a) for a in sys.argv[1:4])
    import phase.cli  # noqa: F401  (what every command's process imports first)

    for name in preload:
        importlib.import_module(name)
    results = [_forked(argv, checked) for argv in argvs]
    print(json.dumps(results))


if __name__ == "__main__":
    main()
