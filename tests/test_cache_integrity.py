"""Issue 31, class 8: the build cache is not trusted byte for byte. Every entry, of every kind
(a file's header, findings and summary; a rendered data page), is JSON bound to the results
file's sha256 and phase's code fingerprint with a digest over its content
(phase.storage.cache_entry): an altered, stale, foreign or planted entry is discarded and the
build serves what the file itself gives; nothing in the cache can run code when read; a write
that fails (a full disk) leaves no temporary file, and trimming removes those a killed writer
left."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_publish_inputs import CPU_FILE, GPU_FILE, make_inputs, site_paths

from phase.publish.charts import spec
from phase.publish.data.cache import DatasetCache, _trim
from phase.publish.data.datasets import load_dataset
from phase.publish.site.build import build_docs
from phase.storage.cache_entry import read_entry, write_entry
from phase.validate import RuleSettings


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _doubled(node: Any) -> Any:
    """Every number changed, every page's digits changed: what an edited entry serves."""
    if isinstance(node, dict):
        return {k: _doubled(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_doubled(v) for v in node]
    if isinstance(node, float):
        return node * 2 + 1
    if isinstance(node, int) and not isinstance(node, bool):
        return node + 1
    if isinstance(node, str) and len(node) > 200:
        return node.replace("1", "9")
    return node


def _tamper(cache: Path) -> int:
    """Rewrite every entry's content, keeping its header line (bound and digest) as it was."""
    count = 0
    for entry in cache.rglob("*"):
        if entry.is_file() and not entry.name.endswith(".tmp"):
            meta, body = entry.read_bytes().split(b"\n", 1)
            entry.write_bytes(meta + b"\n" + json.dumps(_doubled(json.loads(body))).encode())
            count += 1
    return count


@pytest.mark.slow
def test_a_warm_cache_and_altered_entries_of_every_kind_build_what_no_cache_builds(
        tmp_path: Path, monkeypatch) -> None:
    """The docs of the test site built three times: without a cache, from the cache that
    build left (tests/test_build_cache.py: the cache exists for speed only, so nothing else
    may change), and from that cache with every entry's content altered. The fixture notes
    only: they leave an entry of every kind, as the repository's do (whose 16 results files
    and 51 charts made this 18 s of CPU rather than 5)."""
    monkeypatch.setenv("PHASE_CACHE", str(tmp_path / "cache"))
    spec._png.cache_clear()  # the worker's memory of charts drawn by earlier tests' builds
    inputs = make_inputs(tmp_path / "in", repo_notes=False)
    cold = site_paths(tmp_path / "cold", inputs)
    build_docs(cold)
    kinds = {p.suffix for p in (tmp_path / "cache").rglob("*") if p.is_file()}
    assert {".head", ".raw-page", ".chart-png", ".vega-js"} <= kinds
    cold_tree = _tree(cold.docs_dir)
    for name in ("warm", "altered"):
        if name == "altered":
            assert _tamper(tmp_path / "cache") > 4
        built = site_paths(tmp_path / name, inputs)
        build_docs(built)
        tree = _tree(built.docs_dir)
        assert sorted(tree) == sorted(cold_tree), name
        assert [n for n in cold_tree if cold_tree[n] != tree[n]] == [], name


def test_an_entry_of_another_file_or_another_phase_is_a_miss(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", repo_notes=False)
    settings = RuleSettings()
    cache = DatasetCache(tmp_path / "cache")
    cache.load(inputs.results_dir / CPU_FILE, settings)
    cache.load(inputs.results_dir / GPU_FILE, settings)
    heads = sorted(cache.dir.glob("*.head"))
    assert len(heads) == 2
    # The GPU file's entry copied over the CPU file's name, digest and all.
    heads[0].write_bytes(heads[1].read_bytes())
    again = DatasetCache(tmp_path / "cache")
    for name in (CPU_FILE, GPU_FILE):
        report, ds = again.load(inputs.results_dir / name, settings)
        expected_report, expected = load_dataset(inputs.results_dir / name, settings)
        assert ds is not None and expected is not None
        assert ds.summary == expected.summary and report.findings == expected_report.findings
    assert again.misses >= 1
    # An entry bound to another code fingerprint reads as nothing.
    payload = {"x": 1}
    write_entry(tmp_path / "e", payload, {"key": "k", "results_sha256": "s", "code": "old"})
    assert read_entry(tmp_path / "e", {"key": "k", "results_sha256": "s", "code": "new"}) is None
    assert not (tmp_path / "e").exists()  # removed, not kept to be tried again


class _Marker:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (self.path,))


def test_a_planted_pickle_is_never_loaded(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", repo_notes=False)
    cache = DatasetCache(tmp_path / "cache")
    cache.load(inputs.results_dir / CPU_FILE, RuleSettings())
    marker = tmp_path / "code-ran"
    for head in cache.dir.glob("*.head"):
        head.write_bytes(pickle.dumps({"report": _Marker(str(marker))}))
    again = DatasetCache(tmp_path / "cache")
    _, ds = again.load(inputs.results_dir / CPU_FILE, RuleSettings())
    assert ds is not None and again.misses == 1
    assert not marker.exists()


FULL_DISK = """
import resource, signal, sys
from pathlib import Path
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))
from phase.publish.data.cache import DatasetCache
from phase.validate import RuleSettings
cache = DatasetCache(Path(sys.argv[1]))
report, ds = cache.load(Path(sys.argv[2]), RuleSettings())
assert ds is not None and cache.misses == 1
print("ok")
"""


def test_a_full_disk_leaves_no_temporary_entry(tmp_path: Path) -> None:
    inputs = make_inputs(tmp_path / "in", repo_notes=False)
    root = tmp_path / "cache"
    proc = subprocess.run([sys.executable, "-c", FULL_DISK, str(root),
                           str(inputs.results_dir / CPU_FILE)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr
    left = [p.name for p in root.rglob("*") if p.is_file()]
    assert not [n for n in left if n.endswith(".tmp")], left


def test_trimming_removes_what_a_dead_writer_left(tmp_path: Path) -> None:
    dead = tmp_path / "abc.head.999999999.tmp"
    unnamed = tmp_path / "partial.tmp"
    mine = tmp_path / f"abc.head.{os.getpid()}.tmp"
    for p in (dead, unnamed, mine):
        p.write_bytes(b"partial")
    _trim(tmp_path, 1 << 30)
    assert not dead.exists() and not unnamed.exists()
    assert mine.exists()  # a write in progress is left to its writer
