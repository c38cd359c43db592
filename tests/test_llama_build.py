"""One reading of llama.cpp's system-info string (phase.results.llama_build): a running build
(phase.decode.placement) and a results file's provenance (phase.results.host_labels) name the
same build the same way.

Before, hosts searched the string for backend words (falling back to "cpu") and placement
parsed its `NAME : ` sections (falling back to "gpu"); the strings below are where they
disagreed, with the answer decided for each.
"""

from __future__ import annotations

import pytest

from phase.decode import system_info, this_build
from phase.decode.placement import parse
from phase.results.host_labels import accelerator_build
from phase.results.llama_build import build_accelerator, enabled_features, named_accelerator

PREFIX = "llama-cpp-python 0.3.36 | llama 0.5.0-dev | ggml 0.25.3 (unknown) | "
# As recorded by the committed campaigns (results/speculative-x86_64-2c-2026-11-30.json) and
# the H200 device campaign (tests/fixtures/results/h200-campaign-512.json).
XEON_CPU = (PREFIX + "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | "
            "F16C = 1 | FMA = 1 | BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | "
            "AVX512_BF16 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |")
H200_CUDA = (PREFIX + "CUDA : ARCHS = 900 | NO_VMM = 1 | USE_GRAPHS = 1 | "
             "FA_QUANTS = q4_0-q4_0,q8_0-q8_0,f16-f16,bf16-bf16 | CPU : SSE3 = 1 | SSSE3 = 1 | "
             "AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | LLAMAFILE = 1 | OPENMP = 1 | "
             "REPACK = 1 |")
APPLE_CPU = "CPU : NEON = 1 | ARM_FMA = 1 | FP16_VA = 1 | DOTPROD = 1 | ACCELERATE = 1 |"
# llama_print_system_info's format for the other backends (llama.cpp src/llama.cpp: each
# registered backend with a features function, accelerators first): ggml-metal registers as
# "MTL" since it grew several devices ("Metal" before), its one feature EMBED_LIBRARY; a HIP
# build of ggml-cuda registers as "ROCm", a MUSA build as "MUSA".
METAL = PREFIX + "MTL : EMBED_LIBRARY = 1 | " + APPLE_CPU
METAL_OLDER = PREFIX + "Metal : EMBED_LIBRARY = 1 | " + APPLE_CPU
GPU_FEATURES = "USE_GRAPHS = 1 | PEER_MAX_BATCH_SIZE = 128 | CPU : AVX2 = 1 |"
ROCM = PREFIX + "ROCm : ARCHS = 1100 | " + GPU_FEATURES
MUSA = PREFIX + "MUSA : ARCHS = 21 | " + GPU_FEATURES


def _running(info: str, offload_supported: bool) -> str:
    """What phase.decode records for a model loaded by this build with no device logged."""
    return parse([], offload_supported=offload_supported, n_layer=28,
                 system_info=info).accelerator


@pytest.mark.parametrize(("info", "offload", "expected"), [
    (XEON_CPU, False, "cpu"),
    (H200_CUDA, True, "cuda"),
    (METAL_OLDER, True, "metal"),
    (ROCM, True, "rocm"),
    # Disagreed: hosts looked for the word "Metal" and read a current Metal build as "cpu".
    (METAL, True, "metal"),
    # Disagreed: hosts knew no MUSA and read it as "cpu"; it is the GPU the build targets.
    (MUSA, True, "musa"),
])
def test_a_build_is_named_alike_from_its_file_and_while_it_runs(
    info: str, offload: bool, expected: str
) -> None:
    assert accelerator_build(info) == expected
    assert _running(info, offload) == expected
    assert build_accelerator(info, offload) == expected


def test_a_string_that_names_no_accelerator() -> None:
    """Vulkan reports no features (so llama.cpp lists only its CPU), and llama.cpp before the
    backend registry printed bare pairs: the string alone says "cpu", which is what a results
    file's host identity has always said of such a build; a running build that can offload
    says "gpu" rather than claim the CPU, and one that cannot says "cpu" whatever it lists."""
    vulkan = PREFIX + "CPU : SSE3 = 1 | AVX2 = 1 | OPENMP = 1 | REPACK = 1 |"
    pre_registry = "AVX = 1 | AVX2 = 1 | FMA = 1 | NEON = 0 | BLAS = 1 | SSE3 = 1 | LLAMAFILE = 1 |"
    for info in (vulkan, pre_registry):
        assert named_accelerator(info) is None
        assert accelerator_build(info) == "cpu"
        assert _running(info, offload_supported=True) == "gpu"
        assert _running(info, offload_supported=False) == "cpu"
    assert _running(H200_CUDA, offload_supported=False) == "cpu"
    assert accelerator_build(None) is None and accelerator_build("") is None


def test_host_side_backends_are_not_accelerators() -> None:
    assert named_accelerator("BLAS : ACCELERATE = 1 | RPC : x = 1 | " + APPLE_CPU) is None
    assert named_accelerator("BLAS : ACCELERATE = 1 | Metal : EMBED_LIBRARY = 1 |") == "metal"


def test_a_device_named_in_the_load_log_uses_the_same_names() -> None:
    log = ["llama_model_load_from_file_impl: using device MTL0 (Apple M2 Pro) - 21845 MiB free\n",
           "load_tensors: offloaded 29/29 layers to GPU\n"]
    p = parse(log, offload_supported=True, n_layer=28, system_info=METAL)
    assert (p.accelerator, p.n_gpu_layers_offloaded) == ("metal", 29)


def test_enabled_features_from_every_listed_backend() -> None:
    features = enabled_features(H200_CUDA)
    assert {"NO_VMM", "USE_GRAPHS", "SSE3", "AVX2", "REPACK"} <= features
    assert not {"ARCHS", "FA_QUANTS", "AVX512", "CUDA", "CPU"} & features
    assert "AMX_INT8" not in enabled_features(XEON_CPU)
    assert "AMX_INT8" in enabled_features("CPU : AVX2 = 1 | AMX_INT8 = 1 |")
    assert "NEON" not in enabled_features("AVX = 1 | NEON = 0 |")


def test_this_build_agrees_with_what_its_results_file_will_say() -> None:
    assert this_build() == accelerator_build(system_info())
