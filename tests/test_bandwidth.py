"""The STREAM-style bandwidth kernels (phase.bandwidth): byte accounting, the cache size read
from a fixture sysfs tree, the kernels' arithmetic, and a record that says how it was made.
No assertion here depends on how fast this machine is."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from phase.bandwidth import stream as bandwidth
from phase.bandwidth import stream_kernel
from phase.cli import main

MIB = 1 << 20


def cache_tree(root: Path, entries: list[tuple[int, str, str]]) -> Path:
    """cpu0's cache directory as the kernel lays it out: index*/{level,type,size}."""
    for i, (level, kind, size) in enumerate(entries):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    return root


def test_bytes_are_counted_as_stream_counts_them() -> None:
    assert bandwidth.stream_bytes("copy", 1000) == 2 * 8 * 1000
    assert bandwidth.stream_bytes("triad", 1000) == 3 * 8 * 1000
    with pytest.raises(bandwidth.BandwidthError, match=r"unknown kernel 'scale'.*copy, triad"):
        bandwidth.stream_bytes("scale", 10)


def test_last_level_cache_from_sysfs(tmp_path: Path) -> None:
    root = cache_tree(tmp_path / "cache", [(1, "Data", "48K"), (1, "Instruction", "64K"),
                                           (2, "Unified", "2048K"), (3, "Unified", "32M")])
    assert bandwidth.llc_bytes(root) == 32 * MIB
    assert bandwidth.default_array_bytes(32 * MIB) == 128 * MIB
    # An instruction cache is never the data's last level, however large.
    only_i = cache_tree(tmp_path / "i", [(1, "Data", "32K"), (2, "Instruction", "8M")])
    assert bandwidth.llc_bytes(only_i) == 32 << 10
    assert bandwidth.llc_bytes(tmp_path / "absent") is None
    assert bandwidth.default_array_bytes(None) == bandwidth.FALLBACK_ARRAY_BYTES


def test_kernels_compute_stream_arithmetic_across_slices() -> None:
    n = bandwidth.TRIAD_BLOCK * 2 + 5  # a partial last block
    a, b, c = np.zeros(n), np.arange(n, dtype=np.float64), np.full(n, 2.0)
    for part in bandwidth._parts("triad", [a, b, c], threads=3):
        part()
    assert np.array_equal(a, b + bandwidth.SCALAR * c)
    src, dst = np.arange(n, dtype=np.float64), np.zeros(n)
    for part in bandwidth._parts("copy", [src, dst], threads=3):
        part()
    assert np.array_equal(dst, src)


def test_record_describes_itself(tmp_path: Path) -> None:
    root = cache_tree(tmp_path / "cache", [(3, "Unified", "1M")])
    r = bandwidth.measure("triad", threads=2, repeats=3, array_bytes=2 * MIB, cache_root=root)
    assert (r.kernel, r.threads, r.repeats, r.elements) == ("triad", 2, 3, 2 * MIB // 8)
    assert r.array_bytes == 2 * MIB and r.bytes_per_pass == 3 * 2 * MIB
    assert len(r.times_s) == 3 and r.llc_bytes == MIB
    assert r.meets_llc_rule is False  # 2 MiB is under 4 x 1 MiB
    assert r.write_allocate_counted is False
    assert r.best_gb_s == pytest.approx(r.bytes_per_pass / min(r.times_s) / 1e9)
    assert r.best_gb_s >= r.median_gb_s > 0
    for words in ("triad", "2 thread", "2 MiB each", "3 words", "write-allocate not counted",
                  "best and median of 3"):
        assert words in r.method
    assert json.loads(json.dumps(r.as_dict()))["bytes_per_pass"] == r.bytes_per_pass
    big = bandwidth.measure("copy", threads=1, repeats=1, array_bytes=4 * MIB, cache_root=root)
    assert big.meets_llc_rule and big.bytes_per_pass == 2 * 4 * MIB


@pytest.fixture
def fresh_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A phase cache of its own, so the C kernel is compiled here, not taken from ~/.cache."""
    monkeypatch.setenv("PHASE_CACHE", str(tmp_path / "cache"))
    stream_kernel.load.cache_clear()
    yield tmp_path / "cache"
    stream_kernel.load.cache_clear()


def test_c_kernel_is_compiled_once_and_computes_stream_arithmetic(fresh_kernel: Path) -> None:
    if stream_kernel.shutil.which("cc") is None:
        pytest.skip("no C compiler on this machine")
    n = 100_003  # not a multiple of the thread count: the last slice is longer
    b, c = np.arange(n, dtype=np.float64), np.linspace(-1.0, 1.0, n)
    a = np.zeros(n)
    times = stream_kernel.time_kernel("triad", [a, b, c], threads=3, repeats=2, scalar=2.5)
    assert np.array_equal(a, b + 2.5 * c)
    assert len(times) == 2 and all(t > 0 for t in times)
    src, dst = np.arange(n, dtype=np.float64) * 0.5, np.full(n, np.nan)
    stream_kernel.time_kernel("copy", [src, dst], threads=4, repeats=1, scalar=0.0)
    assert np.array_equal(dst, src)
    (built,) = fresh_kernel.glob("stream/*/" + stream_kernel.LIBRARY)
    stamp = built.stat().st_mtime_ns
    stream_kernel.load.cache_clear()
    stream_kernel.load()  # a second process: the cached library, not a new build
    assert built.stat().st_mtime_ns == stamp
    with pytest.raises(ValueError, match="contiguous float64"):
        stream_kernel.time_kernel("copy", [src[::2], dst[::2]], 1, 1, 0.0)


def test_c_record_names_its_implementation(fresh_kernel: Path) -> None:
    if stream_kernel.shutil.which("cc") is None:
        pytest.skip("no C compiler on this machine")
    r = bandwidth.measure("triad", threads=2, repeats=2, array_bytes=MIB, implementation="c")
    assert r.implementation == "c" and "C loop" in r.method and "-O2" in r.method
    assert r.bytes_per_pass == 3 * MIB and len(r.times_s) == 2
    assert r.best_gb_s == pytest.approx(r.bytes_per_pass / min(r.times_s) / 1e9)
    assert bandwidth.measure("copy", 1, 1, MIB, implementation="numpy").implementation == "numpy"
    with pytest.raises(bandwidth.BandwidthError, match=r"'fortran'.*auto, c, numpy"):
        bandwidth.measure("copy", 1, 1, MIB, implementation="fortran")


def test_without_a_compiler_numpy_measures_and_the_method_says_why(
        fresh_kernel: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "phase-no-such-compiler")
    r = bandwidth.measure("copy", 1, 1, MIB)
    assert r.implementation == "numpy"
    assert "C kernel unavailable: no C compiler ('phase-no-such-compiler'" in r.method
    with pytest.raises(bandwidth.BandwidthError, match="C kernel is unavailable"):
        bandwidth.measure("copy", 1, 1, MIB, implementation="c")


def test_arrays_beyond_memory_are_refused_with_the_option_named() -> None:
    with pytest.raises(bandwidth.BandwidthError, match=r"--array-mib"):
        bandwidth.measure("copy", 1, 1, array_bytes=1 << 50)


def test_cli_json_and_bad_threads() -> None:
    result = CliRunner().invoke(main, ["bandwidth", "--threads", "1", "--kernel", "copy",
                                       "--repeats", "2", "--array-mib", "1", "--json"])
    assert result.exit_code == 0, result.output
    (record,) = json.loads(result.stdout)
    assert record["kernel"] == "copy" and record["bytes_per_pass"] == 2 * MIB
    assert "STREAM-style" in record["method"]
    bad = CliRunner().invoke(main, ["bandwidth", "--threads", "0"])
    assert bad.exit_code == 2 and "thread counts >= 1" in bad.output
