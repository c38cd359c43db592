"""phase.bandwidth's C kernels: stream_kernel.c, compiled on first use and loaded with ctypes.

numpy's triad cannot be one pass (q * c needs a temporary), so it reads several times below
copy; the C loop moves exactly the words STREAM counts. The source ships in the package
beside this file; it is compiled with the system C compiler (`cc`, or $CC) at -O2 with
pthreads into the phase cache ($PHASE_CACHE/stream/<hash>/, default ~/.cache/phase), keyed by
a sha256 of the source, the compiler's path and version, and the flags, so a changed source
or compiler builds a new library and a built one is reused. Where no compiler is found or the
build fails, `load()` says why and phase.bandwidth falls back to numpy, recording that in the
record's method.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

import numpy as np

from phase.models.sources import cache_dir

SOURCE = Path(__file__).with_name("stream_kernel.c")
# -ftree-vectorize: at plain -O2 GCC 12 leaves these loops scalar (8-byte moves), which one
# thread cannot stream at full speed; clang vectorizes at -O2 and accepts the flag.
FLAGS = ("-O2", "-ftree-vectorize", "-pthread", "-shared", "-fPIC")
LIBRARY = "libphase_stream.so"
KERNEL_IDS = {"copy": 0, "triad": 1}
TIMEOUT_S = 120


class Unavailable(Exception):
    """The C kernel cannot be used here; the message says why (for the record's method)."""


def compiler() -> str:
    name = os.environ.get("CC") or "cc"
    path = shutil.which(name)
    if path is None:
        raise Unavailable(f"no C compiler ({name!r} not on PATH; set CC or install cc)")
    return path


def _version(cc: str) -> str:
    try:
        proc = subprocess.run([cc, "--version"], capture_output=True, text=True,
                              timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"{cc} --version failed: {exc}") from None
    return (proc.stdout or proc.stderr).strip().splitlines()[0] if proc.returncode == 0 else ""


def library_path(cc: str, version: str) -> Path:
    key = hashlib.sha256(SOURCE.read_bytes())
    key.update("\0".join((cc, version, *FLAGS)).encode())
    return cache_dir() / "stream" / key.hexdigest()[:16] / LIBRARY


def build(cc: str, target: Path) -> None:
    """Compile into a temporary name, then rename: a concurrent process never loads half a
    file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".so.tmp")
    os.close(fd)
    try:
        proc = subprocess.run([cc, *FLAGS, str(SOURCE), "-o", tmp], capture_output=True,
                              text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            tail = " ".join(proc.stderr.strip().splitlines()[-3:])
            raise Unavailable(f"{cc} could not compile {SOURCE.name} ({tail})")
        os.replace(tmp, target)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"{cc} could not compile {SOURCE.name}: {exc}") from None
    finally:
        Path(tmp).unlink(missing_ok=True)


@cache
def load() -> tuple[ctypes.CDLL, str]:
    """The loaded library and a line for the method (compiler and flags); Unavailable where it
    cannot be built or loaded. Cached: compiled at most once per process and cache key."""
    if not SOURCE.is_file():
        raise Unavailable(f"{SOURCE} is missing from the installed package")
    cc = compiler()
    version = _version(cc)
    path = library_path(cc, version)
    if not path.is_file():
        try:
            build(cc, path)
        except OSError as exc:  # an unwritable cache
            raise Unavailable(f"cannot write {path.parent}: {exc}") from None
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as exc:
        raise Unavailable(f"cannot load {path}: {exc}") from None
    fn = lib.phase_stream
    dbl = ctypes.POINTER(ctypes.c_double)
    fn.argtypes = [ctypes.c_int, dbl, dbl, dbl, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                   ctypes.c_double, dbl]
    fn.restype = ctypes.c_int
    return lib, f"C loop ({version or cc}, {' '.join(FLAGS[:3])}, pthreads)"


def _ptr(x: np.ndarray) -> ctypes._Pointer[ctypes.c_double]:
    if x.dtype != np.float64 or not x.flags.c_contiguous:
        raise ValueError("the C kernel needs contiguous float64 arrays")
    return x.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def time_kernel(kernel: str, arrays: list[np.ndarray], threads: int, repeats: int,
                scalar: float) -> list[float]:
    """Seconds per timed pass, after one untimed pass, as phase.bandwidth.time_kernel:
    copy: arrays (a, c), c = a; triad: arrays (a, b, c), a = b + scalar * c."""
    lib, _ = load()
    if kernel not in KERNEL_IDS:
        raise ValueError(f"unknown kernel {kernel!r}")
    n = len(arrays[0])
    if any(len(x) != n for x in arrays):
        raise ValueError("the kernel's arrays differ in length")
    a, b, c = (arrays[0], arrays[0], arrays[1]) if kernel == "copy" else arrays
    times = np.zeros(repeats, dtype=np.float64)
    # ctypes releases the GIL for the call, so other Python threads keep running meanwhile.
    rc = lib.phase_stream(KERNEL_IDS[kernel], _ptr(a), _ptr(b), _ptr(c), n, threads, repeats,
                          scalar, _ptr(times))
    if rc != 0:
        raise Unavailable(f"the C kernel could not start {threads} threads")
    return [float(t) for t in times]
