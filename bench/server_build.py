"""llama.cpp's `llama-server`, built once from the llama.cpp that phase runs.

The same sources and compile options as the other native tools (bench/native.py,
bench/native_tools.py): the vendored llama.cpp of the installed llama-cpp-python's sdist, the
binding's CPU features mirrored, CPU only. The server is switched on and its web UI off:
LLAMA_BUILD_UI=OFF skips the npm build and LLAMA_USE_PREBUILT_UI=OFF the download of the
prebuilt UI from a Hugging Face bucket, so the build reads nothing from the network and the
server embeds an empty asset table (the API endpoints are all the bench uses). It lives in

    $PHASE_CACHE/native-server/<version>-<source hash>/   (default ~/.cache/phase/...)
        build/bin/llama-server, configure.log, build.log,
        stamp.json   written only after a full build

in its own directory rather than the native tools' so that turning the server on changes
neither of their options stamps (no rebuild of tools a bench already has) and a server that
fails to build costs only the serving_reference section. Building takes minutes (tens of
them on two cores); no test builds it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from bench import native, native_tools
from phase.models.sources import cache_dir

TARGET = "llama-server"
SERVER_OPTIONS = (
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
)


def server_options() -> tuple[str, ...]:
    """The native tools' options with the server switched on (a later -D wins in cmake,
    but dropping the OFF keeps the configure line readable)."""
    base = [o for o in native.build_options() if not o.startswith("-DLLAMA_BUILD_SERVER=")]
    return (*base, *native_tools.CPU_ONLY, *SERVER_OPTIONS)


def build_root(version: str, digest: str) -> Path:
    return cache_dir() / "native-server" / f"{version}-{digest[:16]}"


def ensure_server(log: native_tools.Log = print, version: str | None = None) -> Path:
    """The path of the llama-server binary, built on first use for this version and source."""
    version = version or native.binding_version()
    src = native_tools.source_tree(version, log)
    digest = native_tools.source_hash(src)
    options = server_options()
    root = build_root(version, digest)
    binary = root / "build" / "bin" / TARGET
    stamp = {"version": version, "source_sha256": digest, "options": list(options),
             "tools": [TARGET]}
    try:
        if json.loads((root / native_tools.STAMP).read_text()) == stamp and binary.is_file():
            return binary
    except (OSError, ValueError):
        pass
    if root.exists():
        log(f"{root}: no stamp for these options, or an unfinished build: starting over")
        shutil.rmtree(root)
    root.mkdir(parents=True)
    cmake = native_tools.find_cmake()
    log(f"building {TARGET} from llama-cpp-python {version}'s llama.cpp ({src}; tens of "
        "minutes on two cores, once)")
    native_tools._step("configure", [cmake, "-S", str(src), "-B", str(root / "build"),
                                     *options], root / "configure.log", log)
    native_tools._step("build", [cmake, "--build", str(root / "build"), "-j",
                                 str(os.cpu_count() or 1), "--target", TARGET],
                       root / "build.log", log)
    if not binary.is_file():
        raise native_tools.BuildError(f"the build step ended without {binary}; read "
                                      f"{root / 'build.log'}")
    (root / native_tools.STAMP).write_text(json.dumps(stamp, indent=1))
    return binary


if __name__ == "__main__":
    print(ensure_server(lambda m: print(m, file=sys.stderr)))
