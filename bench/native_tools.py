"""The native llama.cpp tools the bench compares phase with, built from the exact llama.cpp
that phase runs.

phase reaches llama.cpp through llama-cpp-python (version pinned in pyproject.toml), whose
sdist vendors llama.cpp. This module builds `llama-bench`, `llama-speculative` and
`llama-speculative-simple` from that vendored tree, CPU only, into

    $PHASE_CACHE/native-tools/<version>-<source hash>/   (default ~/.cache/phase/...)
        build/bin/<tool>      the binaries
        configure.log         cmake's configure output
        build.log             cmake --build's output
        stamp.json            version, source hash, options: written only after a full build

keyed by the binding's version and a sha256 over the vendored tree (every file's path and
bytes), so another version, a patched tree or other compile options never reuse a build; a
directory with a stamp is reused as is. The sources come from uv's cache of the sdist (make
setup compiled the binding from it) where they are there, else from PyPI via pip download
(bench.native.fetch_sources). cmake is the one on PATH or in the virtual environment
(`uv pip install cmake` puts one there). Only the bench uses these tools: building takes
minutes, so no test builds them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from bench import native
from phase.models.sources import cache_dir

TOOLS = ("llama-bench", "llama-speculative", "llama-speculative-simple")
STAMP = "stamp.json"
# Nothing GPU, nothing networked: the tools read local GGUF files on the CPU, as phase does.
CPU_ONLY = ("-DGGML_CUDA=OFF", "-DGGML_METAL=OFF", "-DGGML_VULKAN=OFF", "-DGGML_HIP=OFF")

Log = Callable[[str], None]


class BuildError(native.NativeError):
    """A step of the build failed; the message names the step and its log file."""


def uv_cached_source(version: str) -> Path | None:
    """The vendored llama.cpp in uv's cache of llama-cpp-python==version's sdist, if any."""
    root = Path(os.environ.get("UV_CACHE_DIR") or Path.home() / ".cache" / "uv")
    pattern = f"sdists-*/pypi/llama-cpp-python/{version}/*/src/vendor/llama.cpp/CMakeLists.txt"
    found = sorted(root.glob(pattern))
    return found[0].parent if found else None


def source_tree(version: str, log: Log = print) -> Path:
    return uv_cached_source(version) or native.fetch_sources(version, log)


def source_hash(src: Path) -> str:
    """sha256 over every file under `src`: its relative path, then its bytes, in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in src.rglob("*") if p.is_file() and not p.is_symlink()):
        digest.update(path.relative_to(src).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def find_cmake() -> str:
    for candidate in (shutil.which("cmake"), str(Path(sys.executable).parent / "cmake")):
        if candidate and Path(candidate).is_file():
            return candidate
    raise BuildError("cmake not found on PATH nor in the virtual environment: install it "
                     "(apt-get install cmake, or `uv pip install --python .venv/bin/python "
                     "cmake`) and run the bench again")


def build_dir(version: str, digest: str) -> Path:
    return cache_dir() / "native-tools" / f"{version}-{digest[:16]}"


def build_label(bin_path: Path) -> str:
    """What a results file records of the tools a run used: their build directory's name,
    <llama-cpp-python version>-<source hash> (the same name on every machine)."""
    return bin_path.parent.parent.name


def _stamp(version: str, digest: str, options: tuple[str, ...]) -> dict[str, object]:
    return {"version": version, "source_sha256": digest, "options": list(options),
            "tools": list(TOOLS)}


def _step(name: str, cmd: list[str], log_file: Path, log: Log) -> None:
    log(f"{name}: {' '.join(cmd)} (log: {log_file})")
    with log_file.open("w") as out:
        out.write(" ".join(cmd) + "\n\n")
        out.flush()
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise BuildError(f"native tools: the {name} step failed (exit {proc.returncode}); "
                         f"read {log_file} for the compiler's or cmake's message")


def ensure_tools(log: Log = print, version: str | None = None) -> Path:
    """The bin directory holding TOOLS, built on first use for this version and source."""
    version = version or native.binding_version()
    src = source_tree(version, log)
    digest = source_hash(src)
    options = (*native.build_options(), *CPU_ONLY)
    root = build_dir(version, digest)
    bin_path = root / "build" / "bin"
    stamp = _stamp(version, digest, options)
    try:
        if json.loads((root / STAMP).read_text()) == stamp:
            return bin_path
    except (OSError, ValueError):
        pass
    if root.exists():
        log(f"{root}: no stamp for these options, or an unfinished build: starting over")
        shutil.rmtree(root)
    root.mkdir(parents=True)
    cmake = find_cmake()
    log(f"building {', '.join(TOOLS)} from llama-cpp-python {version}'s llama.cpp "
        f"({src}; minutes on a few cores)")
    _step("configure", [cmake, "-S", str(src), "-B", str(root / "build"), *options],
          root / "configure.log", log)
    _step("build", [cmake, "--build", str(root / "build"), "-j", str(os.cpu_count() or 1),
                    "--target", *TOOLS], root / "build.log", log)
    missing = [t for t in TOOLS if not (bin_path / t).is_file()]
    if missing:
        raise BuildError(f"native tools: the build step ended without {', '.join(missing)} in "
                         f"{bin_path}; read {root / 'build.log'}")
    (root / STAMP).write_text(json.dumps(stamp, indent=1))
    return bin_path


if __name__ == "__main__":
    print(ensure_tools(lambda m: print(m, file=sys.stderr)))
