"""Entries of a derived-data cache, trusted only as far as they are checked.

An entry is what a build derived from a results file (findings, summary rows, a rendered
page), kept for the next build. It is JSON, never a pickle (loading a pickle runs whatever
code it names), and it is bound to what it was derived from: its first line records the
sha256 of the results file, the fingerprint of phase's code and the entry's key, and a
sha256 over those and the payload. A reader passes what the entry must be bound to now (the
file's current sha256, the running code's fingerprint); an entry bound to anything else, or
whose payload does not match its digest (an edited number, a truncated write), is removed and
reads as a miss. The digest is an integrity check against stale, corrupt or casually edited
entries, not a signature: whoever can write the cache can also recompute it.

A write goes to `<entry>.<pid>.tmp` and is renamed into place; the temporary file is removed
on every failure path, and `sweep_temporaries` removes those a killed writer left behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from phase.storage.errors import StorageError
from phase.storage.jsonread import read_regular_bytes
from phase.storage.outputs import pid_alive

FORMAT = "phase-cache-entry-1"
# Entries are small beside the results files (a page, a header); larger is not one of ours.
MAX_ENTRY_BYTES = 256 << 20


def _digest(bound: Mapping[str, str], payload: bytes) -> str:
    h = hashlib.sha256(json.dumps(dict(bound), sort_keys=True).encode())
    h.update(b"\n")
    h.update(payload)
    return h.hexdigest()


def write_entry(entry: Path, payload: Any, bound: Mapping[str, str]) -> bool:
    """Store `payload` (JSON values, no NaN) bound to `bound`; False if it could not be
    (a full disk, a value JSON cannot hold): a cache that cannot be written costs only
    speed. No temporary file is left on any path."""
    tmp = entry.with_name(f"{entry.name}.{os.getpid()}.tmp")
    try:
        # Keys keep their order: a run's factors are an ordered mapping (condition keys
        # compare them as tuples), and a sorted copy would match no run of its file.
        body = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode("utf-8")
        head = json.dumps({"format": FORMAT, "bound": dict(bound),
                           "digest": _digest(bound, body)}, sort_keys=True).encode()
        entry.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("wb") as fh:
            fh.write(head + b"\n" + body)
        os.replace(tmp, entry)
        return True
    except (OSError, ValueError, TypeError):
        return False
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def read_entry(entry: Path, bound: Mapping[str, str]) -> Any | None:
    """The payload of `entry` if it is bound to exactly `bound` and matches its digest;
    None otherwise (missing, unreadable, stale or altered: an altered one is removed)."""
    try:
        data = read_regular_bytes(entry, MAX_ENTRY_BYTES)
    except StorageError:
        return None
    head, sep, body = data.partition(b"\n")
    try:
        meta = json.loads(head)
        ok = (sep and isinstance(meta, dict) and meta.get("format") == FORMAT
              and meta.get("bound") == dict(bound)
              and meta.get("digest") == _digest(bound, body))
        payload = json.loads(body) if ok else None
    except ValueError:
        ok, payload = False, None
    if not ok:
        discard(entry)
        return None
    return payload


def discard(entry: Path) -> None:
    with contextlib.suppress(OSError):
        entry.unlink()


def sweep_temporaries(directory: Path) -> None:
    """Remove `*.tmp` files whose writer is gone (a killed build, a full disk)."""
    try:
        names = [e.name for e in os.scandir(directory) if e.name.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        pid = name[:-4].rsplit(".", 1)[-1]
        if pid.isdigit() and (int(pid) == os.getpid() or pid_alive(int(pid))):
            continue  # a write in progress
        discard(directory / name)
