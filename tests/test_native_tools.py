"""bench/native_tools.py without building llama.cpp (minutes): where the sources are found,
what keys a build, that a finished build is reused, and that a failed step is named with its
log file. The source trees here are small real directories; cmake runs for real on them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench import native_tools, server_build

VERSION = "0.0.0-test"


def fake_uv_cache(root: Path, cmakelists: str) -> Path:
    """uv's layout of a built sdist: sdists-v*/pypi/<name>/<version>/<id>/src/vendor/..."""
    src = root / "sdists-v11/pypi/llama-cpp-python" / VERSION / "AbCd/src/vendor/llama.cpp"
    src.mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(cmakelists)
    (src / "ggml.c").write_text("int x;\n")
    return src


@pytest.fixture
def caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv"))
    monkeypatch.setenv("PHASE_CACHE", str(tmp_path / "phase"))
    return tmp_path


def test_sources_from_uv_cache_and_hash_follows_every_byte(caches: Path) -> None:
    assert native_tools.uv_cached_source(VERSION) is None
    src = fake_uv_cache(caches / "uv", "project(x)\n")
    assert native_tools.uv_cached_source(VERSION) == src
    first = native_tools.source_hash(src)
    assert first == native_tools.source_hash(src)
    (src / "ggml.c").write_text("int y;\n")
    second = native_tools.source_hash(src)
    assert second != first
    (src / "ggml.c").rename(src / "ggml2.c")  # same bytes, another name
    assert native_tools.source_hash(src) != second
    assert native_tools.build_dir(VERSION, first) != native_tools.build_dir(VERSION, second)
    assert native_tools.build_dir(VERSION, first).name == f"{VERSION}-{first[:16]}"


def test_a_stamped_build_is_reused_without_cmake(caches: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    src = fake_uv_cache(caches / "uv", "this is not cmake\n")
    digest = native_tools.source_hash(src)
    root = native_tools.build_dir(VERSION, digest)
    (root / "build" / "bin").mkdir(parents=True)
    options = (*native_tools.native.build_options(), *native_tools.CPU_ONLY)
    stamp = native_tools._stamp(VERSION, digest, options)
    (root / native_tools.STAMP).write_text(json.dumps(stamp))
    monkeypatch.setenv("PATH", "/nonexistent")  # cmake unreachable: a rebuild would fail
    assert native_tools.ensure_tools(lambda _m: None, VERSION) == root / "build" / "bin"


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_a_failed_step_is_named_with_its_log(caches: Path) -> None:
    fake_uv_cache(caches / "uv", "cmake_minimum_required(VERSION 3.14)\n"
                  "message(FATAL_ERROR \"phase test: configure fails here\")\n")
    with pytest.raises(native_tools.BuildError, match=r"the configure step failed .*"
                       r"read .*configure\.log") as err:
        native_tools.ensure_tools(lambda _m: None, VERSION)
    log = Path(str(err.value).split("read ")[1].split(" for")[0])
    assert "phase test: configure fails here" in log.read_text()
    assert not (log.parent / native_tools.STAMP).exists()  # a failed build is not reused


# --- llama-server (bench/server_build.py): the same sources and keys, the server switched on ---


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_the_server_is_built_with_the_web_ui_off_once_then_reused(
        caches: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # configure fails unless the server is on and neither UI option could reach the network
    src = fake_uv_cache(caches / "uv", "cmake_minimum_required(VERSION 3.14)\nproject(t C)\n"
                        "if(NOT LLAMA_BUILD_SERVER OR LLAMA_BUILD_UI OR LLAMA_USE_PREBUILT_UI)\n"
                        "  message(FATAL_ERROR \"phase test: server off or UI on\")\nendif()\n"
                        "add_executable(llama-server server.c)\n"
                        "set_target_properties(llama-server PROPERTIES "
                        "RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)\n")
    (src / "server.c").write_text("int main(void) { return 0; }\n")
    binary = server_build.ensure_server(lambda _m: None, VERSION)
    root = server_build.build_root(VERSION, native_tools.source_hash(src))
    assert binary == root / "build" / "bin" / "llama-server" and binary.is_file()
    stamp = json.loads((root / native_tools.STAMP).read_text())
    assert "-DLLAMA_BUILD_SERVER=ON" in stamp["options"]
    assert "-DLLAMA_BUILD_SERVER=OFF" not in stamp["options"]
    # the native tools' own build directory is another one: their stamps stay valid
    assert root != native_tools.build_dir(VERSION, native_tools.source_hash(src))
    monkeypatch.setenv("PATH", "/nonexistent")  # cmake unreachable: a rebuild would fail
    monkeypatch.setattr(native_tools, "find_cmake", lambda: "/nonexistent/cmake")
    assert server_build.ensure_server(lambda _m: None, VERSION) == binary
