"""What llama.cpp's system-info string says about the build: its accelerator backend and the
features it was compiled with. The one reader of that string, for a running build
(phase.decode.placement) and for a results file's `provenance.llama_cpp_system_info`
(phase.results.host_labels) alike, so the two cannot name one build differently.

`llama_print_system_info` lists each backend that reports features as `NAME : KEY = VALUE | ...`,
accelerators before the CPU's: a CUDA build prints
`CUDA : ARCHS = 900 | USE_GRAPHS = 1 | CPU : SSE3 = 1 | ... |`, a Metal build `MTL : ...`
(`Metal : ...` before llama.cpp renamed it), a CPU build only `CPU : ...`. phase records the
string after its own versions (`llama-cpp-python 0.3.36 | llama ... | ggml ... | CPU : ...`),
which name no backend. A backend that reports no features (Vulkan, for one) is not listed, and
llama.cpp before its backend registry printed bare `AVX = 1 | ...` pairs: there the string
names no accelerator, and only a running build can still say whether it offloads.
"""

from __future__ import annotations

import re

_SECTION = re.compile(r"(?:^|\| )(?P<name>[A-Za-z][A-Za-z0-9_]*) : ")
# Backends that compute on the host: listing one does not make the build an accelerator's.
_HOST_BACKENDS = {"cpu", "blas", "rpc", "amx", "llamafile"}
_ALIASES = {"mtl": "metal", "hip": "rocm"}


def backend_kind(name: str) -> str:
    """A backend's name as phase records it: "CUDA" -> "cuda", "MTL" -> "metal"."""
    name = name.lower()
    return _ALIASES.get(name, name)


def named_accelerator(system_info: str | None) -> str | None:
    """The first accelerator backend the string lists ("cuda", "metal", "rocm", ...), None
    where it lists none."""
    for m in _SECTION.finditer(system_info or ""):
        kind = backend_kind(m.group("name"))
        if kind not in _HOST_BACKENDS:
            return kind
    return None


def build_accelerator(system_info: str | None, offload_supported: bool | None = None) -> str:
    """The accelerator the build has, "cpu" for none.

    `offload_supported` is llama.cpp's own answer where the build is running
    (`llama_supports_gpu_offload`); None where only the string is known (a results file).
    A build that cannot offload is "cpu" whatever it lists; one that can but whose string
    names no accelerator is "gpu" (it has one, unnamed); from the string alone, naming none
    means a CPU build.
    """
    if offload_supported is False:
        return "cpu"
    named = named_accelerator(system_info)
    if named is not None:
        return named
    return "gpu" if offload_supported else "cpu"


def enabled_features(system_info: str | None) -> set[str]:
    """The features every listed backend reports as on ("AVX2", "AMX_INT8", "USE_GRAPHS")."""
    out = set()
    for part in (system_info or "").split("|"):
        feature = part.rsplit(" : ", 1)[-1]
        key, eq, value = feature.partition("=")
        if eq and value.strip() == "1":
            out.add(key.strip())
    return out


def build_versions(system_info: str | None) -> str | None:
    """llama.cpp's version and ggml's (with its commit), as phase records them before the
    features ("llama 0.5.0-dev, ggml 0.25.3 (0c1e570-dirty)"); None where the string names
    neither (not recorded, or a string from before phase recorded them)."""
    parts = [p.strip() for p in (system_info or "").split("|")]
    named = [p for p in parts if p.startswith(("llama ", "ggml "))]
    return ", ".join(named) or None
