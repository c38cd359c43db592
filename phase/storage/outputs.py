"""Every file and directory phase creates for a user goes through here, never a check-then-
rename: the name is claimed when the command starts and created exclusively when done.

    with NewFile.claim(path, "-o") as out:     # exit 2 now: exists, busy, no such directory
        ...minutes of work...
        out.write(text)                        # exit 2 if a file appeared meanwhile

A claim is the lock phase.storage.claim takes for results files (a second phase writing the
same name is refused at once, naming the holder), plus the rule that the name must not exist.
The write is `create_exclusive` (a complete temporary file hard-linked to the name): a file the
user created in the meantime is never replaced, and the command says so instead of exit 0.

A build's staging directories come from `staging_dir`: named for this host and process, so
that whatever a killed or crashed build left behind (SIGKILL, an abort in native code) is
removed by the next build on this host once that process is gone.

A directory is placed with `place_dir`: a rename that refuses an existing target
(renameat2's RENAME_NOREPLACE; where the kernel or file system lacks it, an exclusive mkdir
and a rename over that still-empty directory, which fails if anything was put in it).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

from phase.base.errors import UsageProblem
from phase.storage.claim import Claim, claim_new
from phase.storage.errors import StorageError
from phase.storage.jsonread import read_regular_text
from phase.storage.writing import atomic_write_text, create_exclusive

_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


class NewFile:
    """A new file phase will create at `path`, held (locked, name free) until written."""

    def __init__(self, claim: Claim) -> None:
        self.held = claim
        self.path = claim.path

    @classmethod
    def claim(cls, path: Path | str, option: str) -> NewFile:
        """Claim `path` (named by `option` on the command line): exit 2 when its directory is
        missing, the name exists, or another phase process is writing it."""
        return cls(claim_new(path, option))

    def write(self, text: str) -> None:
        """Create the file with `text` (never replacing anything), then give up the claim."""
        try:
            create_exclusive(self.held.target, text)
        except StorageError as exc:
            raise type(exc)(_as_named(str(exc), self.held.target, self.path),
                            exit_code=exc.exit_code) from None
        except UsageProblem as exc:
            raise UsageProblem(_as_named(str(exc), self.held.target, self.path)) from None
        finally:
            self.held.release()

    def release(self) -> None:
        self.held.release()

    def __enter__(self) -> NewFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def regenerate(path: Path | str, text: str, option: str, what: str,
               is_own: Callable[[str], bool]) -> None:
    """Write `text` to `path`, replacing only a file phase made (`is_own` of its text): the one
    output meant to be rewritten (`phase schema --write results/schema.json`). Anything else
    there, or a second writer, is refused with exit 2 naming the file."""
    path = Path(path)
    if not path.parent.is_dir():
        raise UsageProblem(f"{path}: directory {path.parent} does not exist; create it first")
    with Claim.take(path, option) as claim:
        if not os.path.lexists(path):
            NewFile(claim).write(text)
            return
        try:
            own = is_own(read_regular_text(path))
        except StorageError:
            own = False
        if not own:
            raise UsageProblem(f"{path}: already exists and is not {what}; phase replaces only "
                               f"{what} it wrote: choose another {option}")
        atomic_write_text(claim.target, text)


def _as_named(message: str, target: Path, shown: Path) -> str:
    """Name the file as the user did, not as the file system resolves it."""
    return message.replace(str(target), str(shown), 1)


def _libc_renameat2() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return libc.renameat2  # glibc >= 2.28
    except (OSError, AttributeError):
        return None


def _rename_noreplace(src: Path, dst: Path) -> bool:
    """renameat2(RENAME_NOREPLACE); False where the system cannot do it (then the caller
    falls back). FileExistsError when `dst` exists."""
    fn = _libc_renameat2()
    if fn is None:
        return False
    rc = fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(dst))


def place_dir(staged: Path, target: Path, what: str) -> None:
    """Move the complete directory `staged` to `target`, which must not exist: exit 2 naming
    `target` (as `what`) when it does, and `staged` is left for its owner to remove."""
    try:
        if _rename_noreplace(staged, target):
            return
        os.mkdir(target)  # exclusive: a second writer fails here
        os.rename(staged, target)  # over our own empty directory; ENOTEMPTY if filled
    except (FileExistsError, IsADirectoryError):
        raise UsageProblem(f"{target}: {what} already exists (it appeared while phase was "
                           "working); it was not replaced") from None
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise UsageProblem(f"{target}: {what} already exists (it appeared while phase "
                               "was working); it was not replaced") from None
        raise


STAGING_PREFIX = ".phase-tmp-"


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "_", socket.gethostname())[:40] or "host"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: alive, and not ours to judge
    return True


def sweep_stale(parent: Path) -> None:
    """Remove staging directories in `parent` left by processes of this host that are gone.
    Another host's (a shared file system) and a live process's are left alone."""
    mine = f"{STAGING_PREFIX}{_host()}-"
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(mine)]
    except OSError:
        return
    for entry in entries:
        pid = entry.name[len(mine):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            shutil.rmtree(entry.path, ignore_errors=True)


def staging_dir(parent: Path, tag: str = "") -> Path:
    """A fresh, empty directory in `parent` for building something aside (after sweeping
    what dead builds left there)."""
    sweep_stale(parent)
    return Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{_host()}-{os.getpid()}-{tag}",
                                 dir=parent))
