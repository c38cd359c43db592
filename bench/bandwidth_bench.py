"""phase's STREAM-style kernels (phase.bandwidth) against references, in one run.

The arms share their arrays and alternate repeat by repeat (bench.common.alternate): phase's
copy (the C kernel, phase/bandwidth/stream_kernel.c, where a compiler exists; numpy's otherwise: the
section's info says which) with 1 thread and with the bench's thread count, numpy's own
`np.copyto(dst, src)` over the whole arrays on one thread (the reference: no slicing, no
thread pool; glibc's memcpy behind it may use non-temporal stores, which skip the
write-allocate read a plain store loop pays, so C's copy can read below it on some machines),
phase's triad in C beside phase's numpy triad (what the C kernel was written for: numpy's
triad pays for its temporary), and, where `sysbench` is installed,
`sysbench memory` reading a block as large as the arrays, or the largest power of two
below (its own bytes: a read of each
byte, not STREAM's read + write). Each arm's figure per repeat is its best pass of
`INNER` passes, as STREAM reports; the row is the median over repeats, its noise their
spread. Bytes are STREAM's: 2 words of 8 bytes per element copied.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import numpy as np

from bench.common import Context, Section, alternate, check_at_least, median, ratio
from phase.analysis.bench_rows import BenchRow
from phase.bandwidth.stream import (
    WORD,
    arrays_for,
    choose,
    default_array_bytes,
    llc_bytes,
    stream_bytes,
    time_kernel,
    time_with,
)

MIB = 1 << 20
INNER = 5  # timed passes per arm per repeat; the best counts, as in STREAM
QUICK_ARRAY = 128 * MIB
MIN_RATIO = 0.90  # phase's 1-thread copy within 10% of numpy's bare copy


def _numpy_copy(src: np.ndarray, dst: np.ndarray) -> float:
    np.copyto(dst, src)  # untimed, as phase's kernel has
    times = []
    for _ in range(INNER):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t0)
    return stream_bytes("copy", len(src)) / min(times) / 1e9


def _sysbench(size_bytes: int, threads: int) -> float | None:
    """sysbench memory's read rate in GB/s over one block per thread, the largest power of
    two up to `size_bytes` (sysbench refuses other block sizes); None where it failed."""
    exe = shutil.which("sysbench")
    if exe is None:
        return None
    block_bytes = 1 << (size_bytes.bit_length() - 1)
    cmd = [exe, "memory", f"--threads={threads}", f"--memory-block-size={block_bytes // 1024}K",
           f"--memory-total-size={INNER * block_bytes * threads // MIB}M",
           "--memory-oper=read", "--memory-access-mode=seq", "run"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    found = re.search(r"\(([\d.]+) MiB/sec\)", out)
    return float(found.group(1)) * MIB / 1e9 if found else None


def run(ctx: Context) -> Section:
    """The stream section. Long because its arms (phase's kernels, numpy's, sysbench)
    alternate in one loop and every row reads the same runs and arrays; a benchmark script,
    run only by hand (bench/run.py), so it is kept as measured rather than split untested."""
    section = Section("stream")
    llc = llc_bytes()
    size = QUICK_ARRAY if ctx.quick else default_array_bytes(llc)
    src, dst = arrays_for("copy", size // WORD)
    moved = stream_bytes("copy", len(src))
    impl, method = choose("auto")

    def phase_copy(threads: int) -> float:
        return moved / min(time_with(impl, "copy", [src, dst], threads, INNER)) / 1e9

    arms = {"phase 1 thr": lambda: phase_copy(1), "np.copyto": lambda: _numpy_copy(src, dst)}
    if ctx.threads > 1:
        arms[f"phase {ctx.threads} thr"] = lambda: phase_copy(ctx.threads)
    if impl == "c":
        tri = arrays_for("triad", size // WORD)
        tri_moved = stream_bytes("triad", len(src))
        arms["C triad"] = lambda: tri_moved / min(time_with("c", "triad", tri, 1, INNER)) / 1e9
        arms["numpy triad"] = lambda: tri_moved / min(time_kernel("triad", tri, 1, INNER)) / 1e9
    has_sysbench = shutil.which("sysbench") is not None
    if has_sysbench:
        arms["sysbench read"] = lambda: _sysbench(size, 1)
    runs: dict[str, list[float | None]] = alternate(max(ctx.repeats, 3), arms, ctx.log)
    numpy_gb = median(runs["np.copyto"])
    section.info = {
        "array_mib": size // MIB, "llc_bytes": llc, "inner_passes": INNER,
        "meets_llc_rule": llc is not None and size >= 4 * llc, "bytes": "STREAM's: copy 2 "
        "words per element; write-allocate not counted", "sysbench": has_sysbench,
        "implementation": impl, "method": method,
    }
    one = median(runs["phase 1 thr"])
    r = ratio(one, numpy_gb)
    section.rows.append(BenchRow(
        "stream", f"copy ({impl}), 1 thread", one, numpy_gb, "np.copyto (1 thr)", "GB/s", r,
        f">= {MIN_RATIO:.2f}x", check_at_least(r, MIN_RATIO),
        f"same arrays, {size // MIB} MiB each; best of {INNER} passes per repeat",
        {"phase": runs["phase 1 thr"], "np.copyto": runs["np.copyto"]}))
    name = f"phase {ctx.threads} thr"
    if name in runs:
        many = median(runs[name])
        section.rows.append(BenchRow(
            "stream", f"copy ({impl}), {ctx.threads} threads", many, numpy_gb, "np.copyto (1 thr)",
            "GB/s", ratio(many, numpy_gb), None, None,
            "threads over slices of the same arrays: what more threads draw here",
            {"phase": runs[name], "np.copyto": runs["np.copyto"]}))
    if impl == "c":
        c_gb, np_gb = median(runs["C triad"]), median(runs["numpy triad"])
        section.rows.append(BenchRow(
            "stream", "triad (c) vs numpy's triad, 1 thread", c_gb, np_gb,
            "phase's numpy triad (1 thr)", "GB/s", ratio(c_gb, np_gb), None, None,
            "same arrays; numpy's triad pays for its q*c temporary, the C loop does not",
            {"c": runs["C triad"], "numpy": runs["numpy triad"]}))
        section.rows.append(BenchRow(
            "stream", "triad (c) vs np.copyto, 1 thread", c_gb, numpy_gb, "np.copyto (1 thr)",
            "GB/s", ratio(c_gb, numpy_gb), None, None,
            "STREAM's bytes: triad 3 words per element, copy 2",
            {"c": runs["C triad"], "np.copyto": runs["np.copyto"]}))
    if has_sysbench:
        bench_gb = median([v for v in runs["sysbench read"] if v is not None])
        section.rows.append(BenchRow(
            "stream", "copy vs sysbench read, 1 thread", one, bench_gb, "sysbench memory read",
            "GB/s", ratio(one, bench_gb), None, None,
            "sysbench counts each byte read once; STREAM's copy counts read + write",
            {"phase": runs["phase 1 thr"], "sysbench": runs["sysbench read"]}))
    return section
