"""Writing files: exclusive creation and atomic replacement.

Every version of a file is complete: it is written to a temporary file in the same
directory, fsynced, then linked (the first version) or renamed (later ones) into place, so a
reader or a crash sees either the previous complete version or the new one. A failed write
(disk full, a file-size limit, a read-only directory) is one StorageError line naming the
file; the previous version stays as it was.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from phase.base.errors import UsageProblem
from phase.storage.errors import StorageError

# A path that cannot be written at all is bad input (exit 2); running out of space or an I/O
# error while writing is a failure (exit 1).
_BAD_PATH = {errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.EROFS, errno.EISDIR,
             errno.ENAMETOOLONG, errno.ELOOP, errno.EEXIST}
# link(2) is not available on every filesystem (FAT, some FUSE and network mounts).
_NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS}


class WriteFailed(StorageError):
    """A file could not be written; nothing already there was changed."""


def write_failed(path: Path | str, exc: OSError) -> WriteFailed:
    code = 2 if exc.errno in _BAD_PATH else 1
    parent = Path(path).parent
    if exc.errno in (errno.ENOENT, errno.ENOTDIR) and not parent.is_dir():
        return WriteFailed(f"{path}: cannot write: directory {parent} does not exist; create it "
                           "first", exit_code=code)
    return WriteFailed(f"{path}: cannot write: {exc.strerror or exc}", exit_code=code)


def _umask_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _temp_copy(path: Path, text: str, mode: int) -> Path:
    """A complete, fsynced copy of `text` next to `path` (the caller moves it into place)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)  # mkstemp makes 0600; results are meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _fsync_dir(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def atomic_write_text(path: Path | str, text: str) -> None:
    """Replace (or create) `path` with `text` via a temporary file and rename. An existing
    file keeps its permission bits; a new one gets the umask's."""
    p = Path(path)
    try:
        try:
            mode = stat.S_IMODE(os.stat(p).st_mode)
        except FileNotFoundError:
            mode = _umask_mode()
        tmp = _temp_copy(p, text, mode)
        try:
            os.replace(tmp, p)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(p.parent)
    except OSError as exc:
        raise write_failed(p, exc) from None


def create_exclusive(path: Path | str, text: str) -> None:
    """Create `path` holding `text`, failing if the name exists (O_EXCL semantics). The
    complete first version is hard-linked into place, so no empty or partial file is ever
    visible; where the filesystem has no hard links, O_CREAT|O_EXCL and a direct write.
    Every file phase creates for a user ends here (phase.storage.outputs)."""
    p = Path(path)
    try:
        tmp = _temp_copy(p, text, _umask_mode())
        try:
            os.link(tmp, p)
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
            _create_without_link(p, text)
        finally:
            tmp.unlink(missing_ok=True)
        _fsync_dir(p.parent)
    except FileExistsError:
        raise UsageProblem(f"{p}: already exists (it appeared while phase was working); phase "
                           "never replaces a file: move it away and run again, or choose "
                           "another name") from None
    except OSError as exc:
        raise write_failed(p, exc) from None


def _create_without_link(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, _umask_mode())
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
