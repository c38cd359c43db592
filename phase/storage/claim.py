"""One writer per file: a lock held while a command writes it (a campaign: from before its
models load to its end).

A campaign claims its results file first: an exclusive `flock` on a sidecar `.<name>.lock`
next to it, which records the holder (pid, host, command, since when). The lock is held until
the campaign ends; the kernel drops it when the process dies (kill -9 included), so a stale
sidecar never blocks anyone. A second writer of the same file (the same `-o`, or a `--resume`
of a file another process is writing) is refused with exit 2, naming the file and the holder.

Why fcntl rather than the filelock library: the sidecar must say who holds it, and filelock
truncates the lock file when it opens it (erasing the holder's record); and the sidecar must
be removed on release without racing a process that opened it meanwhile. Here a lock taken on
a sidecar that was unlinked before we locked it is retried on the new one, and the holder
unlinks the sidecar while it still holds the lock.

Default names are chosen atomically: `claim_numbered` takes `name.json`, `name-2.json`... the
first whose lock it gets and whose file does not exist, so two campaigns started the same day
without `-o` write two files.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import stat
import sys
import time
from dataclasses import dataclass
from itertools import count
from pathlib import Path

from phase.base.errors import PhaseError, UsageProblem
from phase.storage.errors import StorageError
from phase.storage.jsonread import file_kind


class FileBusy(StorageError):
    """Another process is writing this results file (exit 2: nothing was touched)."""

    exit_code = 2


@dataclass(frozen=True)
class Holder:
    pid: int | None
    host: str | None
    command: str | None
    since_unix_s: float | None

    def describe(self) -> str:
        if self.pid is None:
            return "another process (it has not recorded itself yet)"
        since = "" if self.since_unix_s is None else time.strftime(
            " since %Y-%m-%d %H:%M:%S", time.localtime(self.since_unix_s))
        command = f" running `{self.command}`" if self.command else ""
        return f"pid {self.pid} on {self.host or 'an unknown host'}{command}{since}"


# A write refused for want of room, not because of where it goes.
_NO_SPACE = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


def lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


def _read_holder(fd: int) -> Holder:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = json.loads(os.read(fd, 65536).decode("utf-8"))
        return Holder(int(data["pid"]), str(data["host"]), str(data["command"]),
                      float(data["since_unix_s"]))
    except (OSError, ValueError, KeyError, TypeError):
        return Holder(None, None, None, None)


def _write_holder(fd: int) -> None:
    record = {"pid": os.getpid(), "host": socket.gethostname(),
              "command": " ".join(sys.argv), "since_unix_s": time.time()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)


def _cannot_write(path: Path, exc: OSError, option: str = "-o") -> PhaseError:
    if exc.errno in _NO_SPACE:
        # Not a bad path: the same place works once there is room (exit 1, as for any write).
        return StorageError(f"{path}: cannot write its lock {lock_path(path).name} "
                            f"({exc.strerror or exc}); free some space and run again",
                            exit_code=1)
    return UsageProblem(
        f"{path}: cannot write in {path.parent} ({exc.strerror or exc}); choose a directory "
        f"you can write to ({option})"
    )


def _real(path: Path) -> Path:
    """The file itself, whatever the spelling (relative, through symlinks): two campaigns
    naming one file differently still meet at one lock, and writes go to the file, never
    replacing a symlink to it."""
    return Path(os.path.realpath(path))


class Claim:
    """The lock on one results file; `release` (or leaving the `with` block) gives it up.
    `path` is the file as the user named it (for messages), `target` the file itself."""

    def __init__(self, path: Path, target: Path, fd: int) -> None:
        self.path = path
        self.target = target
        self._fd: int | None = fd

    @classmethod
    def take(cls, path: Path | str, option: str = "-o") -> Claim:
        """Lock `path`'s sidecar; FileBusy when another process holds it (`option` is the
        one that names the file, for the message)."""
        path = Path(path)
        target = _real(path)
        sidecar = lock_path(target)
        while True:
            try:
                fd = os.open(sidecar, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise _cannot_write(path, exc, option) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise FileBusy(
                    f"{path}: another phase process is writing this file: "
                    f"{holder.describe()}; wait for it to finish, or choose another {option}"
                ) from None
            except OSError as exc:
                os.close(fd)
                raise _cannot_write(path, exc, option) from None
            # The previous holder unlinks the sidecar before unlocking it: if we locked an
            # unlinked sidecar, a newer one may be held by someone else; try again.
            try:
                same = os.stat(sidecar).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        try:
            _write_holder(fd)
        except OSError as exc:
            # A full disk (or a file-size limit) refuses even the holder's record: give the
            # sidecar up as `release` does, removed while still locked, so none is left.
            cls(path, target, fd).release()
            raise _cannot_write(path, exc, option) from None
        return cls(path, target, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Remove the sidecar (while still holding it), then unlock. Later calls do nothing."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            lock_path(self.target).unlink(missing_ok=True)
        except OSError:
            pass  # a sidecar left behind is harmless: a lock is only ever held by a process
        finally:
            os.close(fd)

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def claim_new(path: Path | str, option: str = "-o", advice: str | None = None) -> Claim:
    """The lock on a file phase is to create, which must not exist yet (`option` names it on
    the command line; `advice` replaces the default what-to-do)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise UsageProblem(f"{path}: directory {path.parent} does not exist; create it first")
    claim = Claim.take(path, option)
    if os.path.lexists(path):
        claim.release()
        raise UsageProblem(f"{path}: already exists; phase never replaces a file. "
                           + (advice or f"Choose another {option}"))
    return claim


def claim_existing(path: Path | str) -> Claim:
    """The lock on an interrupted results file to continue: a regular file we may write."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UsageProblem(f"{path}: nothing to resume (file not found)") from None
    except OSError as exc:
        raise UsageProblem(f"{path}: cannot resume: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UsageProblem(f"{path}: cannot resume: it is {file_kind(st.st_mode)}, not a "
                           "results file")
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        # Nobody may write it: someone marked it as finished with. Respect that.
        raise UsageProblem(
            f"{path}: cannot resume: the file is read-only (mode {stat.S_IMODE(st.st_mode):04o}), "
            f"which says it is not to be written; `chmod u+w {path}` first if it should be"
        )
    return Claim.take(path)


def claim_numbered(base: Path | str) -> Claim:
    """The first of base, base-2, base-3... that is free (not locked, not existing)."""
    base = Path(base)
    if not base.parent.is_dir():
        raise UsageProblem(f"{base}: directory {base.parent} does not exist; create it first")
    for n in count(1):
        candidate = base if n == 1 else base.with_name(f"{base.stem}-{n}{base.suffix}")
        try:
            claim = Claim.take(candidate)
        except FileBusy:
            continue
        if not os.path.lexists(candidate):
            return claim
        claim.release()
    raise AssertionError("unreachable")  # pragma: no cover

