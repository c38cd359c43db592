"""Whether llama.cpp's extra CPU buffer types (AMX, weight repacking) can be used safely.

llama.cpp moves supported weights into "extra" CPU buffer types at load time: AMX tiles on
CPUs that report AMX, repacked layouts elsewhere. On some machines that report AMX (seen on a
virtualised Xeon) its matrix kernels crash the process with SIGSEGV on the first batch of
more than one token, which is what every prefill and every speculative verification is. A
crash cannot be caught in-process, so where the CPU reports AMX we try it once in a child
process — load the model, decode an 8-token batch — and cache the verdict per llama.cpp
build, CPU and model file. Elsewhere the extra buffers are used, as llama-bench does.

The choice is recorded in every results file (it changes which kernels are measured) and can
be forced with `extra_buffers="on"|"off"`.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import llama_cpp

from phase.base.errors import UsageProblem
from phase.decode import backend
from phase.models.sources import cache_dir

MODES = ("auto", "on", "off")
_PROBE_BATCH = 8
_PROBE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class ExtraBuffers:
    enabled: bool
    reason: str


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _cache_file(key: str) -> Path:
    return cache_dir() / "cpu-extra-buffers" / f"{key}.json"


def _key(model_path: Path, build: str, flags: set[str]) -> str:
    st = model_path.stat()
    text = json.dumps([str(model_path.resolve()), st.st_size, st.st_mtime_ns, build,
                       sorted(flags)])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _probe_in_child(model_path: Path) -> tuple[bool, str]:
    code = (
        "import sys; from phase.decode.cpu_buffers import probe_batch; "
        "probe_batch(sys.argv[1])"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(model_path)],
            capture_output=True, timeout=_PROBE_TIMEOUT_S, check=False,
        )
    except subprocess.TimeoutExpired:
        return False, "a test batch with them did not finish in time"
    if done.returncode == 0:
        return True, "an 8-token test batch with them ran cleanly on this CPU (AMX)"
    how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
    return False, (f"an 8-token test batch with them crashed the process on this CPU ({how}); "
                   "llama.cpp's AMX kernels are not usable here (`make setup ACCEL=cpu-noamx` "
                   "builds without them and keeps the repacked weights)")


def for_this_build(model_path: Path) -> ExtraBuffers:
    """The automatic decision for `model_path` with the installed llama.cpp build: what phase
    loads it with, and what a tool that loads it some other way must do to run the same
    kernels."""
    return resolve("auto", model_path, backend.system_info())


def resolve(mode: str, model_path: Path, build: str) -> ExtraBuffers:
    """The extra-buffer decision for loading `model_path`, and why."""
    if mode not in MODES:
        raise UsageProblem(f"extra CPU buffers must be one of {', '.join(MODES)}, not {mode!r}")
    if mode != "auto":
        return ExtraBuffers(mode == "on", f"set to {mode} explicitly")
    flags = cpu_flags()
    if not {"amx_tile", "amx_int8", "amx_bf16"} & flags:
        return ExtraBuffers(True, "llama.cpp default (the CPU reports no AMX)")
    cache = _cache_file(_key(model_path, build, flags))
    try:
        cached = json.loads(cache.read_text())
        return ExtraBuffers(bool(cached["enabled"]), str(cached["reason"]))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    enabled, reason = _probe_in_child(model_path)
    # A read-only or unusable cache only costs a repeated probe; never fail a run over it.
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"enabled": enabled, "reason": reason}))
        tmp.replace(cache)
    except OSError:
        pass
    return ExtraBuffers(enabled, reason)


def probe_batch(model_path: str) -> None:
    """Child side of the probe: load with extra buffers and decode one multi-token batch.

    A crash here kills only this child; the parent reads the exit status.
    """
    backend.init(verbose=False)
    mparams = llama_cpp.llama_model_default_params()
    mparams.use_extra_bufts = True
    model = llama_cpp.llama_model_load_from_file(model_path.encode(), mparams)
    if not model:
        sys.exit(3)
    cparams = llama_cpp.llama_context_default_params()
    cparams.n_ctx = cparams.n_batch = cparams.n_ubatch = 64
    ctx = llama_cpp.llama_init_from_model(model, cparams)
    if not ctx:
        sys.exit(4)
    batch = llama_cpp.llama_batch_init(_PROBE_BATCH, 0, 1)
    n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
    for i in range(_PROBE_BATCH):
        batch.token[i] = (i * 97 + 11) % n_vocab
        batch.pos[i] = i
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = 0
        batch.logits[i] = i == _PROBE_BATCH - 1
    batch.n_tokens = _PROBE_BATCH
    sys.exit(0 if llama_cpp.llama_decode(ctx, batch) == 0 else 5)
