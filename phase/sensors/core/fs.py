"""How the sysfs backends (RAPL, INA3221) see files: the real filesystem, or a replay of one.

The backends never touch `os` or `Path.read_text` directly; they ask an `Fs`. `REAL_FS` reads
the machine's files (counters through pre-opened descriptors and pread). `phase sensors
--snapshot` wraps it in a recorder (phase.sensors.replay.snapshot) and `--replay` serves the
recorded answers (phase.sensors.replay.replay), so the same discovery code runs against a
user's machine without the machine.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Protocol

from phase.sensors.core.base import ReadError


class ValueFile(Protocol):
    """A sysfs attribute holding one integer, opened once and re-read cheaply."""

    path: Path

    def read_int(self) -> int: ...
    def close(self) -> None: ...


class Fs(Protocol):
    def is_dir(self, path: Path) -> bool: ...
    def exists(self, path: Path) -> bool: ...
    def listdir(self, path: Path) -> list[str]:
        """Entry names, sorted; [] when `path` is not a readable directory."""
        ...
    def read_text(self, path: Path) -> str | None:
        """A small attribute's text, stripped; None when missing or unreadable."""
        ...
    def open_value(self, path: Path) -> ValueFile:
        """Open an integer attribute; raises OSError (PermissionError...) like os.open."""
        ...


class SysfsFile:
    """A pre-opened sysfs attribute, re-read with pread(offset 0): no open/close per sample."""

    __slots__ = ("fd", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def read_bytes(self) -> bytes:
        """The attribute's text as the kernel gives it (a snapshot records it so)."""
        if self.fd is None:
            raise ReadError(f"{self.path}: file already closed")
        try:
            return os.pread(self.fd, 64, 0)
        except OSError as exc:
            raise ReadError(f"{self.path}: {exc.strerror or exc}", errno=exc.errno) from None

    def read_int(self) -> int:
        return parse_int(self.path, self.read_bytes())

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def parse_int(path: Path, data: bytes) -> int:
    """An integer attribute's value (`b"84213377190\\n"`); a replay parses its recorded text
    with this too, so a file whose text a live read refuses is refused in a replay."""
    try:
        return int(data)
    except ValueError:
        raise ReadError(f"{path}: not an integer: {data[:32]!r}") from None


class RealFs:
    def is_dir(self, path: Path) -> bool:
        return path.is_dir()

    def exists(self, path: Path) -> bool:
        return path.exists()

    def listdir(self, path: Path) -> list[str]:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []

    def read_text(self, path: Path) -> str | None:
        try:
            return path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None

    def open_value(self, path: Path) -> ValueFile:
        return SysfsFile(path)


REAL_FS: Fs = RealFs()


def read_number(fs: Fs, path: Path) -> int | None:
    text = fs.read_text(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def open_counter(fs: Fs, path: Path, what: str, denied: list[Path],
                 problems: list[str]) -> ValueFile | None:
    """open_checked for a discovery: a file this user may not read goes to `denied` (one
    line with the fix, later), any other failure to `problems` naming `what`; None then."""
    try:
        return open_checked(fs, path)
    except PermissionError:
        denied.append(path)
    except OSError as exc:
        problems.append(f"{path}: cannot open: {exc.strerror or exc}")
    except ReadError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            denied.append(path)
        else:
            problems.append(f"{exc} ({what})")
    return None


def open_checked(fs: Fs, path: Path) -> ValueFile:
    """Open and read once: an open can succeed where a read fails (EISDIR, EACCES, EIO).
    Raises OSError from the open or ReadError from the read; nothing stays open then."""
    handle = fs.open_value(path)
    try:
        handle.read_int()
    except ReadError:
        handle.close()
        raise
    return handle
