"""The build cache: what a build derived from a results file, kept for the next build.

Validating a campaign file and deriving its summary costs a few hundred milliseconds (most of
it parsing megabytes of per-step traces); a site of 200 campaigns would spend a minute on it
at every build, though the files never change once their campaign ends. So each file's
derived part (findings, summary, header) is kept under the phase cache, keyed by:

    the file's sha256 and its path (reports and pages name it)
    the rule settings
    a fingerprint of phase's own code (any change to phase starts a fresh cache)

and the runs themselves in a second entry, loaded only when a page needs them. A file whose
bytes differ, or a build with other settings or another phase, misses and is read in full,
exactly as without the cache. Entries are written atomically and read best-effort: an
unreadable entry is a miss, and a cache that cannot be written costs only speed.

The entries are pickles, read only from the user's own cache directory (PHASE_CACHE or
~/.cache/phase), which phase created; the directory is removed with `rm -rf`, never by phase
except for its older fingerprints (`_prune`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, replace
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast

from phase.publish.archive.store import code_digest, tree_digest
from phase.publish.data.datasets import Dataset, load_dataset
from phase.results import ResultsError, ResultsFile, SummaryFile
from phase.results.jsonread import read_regular_text
from phase.validate import Report, RuleSettings

SUBDIR = "build-cache"
KEEP_FINGERPRINTS = 3
# Entries of files seen once (a test's temporary directory) would otherwise pile up: beyond
# this, the least recently used go first.
MAX_BYTES = 1 << 30
T = TypeVar("T")


@cache
def code_fingerprint() -> str:
    """phase's own source (archive.code_digest, as the manifests record it) and the versions
    of what reads the files."""
    import pydantic

    text = f"{code_digest()}|{sys.version}|{pydantic.VERSION}"
    return hashlib.sha256(text.encode()).hexdigest()


def cache_root() -> Path:
    from phase.models import cache_dir

    return cache_dir() / SUBDIR


def _entry_key(path: Path, sha256: str, settings: RuleSettings) -> str:
    text = json.dumps([sha256, str(path), asdict(settings)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _read(entry: Path) -> Any | None:
    try:
        with entry.open("rb") as fh:
            return pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError,
            IndexError, TypeError, ValueError):
        return None


def _write(entry: Path, value: Any) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_name(f"{entry.name}.{os.getpid()}.tmp")
        with tmp.open("wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(entry)
    except (OSError, pickle.PicklingError):
        return


def tree_fingerprint(directory: Path) -> str:
    """One sha256 over every file under a directory (archive.tree_digest): the templates."""
    return hashlib.sha256(json.dumps(tree_digest(directory, "*"), sort_keys=True).encode()
                          ).hexdigest()


def _trim(directory: Path, max_bytes: int) -> None:
    """Least recently used entries out until the directory holds at most max_bytes."""
    try:
        entries = [(e.stat(), e) for e in directory.iterdir() if not e.name.endswith(".tmp")]
    except OSError:
        return
    total = sum(st.st_size for st, _ in entries)
    for st, entry in sorted(entries, key=lambda se: se[0].st_mtime):
        if total <= max_bytes:
            break
        try:
            entry.unlink()
        except OSError:
            continue
        total -= st.st_size


def _prune(root: Path, keep: Path) -> None:
    """Drop the oldest fingerprints' directories beyond KEEP_FINGERPRINTS (phase made them)."""
    try:
        dirs = sorted((d for d in root.iterdir() if d.is_dir() and d != keep),
                      key=lambda d: d.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in dirs[KEEP_FINGERPRINTS - 1:]:
        if len(old.name) == 16 and all(c in "0123456789abcdef" for c in old.name):
            shutil.rmtree(old, ignore_errors=True)


class DatasetCache:
    """load(path) -> (Report, Dataset | None), from the cache where the file is unchanged."""

    def __init__(self, root: Path | None = None, max_bytes: int = MAX_BYTES) -> None:
        self.root = root if root is not None else cache_root()
        self.max_bytes = max_bytes
        self.dir = self.root / code_fingerprint()[:16]
        self.hits = 0
        self.misses = 0
        self._pruned = False

    def load(self, path: Path, settings: RuleSettings) -> tuple[Report, Dataset | None]:
        try:
            data = read_regular_text(path).encode("utf-8")
        except ResultsError:
            return load_dataset(path, settings)  # the blocking report, naming the problem
        sha256 = hashlib.sha256(data).hexdigest()
        key = _entry_key(path, sha256, settings)
        head = self.dir / f"{key}.head"
        full = self.dir / f"{key}.runs"
        cached = _read(head)
        if isinstance(cached, dict) and cached.get("sha256") == sha256:
            self.hits += 1
            _touch(head, full)
            return cached["report"], self._dataset(path, sha256, len(data), cached, full,
                                                   settings)
        self.misses += 1
        report, ds = load_dataset(path, settings)
        if ds is not None and ds.sha256 == sha256:
            self._store(head, full, ds)
        return report, ds

    def memo(self, kind: str, key: Any, make: Callable[[], T]) -> T:
        """make(), or what it returned for the same kind and key before (a page rendered from
        the same inputs). The key must hold every input the value depends on besides phase's
        own code; it is JSON-encoded (other values by repr)."""
        text = json.dumps([kind, key], sort_keys=True, default=repr)
        entry = self.dir / f"{hashlib.sha256(text.encode()).hexdigest()}.{kind}"
        cached = _read(entry)
        if isinstance(cached, tuple) and len(cached) == 2 and cached[0] == text:
            self.hits += 1
            _touch(entry)
            return cast(T, cached[1])
        self.misses += 1
        value = make()
        _write(entry, (text, value))
        return value

    def _dataset(self, path: Path, sha256: str, size: int, cached: dict[str, Any],
                 full: Path, settings: RuleSettings) -> Dataset:
        def load_results() -> ResultsFile | SummaryFile:
            results = _read(full)
            if isinstance(results, ResultsFile | SummaryFile):
                return results
            # No usable runs entry: read the file again, and insist it is the same file.
            _, again = load_dataset(path, settings)
            if again is None or again.sha256 != sha256:
                raise ResultsError(f"{path}: changed while the site was being built; "
                                   "build again")
            return again.results

        return Dataset(path=path, name=path.name, sha256=sha256, size_bytes=size,
                       header=cached["header"], n_runs=cached["n_runs"],
                       report=cached["report"], summary=cached["summary"],
                       schema_version=cached["schema_version"], load_results=load_results)

    def _store(self, head: Path, full: Path, ds: Dataset) -> None:
        _write(full, ds.results)
        # The report refers to the file it judged; kept with the header, not the runs (the
        # build reads its findings, never its runs).
        report = replace(ds.report, results=ds.header)
        _write(head, {"sha256": ds.sha256, "header": ds.header, "n_runs": ds.n_runs,
                      "report": report, "summary": ds.summary,
                      "schema_version": ds.schema_version})
        if not self._pruned:
            self._pruned = True
            _prune(self.root, self.dir)
            _trim(self.dir, self.max_bytes)


def _touch(*entries: Path) -> None:
    """Mark entries as used now (trimming goes by last use)."""
    for entry in entries:
        with contextlib.suppress(OSError):
            os.utime(entry)
