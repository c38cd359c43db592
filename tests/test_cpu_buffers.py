"""llama.cpp's extra CPU buffer types: the decision, its reason, and a batch that must not crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from phase.base.errors import UsageProblem
from phase.decode import cpu_buffers
from phase.decode.native import ContextOptions, NativeModel


def test_explicit_modes_skip_the_probe(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"not read")
    assert cpu_buffers.resolve("on", model, "build").enabled is True
    off = cpu_buffers.resolve("off", model, "build")
    assert off.enabled is False and "explicitly" in off.reason


def test_unknown_mode_is_a_usage_problem(tmp_path: Path) -> None:
    with pytest.raises(UsageProblem, match="auto, on, off"):
        cpu_buffers.resolve("maybe", tmp_path / "m.gguf", "build")


def test_cpu_flags_read_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 amx_tile avx2\n")
    assert {"amx_tile", "avx2"} <= cpu_buffers.cpu_flags(info)
    assert cpu_buffers.cpu_flags(tmp_path / "missing") == set()


@pytest.mark.model
def test_auto_decision_lets_a_multi_token_batch_run(
    test_model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh cache, so the probe (where the CPU reports AMX) really runs in a child process.
    monkeypatch.setenv("PHASE_CACHE", str(tmp_path))
    model = NativeModel(test_model_path, ContextOptions(n_ctx=256))
    try:
        decision = model.extra_buffers
        assert decision.reason
        if not {"amx_tile", "amx_int8", "amx_bf16"} & cpu_buffers.cpu_flags():
            assert decision.enabled
        # The batch shape that crashes the broken AMX path: it must run in this process.
        model.decode(list(range(100, 140)), 0, 1)
        assert 0 <= model.argmax(0) < model.n_vocab
    finally:
        model.close()
    again = cpu_buffers.for_this_build(test_model_path)
    assert again == decision  # cached verdict, same answer


def test_native_tools_mirror_the_bindings_amx_choice() -> None:
    """bench's native llama.cpp must run the kernels phase runs: a binding built without AMX
    on an AMX CPU means native tools without AMX; elsewhere no extra flags."""
    from bench.native import NO_AMX, mirror_options

    amx_cpu = {"avx2", "amx_tile", "amx_int8", "amx_bf16"}
    assert mirror_options(amx_cpu, {"AVX2", "REPACK"}) == (
        f"-DCMAKE_C_FLAGS={NO_AMX}", f"-DCMAKE_CXX_FLAGS={NO_AMX}")
    assert mirror_options(amx_cpu, {"AVX2", "AMX_INT8"}) == ()
    assert mirror_options({"avx2"}, {"AVX2"}) == ()
