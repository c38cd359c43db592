"""The build cache: what a build derived from a results file, kept for the next build.

Validating a campaign file and deriving its summary costs a few hundred milliseconds (most of
it parsing megabytes of per-step traces); a site of 200 campaigns would spend a minute on it
at every build, though the files never change once their campaign ends. So each file's
derived part (findings, summary, header) is kept under the phase cache, keyed by:

    the file's sha256 and its path (reports and pages name it)
    the rule settings
    a fingerprint of phase's own code (any change to phase starts a fresh cache)

The runs themselves are not cached: a page that needs them parses them from the bytes the
build read (the ones the entry's sha256 was checked against), as fast as reading a cached copy
would be.

`memo` keeps other derived values the same way: a rendered data page, and what vl-convert
draws (a chart's PNG, the site's Vega bundle: phase/publish/charts/spec.py), keyed by the
spec's sha256 or the package versions instead of a results file's. What vl-convert draws
does not depend on the rest of phase's code, only on the spec, the package versions and
the few lines that call vl-convert: those entries are bound to a digest of that code instead
(memo's `code`) and kept in one directory, CHARTS, across phase's code fingerprints, so that
a change anywhere else in phase (every edit during development) does not draw every chart
again.

Entries are JSON bound to the file's sha256 and phase's code fingerprint with a digest over
their content (phase.storage.cache_entry): an entry that does not match, or whose content was
altered, is removed and read as a miss, never served into a table or a published page. A
cache that cannot be written costs only speed and leaves no temporary file; the directory is
removed with `rm -rf`, never by phase except for its older fingerprints (`_prune`).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from phase.publish.archive.store import code_digest, tree_digest
from phase.publish.data.datasets import Dataset, dataset_of, load_dataset
from phase.results import ResultsError, ResultsFile, SummaryFile, parse
from phase.storage.cache_entry import read_entry, sweep_temporaries, write_entry
from phase.storage.jsonread import decode_utf8, parse_json, read_regular_bytes
from phase.validate import Finding, Report, RuleSettings

SUBDIR = "build-cache"
# Entries bound to their own code's digest rather than phase's (memo's `code`): not one of the
# fingerprints' directories, so _prune never removes it.
CHARTS = "charts"
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
    from phase.models.sources import cache_dir

    return cache_dir() / SUBDIR


def _entry_key(path: Path, sha256: str, settings: RuleSettings) -> str:
    text = json.dumps([sha256, str(path), asdict(settings)], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def tree_fingerprint(directory: Path) -> str:
    """One sha256 over every file under a directory (archive.tree_digest): the templates."""
    return hashlib.sha256(json.dumps(tree_digest(directory, "*"), sort_keys=True).encode()
                          ).hexdigest()


def _trim(directory: Path, max_bytes: int) -> None:
    """Temporary files of writers that are gone out, then least recently used entries out
    until the directory holds at most max_bytes."""
    sweep_temporaries(directory)
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


_TRIMMED: set[Path] = set()


def _trim_once(directory: Path, max_bytes: int) -> None:
    """_trim, once per process and directory: a build stores a chart at a time, each through
    a cache of its own, and listing the directory at every one would cost more than it saves."""
    if directory not in _TRIMMED:
        _TRIMMED.add(directory)
        _trim(directory, max_bytes)


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


def _encode_head(ds: Dataset) -> dict[str, Any]:
    """What a hit needs, as JSON values: the header, findings and summary (never the runs)."""
    report = ds.report
    return {"header": ds.header.model_dump(mode="json"), "n_runs": ds.n_runs,
            "summary": ds.summary.model_dump(mode="json"),
            "schema_version": ds.schema_version,
            "report": {"file": report.file, "findings": [asdict(f) for f in report.findings],
                       "chip_sensor": report.chip_sensor,
                       "chip_candidates": report.chip_candidates}}


def _decode_head(data: Any, path: Path, settings: RuleSettings
                 ) -> tuple[ResultsFile | SummaryFile, Report, SummaryFile, int, int]:
    """The entry's values, validated as strictly as the file they came from (the schema for
    header and summary); ValueError/KeyError/TypeError for anything else."""
    header = parse(data["header"], path)
    summary = parse(data["summary"], path)
    if not isinstance(summary, SummaryFile):
        raise TypeError("summary")
    r = data["report"]
    report = Report(file=str(r["file"]), settings=settings,
                    findings=[Finding(**f) for f in r["findings"]], results=header,
                    chip_sensor=r["chip_sensor"], chip_candidates=list(r["chip_candidates"]))
    n_runs, version = data["n_runs"], data["schema_version"]
    if not (isinstance(n_runs, int) and isinstance(version, int)):
        raise TypeError("counts")
    return header, report, summary, n_runs, version


def _parse_whole(path: Path, data: bytes) -> ResultsFile | SummaryFile:
    """The whole file, runs and all, from the bytes the cached header was checked against."""
    return parse(parse_json(decode_utf8(data, path), path), path)


class DatasetCache:
    """load(path) -> (Report, Dataset | None), from the cache where the file is unchanged."""

    def __init__(self, root: Path | None = None, max_bytes: int = MAX_BYTES) -> None:
        self.root = root if root is not None else cache_root()
        self.max_bytes = max_bytes
        self.dir = self.root / code_fingerprint()[:16]
        self.hits = 0
        self.misses = 0
        self._pruned = False

    def _bound(self, key: str, sha256: str, code: str | None = None) -> dict[str, str]:
        return {"key": key, "results_sha256": sha256, "code": code or code_fingerprint()}

    def load(self, path: Path, settings: RuleSettings) -> tuple[Report, Dataset | None]:
        try:
            data = read_regular_bytes(path)
        except ResultsError:
            return load_dataset(path, settings)  # the blocking report, naming the problem
        sha256 = hashlib.sha256(data).hexdigest()
        key = _entry_key(path, sha256, settings)
        head = self.dir / f"{key}.head"
        cached = read_entry(head, self._bound(key, sha256))
        if cached is not None:
            try:
                header, report, summary, n_runs, version = _decode_head(cached, path, settings)
            except (ResultsError, ValidationError, ValueError, KeyError, TypeError):
                head.unlink(missing_ok=True)  # bound and intact, but not what phase writes
            else:
                self.hits += 1
                _touch(head)
                return report, Dataset(
                    path=path, name=path.name, sha256=sha256, data=data,
                    header=header, n_runs=n_runs, report=report, summary=summary,
                    schema_version=version, load_results=lambda: _parse_whole(path, data))
        self.misses += 1
        report, ds = dataset_of(path, data, settings)
        if ds is not None:
            self._store(head, self._bound(key, sha256), ds)
        return report, ds

    def memo(self, kind: str, key: Any, make: Callable[[], T], *, sha256: str,
             encode: Callable[[T], Any], decode: Callable[[Any], T],
             code: str | None = None) -> T:
        """make(), or what it returned for the same kind and key before (a page rendered from
        the same inputs), for the results file with `sha256`. The key must hold every input
        the value depends on besides phase's own code; it is JSON-encoded (other values by
        repr). `encode`/`decode` turn the value into JSON values and back. `code`, where
        given, is a digest of the only code of phase's that the value depends on: the entry
        is bound to it instead of phase's whole code, in the CHARTS directory."""
        text = json.dumps([kind, key], sort_keys=True, default=repr)
        name = hashlib.sha256(text.encode()).hexdigest()
        directory = self.dir if code is None else self.root / CHARTS
        entry = directory / f"{name}.{kind}"
        bound = self._bound(name, sha256, code)
        cached = read_entry(entry, bound)
        if cached is not None:
            try:
                value = decode(cached)
            except (ValueError, KeyError, TypeError, IndexError):
                entry.unlink(missing_ok=True)
            else:
                self.hits += 1
                _touch(entry)
                return value
        self.misses += 1
        value = make()
        write_entry(entry, encode(value), bound)
        if code is not None:
            _trim_once(directory, self.max_bytes)
        return value

    def _store(self, head: Path, bound: dict[str, str], ds: Dataset) -> None:
        write_entry(head, _encode_head(ds), bound)
        if not self._pruned:
            self._pruned = True
            _prune(self.root, self.dir)
            _trim(self.dir, self.max_bytes)


def _touch(*entries: Path) -> None:
    """Mark entries as used now (trimming goes by last use)."""
    for entry in entries:
        with contextlib.suppress(OSError):
            os.utime(entry)


def encode_bytes(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def decode_bytes(text: Any) -> bytes:
    if not isinstance(text, str):
        raise TypeError("bytes")
    return base64.b64decode(text.encode("ascii"), validate=True)
