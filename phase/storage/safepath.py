"""Paths that come from data stay inside their directory.

A relative path read from a file (an archived manifest's file list, a note's results entry, a
chart's asset name, a cache entry's key) is data, and data can say `../../etc`: joined to a
directory unchecked, it reads or writes outside it. Every such join goes through `confined`:
the relative path must match what its kind of file allows (no absolute path, no `..` or `.`
part, no empty part, no backslash, no control character), and the joined path must still be
inside the directory once symbolic links are resolved (a link inside pointing outside is
refused too).
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from phase.base.errors import PhaseError

# One part of a relative path: printable, no separator, not `.` or `..` (checked apart).
_PART = re.compile(r"^[^/\\\x00-\x1f\x7f-\x9f]+$")
# The same rule as a JSON-Schema pattern (pydantic's engine has no look-ahead): parts that
# start with a character other than `.`, or with one dot followed by something else.
REL_PATH_PATTERN = (r"^(?:[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*"
                    r"|\.[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*)"
                    r"(?:/(?:[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*"
                    r"|\.[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*))*$")
FILE_NAME_PATTERN = r"^[A-Za-z0-9_][^/\\\x00-\x1f\x7f-\x9f]*$"


class PathEscapes(PhaseError):
    """A path from data points outside its directory (exit 2: the data is bad input)."""

    exit_code = 2


def relative_parts(rel: str | PurePosixPath, what: str) -> tuple[str, ...]:
    """The parts of a relative POSIX path from data, or PathEscapes saying why not."""
    text = str(rel)
    parts = tuple(text.split("/"))
    if (not text or text.startswith("/") or any(p in ("", ".", "..") for p in parts)
            or not all(_PART.match(p) for p in parts)):
        shown = text.encode("unicode_escape").decode()[:200]
        raise PathEscapes(f"{what}: {shown!r} is not a plain relative path inside its "
                          "directory (no absolute path, `..`, `.`, empty part, backslash or "
                          "control character)")
    return parts


def confined(root: Path, rel: str | PurePosixPath, what: str) -> Path:
    """`root / rel`, refused (PathEscapes) unless it stays inside `root`, symbolic links
    resolved."""
    path = root.joinpath(*relative_parts(rel, what))
    base = root.resolve()
    if not path.resolve().is_relative_to(base):
        raise PathEscapes(f"{what}: {rel} leads outside {root} (through a symbolic link)")
    return path
