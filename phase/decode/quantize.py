"""llama.cpp's own quantizer, `llama_model_quantize`, through the binding's low-level API.

A model variant is the same weights stored in another GGUF format; llama.cpp's quantizer is
what every GGUF file of a format was made with, so using it (rather than a re-implementation)
gives the files llama.cpp itself would. `allow_requantize` lets it start from an already
quantized file: requantizing a Q4_K_M file to Q8_0 or F16 stores the same (dequantized)
weight values in more bytes.
"""

from __future__ import annotations

import contextlib
import ctypes

import llama_cpp

from phase.decode import backend

# Storage format names as llama.cpp's `llama-quantize` tool spells them -> the binding's
# LLAMA_FTYPE_* constants (llama.h's enum llama_ftype).
FTYPES: dict[str, int] = {
    "F32": llama_cpp.LLAMA_FTYPE_ALL_F32,
    "F16": llama_cpp.LLAMA_FTYPE_MOSTLY_F16,
    "BF16": llama_cpp.LLAMA_FTYPE_MOSTLY_BF16,
    "Q8_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0,
    "Q6_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q6_K,
    "Q5_K_M": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_K_M,
    "Q5_K_S": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_K_S,
    "Q5_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_0,
    "Q5_1": llama_cpp.LLAMA_FTYPE_MOSTLY_Q5_1,
    "Q4_K_M": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M,
    "Q4_K_S": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_S,
    "Q4_0": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_0,
    "Q4_1": llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_1,
    "Q3_K_L": llama_cpp.LLAMA_FTYPE_MOSTLY_Q3_K_L,
    "Q3_K_M": llama_cpp.LLAMA_FTYPE_MOSTLY_Q3_K_M,
    "Q3_K_S": llama_cpp.LLAMA_FTYPE_MOSTLY_Q3_K_S,
    "Q2_K": llama_cpp.LLAMA_FTYPE_MOSTLY_Q2_K,
}


# The parameter fields a recipe records (the pointers, for an imatrix or overrides, stay null).
_SCALARS = (ctypes.c_int, ctypes.c_int32, ctypes.c_bool, ctypes.c_size_t, ctypes.c_uint64)


class QuantizeFailed(Exception):
    """llama_model_quantize returned non-zero; the message carries llama.cpp's own error."""


def versions() -> dict[str, str]:
    """The quantizer's provenance: binding version and the llama.cpp it wraps."""
    found = {"llama_cpp_python": str(llama_cpp.__version__)}
    with contextlib.suppress(AttributeError, OSError):
        found["llama_cpp"] = llama_cpp.llama_version().decode()
    return found


def default_params(ftype: str, nthread: int) -> dict[str, object]:
    """The parameters a quantization runs with: llama.cpp's defaults, plus requantizing
    allowed, the format and the threads. Scalars only, so a recipe can record them."""
    p = llama_cpp.llama_model_quantize_default_params()
    p.ftype, p.nthread, p.allow_requantize = FTYPES[ftype], nthread, True
    return {name: getattr(p, name) for name, kind in p._fields_
            if kind in _SCALARS}


def quantize(source: str, out: str, params: dict[str, object]) -> None:
    """Write `source` re-stored as `params["ftype"]` to `out` with llama.cpp's quantizer."""
    backend.init(verbose=False)
    p = llama_cpp.llama_model_quantize_default_params()
    for name, value in params.items():
        setattr(p, name, value)
    rc = llama_cpp.llama_model_quantize(source.encode(), out.encode(), ctypes.byref(p))
    if rc != 0:
        raise QuantizeFailed(f"llama_model_quantize returned {rc}{backend.native_error()}")
