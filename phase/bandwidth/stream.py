"""This machine's memory bandwidth, measured STREAM-style: copy and triad over arrays far
larger than the last-level cache, at a given thread count.

The kernels are John McCalpin's STREAM kernels on float64 arrays (8-byte words):

    copy:  c[i] = a[i]            counted as 2 words per element (one read, one write)
    triad: a[i] = b[i] + q * c[i] counted as 3 words per element (two reads, one write)

Bytes are counted as STREAM counts them: the write-allocate read that a cached store causes
(the line is read before it is written) is not counted, so a figure is what the kernel asked
for, not every byte the bus moved. Each array is at least 4x the last-level cache (STREAM's
rule), read from /sys/devices/system/cpu/cpu0/cache where the kernel exposes it. Timing is
STREAM's too: one untimed pass first (it touches every page), then `repeats` timed passes;
the best (shortest) pass gives the bandwidth STREAM reports, the median the typical one.

Two implementations, named in every record (`implementation`, and the method's text):

- "c" (the default where a C compiler exists): phase/bandwidth/stream_kernel.c, compiled on
  first use into the phase cache (phase.bandwidth.stream_kernel); one loop per kernel on
  pthreads over the same contiguous slices, so memory sees exactly the words STREAM counts.
- "numpy" (the fallback, and on request): its ufuncs release the GIL while they loop, so
  `threads` Python threads over disjoint contiguous slices run in parallel. Triad is
  evaluated in blocks small enough for the temporary q * c to stay in cache, yet reads
  several times below copy (the extra ufunc passes cost time if not memory streams).

`measure(..., implementation="auto")` takes the C kernel and falls back to numpy where it
cannot be built, saying why in the method.
"""

from __future__ import annotations

import functools
import itertools
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from phase.bandwidth import stream_kernel
from phase.base.errors import PhaseError

WORD = 8  # float64, as STREAM's default
WORDS_PER_ELEMENT = {"copy": 2, "triad": 3}
ARRAYS = {"copy": 2, "triad": 3}
KERNELS = tuple(WORDS_PER_ELEMENT)
CACHE_ROOT = Path("/sys/devices/system/cpu/cpu0/cache")
LLC_MULTIPLE = 4  # STREAM: each array at least 4x the largest cache
FALLBACK_ARRAY_BYTES = 256 << 20  # where no cache size can be read
# Triad's block: its temporary (8 bytes x this) fits in any L2 of the last decade.
TRIAD_BLOCK = 1 << 15
SCALAR = 3.0  # STREAM's q

IMPLEMENTATIONS = ("auto", "c", "numpy")
METHOD = ("STREAM-style {kernel} (phase.bandwidth, {impl}): {threads} thread(s) over "
          "contiguous slices of float64 arrays of {mib:.0f} MiB each ({arrays} arrays); "
          "{words} words of 8 bytes counted per element, write-allocate not counted (as "
          "STREAM counts); best and median of {repeats} timed passes after one untimed pass")


class BandwidthError(PhaseError):
    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)


@dataclass(frozen=True)
class BandwidthRecord:
    """One kernel at one thread count: the figures and how they were reached."""

    kernel: str
    threads: int
    array_bytes: int  # bytes of each array
    elements: int
    repeats: int
    bytes_per_pass: int  # as STREAM counts them
    best_gb_s: float
    median_gb_s: float
    times_s: tuple[float, ...]
    llc_bytes: int | None
    meets_llc_rule: bool  # every array >= LLC_MULTIPLE x the last-level cache
    write_allocate_counted: bool
    method: str
    implementation: str = "numpy"  # "c" (phase/bandwidth/stream_kernel.c) or "numpy"

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _size(text: str) -> int:
    """sysfs cache sizes: "48K", "2048K", "32M" (binary units)."""
    text = text.strip().upper()
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


def llc_bytes(root: Path = CACHE_ROOT) -> int | None:
    """The largest data or unified cache of cpu0 (its last level), None where unreadable."""
    found: list[tuple[int, int]] = []
    for index in sorted(root.glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = _size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified"):
            found.append((level, size))
    return max(found)[1] if found else None


def stream_bytes(kernel: str, elements: int) -> int:
    """Bytes one pass of `kernel` over `elements` moves, as STREAM counts them."""
    if kernel not in WORDS_PER_ELEMENT:
        raise BandwidthError(f"unknown kernel {kernel!r}: use one of {', '.join(KERNELS)}")
    return WORDS_PER_ELEMENT[kernel] * WORD * elements


def default_array_bytes(llc: int | None) -> int:
    return FALLBACK_ARRAY_BYTES if llc is None else LLC_MULTIPLE * llc


def _available_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _check_memory(kernel: str, array_bytes: int) -> None:
    need, free = ARRAYS[kernel] * array_bytes, _available_bytes()
    if free is not None and need > free * 0.8:
        raise BandwidthError(
            f"{kernel} needs {ARRAYS[kernel]} arrays of {array_bytes >> 20} MiB "
            f"({need >> 20} MiB) and {free >> 20} MiB are available; give a smaller array "
            "size (--array-mib), which records that it is under STREAM's 4x-cache rule")


def copy_part(a: np.ndarray, c: np.ndarray) -> None:
    np.copyto(c, a)


def triad_part(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    """a = b + SCALAR * c, block by block so the temporary stays in cache."""
    tmp = np.empty(min(TRIAD_BLOCK, len(a)), dtype=np.float64)
    for start in range(0, len(a), TRIAD_BLOCK):
        stop = min(start + TRIAD_BLOCK, len(a))
        t = tmp[: stop - start]
        np.multiply(c[start:stop], SCALAR, out=t)
        np.add(b[start:stop], t, out=a[start:stop])


def _parts(kernel: str, arrays: list[np.ndarray], threads: int) -> list[Callable[[], None]]:
    """One closure per thread, each over its own contiguous slice of every array."""
    bounds = np.linspace(0, len(arrays[0]), threads + 1, dtype=np.int64)
    out: list[Callable[[], None]] = []
    for lo, hi in itertools.pairwise(int(b) for b in bounds):
        views = [x[lo:hi] for x in arrays]
        if kernel == "copy":
            out.append(functools.partial(copy_part, views[0], views[1]))
        else:
            out.append(functools.partial(triad_part, views[0], views[1], views[2]))
    return out


def arrays_for(kernel: str, elements: int) -> list[np.ndarray]:
    """The kernel's arrays (a, c for copy; a, b, c for triad), every page written once."""
    stream_bytes(kernel, 0)
    return [np.full(elements, v, dtype=np.float64) for v in (1.0, 2.0, 0.0)[:ARRAYS[kernel]]]


def time_kernel(kernel: str, arrays: list[np.ndarray], threads: int, repeats: int
                ) -> list[float]:
    """Seconds per timed pass of `kernel` over `arrays` with `threads` threads, after one
    untimed pass (so that a caller's own arrays can be timed, as bench/ compares them)."""
    parts = _parts(kernel, arrays, threads)
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        list(pool.map(lambda f: f(), parts))  # untimed: touches every page
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            list(pool.map(lambda f: f(), parts))
            times.append(time.perf_counter() - t0)
    return times


def choose(implementation: str) -> tuple[str, str]:
    """("c" or "numpy", the method's words for it). "auto" is C where it can be built; "c"
    refuses to fall back, so a caller that asked for C never gets numpy's figure."""
    if implementation not in IMPLEMENTATIONS:
        raise BandwidthError(f"unknown implementation {implementation!r}: use one of "
                             f"{', '.join(IMPLEMENTATIONS)}")
    if implementation == "numpy":
        return "numpy", "numpy"
    try:
        return "c", stream_kernel.load()[1]
    except stream_kernel.Unavailable as exc:
        if implementation == "c":
            raise BandwidthError(f"the C kernel is unavailable: {exc}") from None
        return "numpy", f"numpy; C kernel unavailable: {exc}"


def time_with(impl: str, kernel: str, arrays: list[np.ndarray], threads: int, repeats: int
              ) -> list[float]:
    """time_kernel by "c" or "numpy"."""
    if impl == "c":
        return stream_kernel.time_kernel(kernel, arrays, threads, repeats, SCALAR)
    return time_kernel(kernel, arrays, threads, repeats)


def measure(kernel: str, threads: int, repeats: int = 10, array_bytes: int | None = None,
            cache_root: Path = CACHE_ROOT, implementation: str = "auto") -> BandwidthRecord:
    """Run `kernel` with `threads` threads; best and median GB/s (10^9 bytes/s)."""
    stream_bytes(kernel, 0)  # an unknown kernel is refused before allocating
    if threads < 1 or repeats < 1:
        raise BandwidthError(f"threads ({threads}) and repeats ({repeats}) must be >= 1")
    impl, words = choose(implementation)
    llc = llc_bytes(cache_root)
    size = array_bytes or default_array_bytes(llc)
    elements = max(threads, size // WORD)
    _check_memory(kernel, elements * WORD)
    times = time_with(impl, kernel, arrays_for(kernel, elements), threads, repeats)
    moved = stream_bytes(kernel, elements)
    method = METHOD.format(kernel=kernel, impl=words, threads=threads,
                           mib=elements * WORD / (1 << 20), arrays=ARRAYS[kernel],
                           words=WORDS_PER_ELEMENT[kernel], repeats=repeats)
    return BandwidthRecord(
        kernel, threads, elements * WORD, elements, repeats, moved,
        moved / min(times) / 1e9, moved / statistics.median(times) / 1e9, tuple(times), llc,
        llc is not None and elements * WORD >= LLC_MULTIPLE * llc, False, method, impl)


