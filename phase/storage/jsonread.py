"""Reading a JSON file the way results are read: regular files only, UTF-8, no NaN, no
duplicate keys, and every failure one StorageError line naming the file and the JSON path.

A duplicate key is an error, not last-wins: two readers of the same file could otherwise see
different values (`"status": "complete", "status": "running"`). A FIFO or a device named
`*.json` is refused without being opened for a blocking read, so it cannot hang a command.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from phase.storage.errors import StorageError

_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFDIR: "a directory",
          stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket"}


def file_kind(mode: int) -> str:
    """What a non-regular file is, for a message ("a FIFO (named pipe)", "a directory")."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


# No results file, snapshot or manifest comes near this; a larger "file" (a sparse file, a
# special file posing as a regular one) would only exhaust memory.
MAX_BYTES = 1 << 30


def read_regular_bytes(path: Path | str, limit: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; anything else (missing, a FIFO,
    a device such as /dev/zero, a directory, too large) is one StorageError line."""
    p = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise StorageError(f"{p}: no such file") from None
    except OSError as exc:
        raise StorageError(f"{p}: cannot read: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise StorageError(f"{p}: is {file_kind(mode)}, not a regular file; phase never "
                               "waits on a pipe or reads a device")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise StorageError(f"{p}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise StorageError(f"{p}: larger than {limit} bytes; not a file phase wrote")
    return data


def read_same_bytes(path: Path | str, sha256: str) -> bytes:
    """A file read again (to copy or to parse in full), insisting it is still the file whose
    sha256 was taken before: one that changed or was swapped for a FIFO is an error."""
    data = read_regular_bytes(path)
    if hashlib.sha256(data).hexdigest() != sha256:
        raise StorageError(f"{path}: changed while the site was being built; build again")
    return data


def decode_utf8(data: bytes, path: Path | str) -> str:
    """`data` as UTF-8 text, or one StorageError line saying where it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise StorageError(
            f"{path}: $: not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} "
            f"(line {line}); save it as UTF-8"
        ) from None


def read_regular_text(path: Path | str) -> str:
    """The UTF-8 text of a regular file; anything else is one StorageError line."""
    return decode_utf8(read_regular_bytes(path), path)


def read_json(path: Path | str) -> Any:
    """The one strict way phase reads a JSON file it did not just make in memory: a regular
    UTF-8 file, no BOM, NaN, duplicate key or runaway nesting (see parse_json)."""
    return parse_json(read_regular_text(path), path)


class _Duplicates:
    """object_pairs_hook that builds dicts and remembers which ones had a key twice."""

    def __init__(self) -> None:
        self.found: list[tuple[dict[str, Any], str]] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                self.found.append((out, key))
            out[key] = value
        return out


def _walk(root: Any) -> Iterator[tuple[Any, str]]:
    """Every value in `root` with its JSON path, in document order (iterative: depth is
    bounded only by what json accepted)."""
    stack: list[tuple[Any, str]] = [(root, "$")]
    while stack:
        node, where = stack.pop()
        yield node, where
        if isinstance(node, dict):
            stack.extend(reversed([(v, f"{where}.{k}") for k, v in node.items()]))
        elif isinstance(node, list):
            stack.extend(reversed([(v, f"{where}[{i}]") for i, v in enumerate(node)]))


def _path_to(root: Any, target: dict[str, Any]) -> str:
    return next((where for node, where in _walk(root) if node is target), "$")


def _non_finite(text: str, path: Path | str) -> StorageError:
    """NaN or Infinity in the text: where (json's parse_constant does not say)."""
    data = json.loads(text, parse_constant=float)
    bad = [where for node, where in _walk(data)
           if isinstance(node, float) and not math.isfinite(node)]
    where = bad[0] if bad else "$"
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    return StorageError(f"{path}: {where}: not a finite number; JSON has no NaN or "
                        f"Infinity{more}")


class _NonFinite(ValueError):
    pass


def _number(text: str) -> float | int:
    """A JSON number written with a fraction or exponent. JSON has one number type, and the
    JSON Schema's "integer" is any integral number, so 16.0 is an integer there: read it as
    one, so that strict validation agrees with the schema."""
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text)  # 1e400: too large for a float, arrives as Infinity
    return int(value) if value.is_integer() else value


def _reject_constant(name: str) -> float:
    raise _NonFinite(name)


def parse_json(text: str, path: Path | str) -> Any:
    """Parse `text` strictly: NaN/Infinity, duplicate keys and runaway nesting are errors."""
    if text.startswith(codecs.BOM_UTF8.decode()):
        raise StorageError(f"{path}: $: starts with a byte-order mark; save it as plain UTF-8")
    hook = _Duplicates()
    try:
        data = json.loads(text, parse_constant=_reject_constant, parse_float=_number,
                          object_pairs_hook=hook)
    except json.JSONDecodeError as exc:
        raise StorageError(
            f"{path}: $: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            " (truncated or hand-edited?)"
        ) from None
    except RecursionError:
        raise StorageError(
            f"{path}: $: nested too deeply to be a results file (a results file is a few "
            "levels deep)"
        ) from None
    except _NonFinite:
        raise _non_finite(text, path) from None
    except ValueError as exc:
        raise StorageError(f"{path}: $: {exc}") from None
    if hook.found:
        obj, key = hook.found[0]
        more = f" (and {len(hook.found) - 1} more)" if len(hook.found) > 1 else ""
        raise StorageError(
            f"{path}: {_path_to(data, obj)}.{key}: duplicate key; readers disagree on which "
            f"value counts, so keep exactly one{more}"
        )
    return data
