"""Native llama.cpp: build the reference binaries once, run them, read their timing output.

The binaries are built from the llama.cpp sources vendored in the sdist of the installed
llama-cpp-python version, so phase (through the Python binding) and the native tools run
the same llama.cpp code. They live in the phase cache ($PHASE_CACHE/native, default
~/.cache/phase/native) and are never committed:

    pip download --no-binary llama-cpp-python --no-deps llama-cpp-python==<version>
        -d <cache>/native
    tar xf llama_cpp_python-<version>.tar.gz
    cmake -S llama_cpp_python-<version>/vendor/llama.cpp -B build -DCMAKE_BUILD_TYPE=Release
          -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_OPENSSL=OFF
    cmake --build build -j --target llama-bench llama-completion llama-speculative-simple
          llama-lookup

All of it is skipped when the binaries exist and were configured from that version's sources.

Every generating tool gets the same flags as phase's runs: greedy (--temp 0 --top-k 1),
a fixed number of tokens with end-of-generation ignored, the same thread count and context
size, the prompt passed verbatim (-p, --no-escape) so both sides tokenize the same text the
same way (add BOS, parse special tokens), and no GPU layers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from phase.decode import system_info
from phase.decode.cpu_buffers import cpu_flags
from phase.models.sources import cache_dir
from phase.results.llama_build import enabled_features

TARGETS = ("llama-bench", "llama-completion", "llama-speculative-simple", "llama-lookup")
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_SERVER=OFF",
    "-DLLAMA_OPENSSL=OFF",
)
TIMEOUT_S = 1800.0
AMX_FLAGS = ("amx_tile", "amx_int8", "amx_bf16")
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
OPTIONS_STAMP = "phase-cmake-options.json"


class NativeError(RuntimeError):
    """A native tool could not be built, failed, or printed nothing we could read."""


# --- building -------------------------------------------------------------------------------


def binding_version() -> str:
    return metadata.version("llama-cpp-python")


def native_root() -> Path:
    return cache_dir() / "native"


def source_dir(version: str) -> Path:
    return native_root() / f"llama_cpp_python-{version}" / "vendor" / "llama.cpp"


def _configured_source(build: Path) -> Path | None:
    cache = build / "CMakeCache.txt"
    if not cache.is_file():
        return None
    for line in cache.read_text(errors="replace").splitlines():
        if line.startswith("CMAKE_HOME_DIRECTORY:"):
            return Path(line.split("=", 1)[1].strip())
    return None


def _run(cmd: list[str], log: Any, cwd: Path | None = None) -> None:
    log(" ".join(cmd))
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
        raise NativeError(f"`{' '.join(cmd)}` failed ({proc.returncode}):\n" + "\n".join(tail))


def fetch_sources(version: str, log: Any = print) -> Path:
    """The vendored llama.cpp of llama-cpp-python==version, from its sdist (cached)."""
    src = source_dir(version)
    if (src / "CMakeLists.txt").is_file():
        return src
    root = native_root()
    root.mkdir(parents=True, exist_ok=True)
    archive = root / f"llama_cpp_python-{version}.tar.gz"
    if not archive.is_file():
        # --no-binary for this package only: with :all:, pip builds the sdist's build
        # requirements (cmake among them) from source just to read its metadata.
        _run([sys.executable, "-m", "pip", "download", "--no-binary", "llama-cpp-python",
              "--no-deps", "--disable-pip-version-check", "-q", f"llama-cpp-python=={version}",
              "-d", str(root)], log)
    if not archive.is_file():
        raise NativeError(f"pip download reported success but {archive} is missing")
    log(f"extracting {archive.name}")
    with tarfile.open(archive) as tf:
        tf.extractall(root, filter="data")
    if not (src / "CMakeLists.txt").is_file():
        raise NativeError(f"{archive.name} holds no vendored llama.cpp at {src}")
    return src


def binding_features() -> set[str]:
    """The CPU features the installed llama-cpp-python was compiled with ("AVX2", "AMX_INT8"...)."""
    return enabled_features(system_info())


def mirror_options(cpu: set[str], binding: set[str]) -> tuple[str, ...]:
    """Options that make the native tools run the binding's kernels: a binding built without
    AMX (`make setup ACCEL=cpu-noamx`) on a CPU that reports AMX gets native tools without it
    too (GGML_NATIVE would otherwise compile AMX in, and crash where it is broken)."""
    if set(AMX_FLAGS) & cpu and "AMX_INT8" not in binding:
        return (f"-DCMAKE_C_FLAGS={NO_AMX}", f"-DCMAKE_CXX_FLAGS={NO_AMX}")
    return ()


def build_options() -> tuple[str, ...]:
    return (*CMAKE_OPTIONS, *mirror_options(cpu_flags(), binding_features()))


def _stamped_options(build: Path) -> list[str] | None:
    try:
        return list(json.loads((build / OPTIONS_STAMP).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def configure(src: Path, build: Path, options: tuple[str, ...], log: Any = print) -> None:
    if shutil.which("cmake") is None:
        raise NativeError("cmake is not installed (apt-get install cmake, or pip install cmake)")
    _run(["cmake", "-S", str(src), "-B", str(build), *options], log)
    (build / OPTIONS_STAMP).write_text(json.dumps(list(options)))


def compile_targets(build: Path, log: Any = print) -> Path:
    _run(["cmake", "--build", str(build), "-j", str(os.cpu_count() or 1), "--target", *TARGETS],
         log)
    missing = [t for t in TARGETS if not (build / "bin" / t).is_file()]
    if missing:
        raise NativeError(f"the build finished without {', '.join(missing)} in {build / 'bin'}")
    return build / "bin"


def ensure_built(log: Any = print) -> Path:
    """The directory holding the four binaries, building them first where needed."""
    version = binding_version()
    src = source_dir(version)
    build = native_root() / "build"
    options = build_options()
    configured = _configured_source(build)
    same_source = configured is not None and configured.resolve() == src.resolve()
    same_options = _stamped_options(build) == list(options)
    if same_source and same_options and all((build / "bin" / t).is_file() for t in TARGETS):
        return build / "bin"
    if configured is not None and not (same_source and same_options):
        # Another llama-cpp-python version's sources, or other compile options: comparing
        # against it would compare two different llama.cpp builds. Start over.
        why = "options" if same_source else f"sources ({configured}, not {src})"
        log(f"native build in {build} has other {why}: rebuilding")
        shutil.rmtree(build)
    log(f"building llama.cpp from llama-cpp-python {version}'s sdist (once; ~10 min on 2 cores)")
    src = fetch_sources(version, log)
    configure(src, build, options, log)
    return compile_targets(build, log)


def build_info(bin_path: Path) -> str | None:
    """`llama-bench --version`: the llama.cpp version, commit and compiler."""
    try:
        proc = subprocess.run([str(bin_path / "llama-bench"), "--version"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    keep = [ln for ln in lines if ln.startswith(("version:", "built with"))]
    return "; ".join(keep) or None


# --- running --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Common:
    """What every generating run shares with phase's side."""

    threads: int
    n_ctx: int
    tokens: int
    # phase's decision for llama.cpp's extra CPU buffer types (phase.decode.cpu_buffers): the
    # native side must run the same kernels (and not crash where AMX is broken).
    extra_buffers: bool = True

    def flags(self) -> list[str]:
        return ["-t", str(self.threads), "-c", str(self.n_ctx), "-n", str(self.tokens),
                "--temp", "0", "--top-k", "1", "--seed", "0", "--ignore-eos", "--no-escape",
                "-ngl", "0", *([] if self.extra_buffers else ["--no-repack"])]


def _exec(cmd: list[str]) -> tuple[str, str]:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S,
                              errors="replace", stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise NativeError(f"{Path(cmd[0]).name} ran past {TIMEOUT_S:.0f} s") from None
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-10:])
        raise NativeError(f"{Path(cmd[0]).name} exited with {proc.returncode}:\n{tail}")
    return proc.stdout, proc.stderr


def _groups(pattern: str, text: str, what: str, tool: str) -> tuple[float, ...]:
    """The numbers captured by the last match of `pattern` (tools print totals last)."""
    found = list(re.finditer(pattern, text, flags=re.MULTILINE))
    if not found:
        raise NativeError(f"{tool}: no '{what}' in its output (its format changed?)")
    return tuple(float(g) for g in found[-1].groups())


def _number(pattern: str, text: str, what: str, tool: str) -> float:
    return _groups(pattern, text, what, tool)[0]


def llama_bench_tg(bin_path: Path, model: Path, tokens: int, threads: int,
                   extra_buffers: bool = True) -> dict[str, float]:
    """One llama-bench token-generation test (tg<tokens>, no prompt), one repetition after
    llama-bench's own warm-up run; returns its tokens/s."""
    cmd = [str(bin_path / "llama-bench"), "-m", str(model), "-p", "0", "-n", str(tokens),
           "-t", str(threads), "-r", "1", "-ngl", "0", "-o", "json",
           *([] if extra_buffers else ["--repack", "0"])]
    stdout, _ = _exec(cmd)
    try:
        tests = json.loads(stdout)
    except json.JSONDecodeError as exc:
        raise NativeError(f"llama-bench printed no JSON: {exc}") from None
    tg = [t for t in tests if t.get("n_gen") == tokens and t.get("n_prompt") == 0]
    if not tg:
        raise NativeError("llama-bench's JSON holds no tg test")
    return {"tokens_per_s": float(tg[0]["avg_ts"]), "model_size": float(tg[0]["model_size"])}


# common_perf_print:        eval time =     301.11 ms /    31 runs   ( 9.71 ms per token, ...)
_EVAL = r"common_perf_print:\s+eval time =\s+([\d.]+) ms /\s+(\d+) runs"
_PROMPT_EVAL = r"common_perf_print:\s+prompt eval time =\s+[\d.]+ ms /\s+(\d+) tokens"
# decoded   37 tokens in    0.553 seconds, speed:   66.926 t/s
_DECODED = r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds"
_ENCODED = r"encoded\s+(\d+) tokens in"


def llama_completion(bin_path: Path, model: Path, prompt: str,
                     common: Common) -> dict[str, Any]:
    """Plain greedy generation. tokens/s is llama.cpp's own eval timing: the forward passes
    after the prompt, which is what phase's decode window holds too."""
    cmd = [str(bin_path / "llama-completion"), "-m", str(model), "-p", prompt, "-no-cnv",
           "--no-display-prompt", *common.flags()]
    stdout, stderr = _exec(cmd)
    tool = "llama-completion"
    eval_ms, runs = _groups(_EVAL, stderr, "eval time", tool)
    if eval_ms <= 0 or runs <= 0:
        raise NativeError(f"{tool}: eval time {eval_ms} ms for {runs} runs")
    return {"tokens_per_s": runs / (eval_ms / 1e3), "eval_runs": int(runs),
            "prompt_tokens": int(_number(_PROMPT_EVAL, stderr, "prompt eval", tool)),
            "text": stdout}


def _speculative_stats(stdout: str, stderr: str, prompt: str, tool: str) -> dict[str, Any]:
    n, seconds = _groups(_DECODED, stderr, "decoded", tool)
    drafted = _number(r"n_drafted\s+=\s+(\d+)", stderr, "n_drafted", tool)
    accepted = _number(r"n_accept\s+=\s+(\d+)", stderr, "n_accept", tool)
    if seconds <= 0:
        raise NativeError(f"{tool}: decoded {n} tokens in {seconds} s")
    # These tools print the prompt, then the generated text, to stdout.
    at = stdout.find(prompt)
    text = stdout[at + len(prompt):] if at >= 0 else None
    return {"tokens_per_s": n / seconds, "tokens": int(n), "drafted": int(drafted),
            "accepted": int(accepted),
            "acceptance": accepted / drafted if drafted else None,
            "prompt_tokens": int(_number(_ENCODED, stderr, "encoded", tool)),
            "text": text}


def speculative_simple(bin_path: Path, target: Path, draft: Path, prompt: str, k: int,
                       common: Common) -> dict[str, Any]:
    """Draft-model speculation with at most k tokens per step, never cut short by the draft's
    confidence (p-min 0) or discarded for being short (n-min 0), as phase's draft-k does."""
    cmd = [str(bin_path / "llama-speculative-simple"), "-m", str(target), "-md", str(draft),
           "--spec-type", "draft-simple", "--spec-draft-n-max", str(k),
           "--spec-draft-n-min", "0", "--spec-draft-p-min", "0", "--spec-draft-ngl", "0",
           "-p", prompt, *common.flags()]
    stdout, stderr = _exec(cmd)
    return _speculative_stats(stdout, stderr, prompt, "llama-speculative-simple")


def lookup(bin_path: Path, model: Path, prompt: str, k: int, common: Common,
           cache_file: Path) -> dict[str, Any]:
    """Prompt-lookup (n-gram) speculation with at most k tokens per step. `cache_file` must
    not exist: llama-lookup loads a dynamic cache from it when it does, and writes one at the
    end, so a fresh name keeps runs independent."""
    cmd = [str(bin_path / "llama-lookup"), "-m", str(model), "--spec-draft-n-max", str(k),
           "-lcd", str(cache_file), "-p", prompt, *common.flags()]
    stdout, stderr = _exec(cmd)
    return _speculative_stats(stdout, stderr, prompt, "llama-lookup")


# llama.cpp's n-gram speculators, by their --spec-type names (common/speculative.cpp).
NGRAM_SPEC_TYPES = ("ngram-simple", "ngram-map-k", "ngram-mod", "ngram-cache")


def speculative_ngram(bin_path: Path, target: Path, prompt: str, spec_type: str,
                      common: Common) -> dict[str, Any]:
    """Self-speculation with one of llama.cpp's n-gram types at its own defaults (e.g.
    ngram-simple: a 12-token lookup key, drafts of up to 48 tokens); no draft model."""
    if spec_type not in NGRAM_SPEC_TYPES:
        raise NativeError(f"unknown n-gram spec type {spec_type!r}")
    cmd = [str(bin_path / "llama-speculative-simple"), "-m", str(target),
           "--spec-type", spec_type, "-p", prompt, *common.flags()]
    stdout, stderr = _exec(cmd)
    return _speculative_stats(stdout, stderr, prompt, f"llama-speculative-simple {spec_type}")


def speculative_p_min(bin_path: Path, target: Path, draft: Path, prompt: str, k: int,
                      p_min: float, common: Common) -> dict[str, Any]:
    """Draft-model speculation that stops drafting when the draft's top probability falls
    below p_min (`--spec-draft-p-min`), with at most k tokens per step."""
    cmd = [str(bin_path / "llama-speculative-simple"), "-m", str(target), "-md", str(draft),
           "--spec-type", "draft-simple", "--spec-draft-n-max", str(k),
           "--spec-draft-n-min", "0", "--spec-draft-p-min", str(p_min),
           "--spec-draft-ngl", "0", "-p", prompt, *common.flags()]
    stdout, stderr = _exec(cmd)
    return _speculative_stats(stdout, stderr, prompt, "llama-speculative-simple p-min")


def help_text(bin_path: Path, tool: str) -> str:
    """A tool's --help, to check that the flags a bench passes exist in this build."""
    try:
        proc = subprocess.run([str(bin_path / tool), "--help"], capture_output=True, text=True,
                              timeout=60, errors="replace", stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NativeError(f"{tool} --help failed: {exc}") from None
    return proc.stdout + proc.stderr
