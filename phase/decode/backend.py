"""llama.cpp's process-wide state, started once: the backend, its log callback, the build.

Every way phase opens a GGUF file (a loaded model, a vocabulary-only file, the child process
that probes the extra CPU buffers) starts here, and nothing here imports the modules that
use it, so the decode package has one start-up and no import circle through it.

The log callback does three things with each llama.cpp message: prints it in verbose mode;
otherwise keeps recent errors for phase's own one-line message (`native_error`); and, while a
model loads, hands it to whoever is `capturing` (phase.decode.placement reads where llama.cpp
put the model from those lines).
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
from collections import deque
from collections.abc import Iterator

import llama_cpp

_backend_lock = threading.Lock()
_backend_ready = False

# ggml's log levels (ggml.h). llama-cpp-python 0.3.36 maps them with an older numbering in
# which WARN (3) reads as ERROR, so its quiet mode still prints warnings; we filter here.
_GGML_LOG_ERROR = 4
_GGML_LOG_CONT = 5
_log_verbose = False
_log_level = 0
# Quiet mode keeps llama.cpp's recent error lines to put in our own one-line error message.
_log_errors: deque[str] = deque(maxlen=8)

_capture_lock = threading.Lock()
_capture: list[str] | None = None


@llama_cpp.llama_log_callback
def _log(level: int, text: bytes, _user: ctypes.c_void_p) -> None:
    global _log_level
    if level != _GGML_LOG_CONT:
        _log_level = level
    message = text.decode("utf-8", errors="replace")
    if _capture is not None:
        _capture.append(message)
    if _log_verbose:
        sys.stderr.write(message)
    elif _log_level >= _GGML_LOG_ERROR and message.strip():
        _log_errors.append(message.strip())


def init(verbose: bool) -> None:
    """Start llama.cpp's backend (once per process) and route its log through phase."""
    global _backend_ready, _log_verbose
    _log_verbose = verbose
    with _backend_lock:
        llama_cpp.llama_log_set(_log, ctypes.c_void_p(0))
        if not _backend_ready:
            llama_cpp.llama_backend_init()
            _backend_ready = True


def native_error() -> str:
    """The first error llama.cpp logged since the last call (quiet mode; the first names the
    cause, later ones the callers that gave up), as a suffix for our message."""
    if not _log_errors:
        return ""
    first = _log_errors[0]
    _log_errors.clear()
    return f" (llama.cpp: {first})"


@contextlib.contextmanager
def capturing() -> Iterator[list[str]]:
    """Keep llama.cpp's log messages while the block runs (a model load)."""
    global _capture
    with _capture_lock:
        lines: list[str] = []
        _capture = lines
        try:
            yield lines
        finally:
            _capture = None


def offload_supported() -> bool:
    """Whether this llama.cpp build can put layers on an accelerator."""
    return bool(llama_cpp.llama_supports_gpu_offload())


def system_info() -> str:
    """llama-cpp-python version, llama.cpp / ggml build, and the CPU features it was built with."""
    parts = [f"llama-cpp-python {llama_cpp.__version__}"]
    with contextlib.suppress(AttributeError, OSError):
        parts.append(f"llama {llama_cpp.llama_version().decode()}")
    try:
        from llama_cpp import _ggml  # absent from some binding versions

        lib = _ggml.libggml
        lib.ggml_version.restype = ctypes.c_char_p
        lib.ggml_commit.restype = ctypes.c_char_p
        parts.append(f"ggml {lib.ggml_version().decode()} ({lib.ggml_commit().decode()})")
    except (ImportError, AttributeError, OSError):
        pass
    parts.append(llama_cpp.llama_print_system_info().decode(errors="replace").strip())
    return " | ".join(p for p in parts if p)
