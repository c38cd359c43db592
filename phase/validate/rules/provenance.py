"""provenance (blocking): what the file says its models and its machine are, cross-checked.

A memory study's figures are read against the models' sizes and the machine's bandwidth, so
these records are recomputed from each other, never taken as written:

- a derived variant (`models[].variant`) is what its recipe made: the recorded `quant` is the
  recipe's format (and the spec's), the recipe's llama.cpp file type is that format's, the
  recipe's output bytes and sha256 are the model's own, its stored types are the recipe's and
  fit in the file;
- the quantisation a model records fits its file: the weights' count follows from the bytes a
  variant of the same weights stores per ggml type (phase.models.gguf.GGML_TYPES: elements =
  bytes x block / block bytes), and the file's bits per weight must lie near the recorded
  format's nominal ones (`BITS_PER_WEIGHT`, from `_LOW` to `_HIGH` times them: small models
  keep their embeddings and odd-sized tensors in wider types, so a Q2_K file of a 0.5B model
  stores over 5 bits per weight; a Q4_K_M file recorded as F32 stores a fifth of 32);
- a model's bytes per token read no more weights than its file holds;
- each bandwidth measurement's best and median are its bytes per pass over its shortest and
  median recorded time, its bytes per pass the kernel's words per element over its arrays
  (phase.bandwidth.stream), and it records one time per repeat.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from phase.bandwidth.stream import WORDS_PER_ELEMENT
from phase.models.gguf import GGML_TYPES
from phase.results import ModelInfo, ResultsFile
from phase.validate.registry import Rule
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings

# Nominal bits per weight of llama.cpp's file formats (the main type of their matrices).
BITS_PER_WEIGHT = {
    "F32": 32.0, "F16": 16.0, "BF16": 16.0, "Q8_0": 8.5, "Q6_K": 6.5625,
    "Q5_K_M": 5.5, "Q5_K_S": 5.5, "Q5_0": 5.5, "Q5_1": 6.0, "Q4_K_M": 4.5, "Q4_K_S": 4.5,
    "Q4_0": 4.5, "Q4_1": 5.0, "Q3_K_L": 3.4375, "Q3_K_M": 3.4375, "Q3_K_S": 3.4375,
    "Q2_K": 2.625,
}
# llama.h's enum llama_ftype, by the names llama-quantize spells (phase.decode.quantize).
LLAMA_FTYPES = {
    "F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q2_K": 10,
    "Q3_K_S": 11, "Q3_K_M": 12, "Q3_K_L": 13, "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16,
    "Q5_K_M": 17, "Q6_K": 18, "BF16": 32,
}
_LOW, _HIGH = 0.75, 2.5
_REL = 1e-6
_BY_NAME = {t.name: t for t in GGML_TYPES.values()}


def check(results: ResultsFile, settings: RuleSettings, ctx: Context) -> list[Finding]:
    out: list[Finding] = []

    def block(message: str, path: str, numbers: dict[str, float] | None = None) -> None:
        out.append(ctx.finding("provenance", "blocking", message, json_path=path,
                               numbers=numbers))

    weights = _weights_by_sha(results)
    for i, model in enumerate(results.models):
        where = f"$.models[{i}]"
        for message, field in _variant(model):
            block(message, f"{where}.{field}")
        count = weights.get(model.sha256)
        nominal = BITS_PER_WEIGHT.get((model.quant or "").upper())
        if count and nominal:
            bits = model.size_bytes * 8 / count
            if not _LOW * nominal <= bits <= _HIGH * nominal:
                block(f"quant is {model.quant}, but its {model.size_bytes} bytes hold "
                      f"{bits:.3g} bits per weight of its {count} weights (from the bytes a "
                      f"variant of these weights stores per type); {model.quant} stores about "
                      f"{nominal:g}", f"{where}.quant",
                      {"bits_per_weight": bits, "nominal_bits": nominal, "weights": count,
                       "size_bytes": model.size_bytes})
        estimate = model.bytes_per_token
        if estimate is not None and estimate.weights_bytes > model.size_bytes:
            block(f"bytes_per_token reads {estimate.weights_bytes} bytes of weights per token, "
                  f"more than the model's whole file ({model.size_bytes} bytes)",
                  f"{where}.bytes_per_token.weights_bytes",
                  {"weights_bytes": estimate.weights_bytes, "size_bytes": model.size_bytes})
    for j, m in enumerate(results.bandwidth or []):
        for message, field, numbers in _bandwidth(m):
            block(message, f"$.bandwidth[{j}].{field}", numbers)
    return out


def _weights(stored: dict[str, int]) -> int | None:
    """How many weights these bytes per ggml type hold; None where a type is unknown."""
    total = 0
    for name, size in stored.items():
        kind = _BY_NAME.get(name)
        if kind is None:
            return None
        total += size * kind.block // kind.block_bytes
    return total


def _weights_by_sha(results: ResultsFile) -> dict[str, int]:
    """Model sha256 -> its weights' count, from the stored types of a variant of it (the
    variant's own sha256, and its source's: quantizing keeps every weight)."""
    out: dict[str, int] = {}
    for model in results.models:
        if model.variant is None:
            continue
        count = _weights(model.variant.stored_types)
        if count:
            out.setdefault(model.sha256, count)
            source = model.variant.recipe.get("source_sha256")
            if isinstance(source, str):
                out.setdefault(source, count)
    return out


def _variant(model: ModelInfo) -> list[tuple[str, str]]:
    variant = model.variant
    if variant is None:
        return []
    recipe: dict[str, Any] = variant.recipe
    out = []
    ftype = str(recipe.get("ftype", "")).upper()
    named = variant.spec.rpartition(":")[2].upper()
    if (model.quant or "").upper() != ftype or named != ftype:
        out.append((f"quant is {model.quant}, but the variant's recipe made {ftype or 'nothing'}"
                    f" (spec {variant.spec})", "quant"))
    code = recipe.get("llama_ftype")
    if ftype in LLAMA_FTYPES and code is not None and code != LLAMA_FTYPES[ftype]:
        out.append((f"the recipe's llama_ftype {code} is not {ftype}'s "
                    f"({LLAMA_FTYPES[ftype]})", "variant.recipe.llama_ftype"))
    for key, own in (("output_bytes", model.size_bytes), ("output_sha256", model.sha256)):
        if key in recipe and recipe[key] != own:
            out.append((f"the recipe's {key} {recipe[key]} is not the model's own {own}",
                        f"variant.recipe.{key}"))
    if "stored_types" in recipe and recipe["stored_types"] != variant.stored_types:
        out.append(("stored_types differ from the recipe's", "variant.stored_types"))
    stored = sum(variant.stored_types.values())
    if stored > model.size_bytes:
        out.append((f"the stored types hold {stored} bytes, more than the file's "
                    f"{model.size_bytes}", "variant.stored_types"))
    return out


def _bandwidth(m: Any) -> list[tuple[str, str, dict[str, float]]]:
    out = []
    if len(m.times_s) != m.repeats:
        out.append((f"{len(m.times_s)} times recorded for {m.repeats} repeats", "times_s",
                    {"times": len(m.times_s), "repeats": m.repeats}))
    words = WORDS_PER_ELEMENT[m.kernel] + (1 if m.write_allocate_counted else 0)
    if m.bytes_per_pass != words * m.array_bytes:
        out.append((f"bytes_per_pass is {m.bytes_per_pass}, but {m.kernel} moves {words} arrays "
                    f"of {m.array_bytes} bytes per pass", "bytes_per_pass",
                    {"bytes_per_pass": m.bytes_per_pass, "expected": words * m.array_bytes}))
    times = [t for t in m.times_s if t > 0]
    if not times:
        return out
    for field, time_s, what in (("best_gb_s", min(times), "shortest"),
                                ("median_gb_s", statistics.median(times), "median")):
        expected = m.bytes_per_pass / time_s / 1e9
        recorded = getattr(m, field)
        if not math.isclose(recorded, expected, rel_tol=_REL):
            out.append((f"{field} is {recorded:.6g}, but {m.bytes_per_pass} bytes over the "
                        f"{what} recorded time ({time_s:.6g} s) is {expected:.6g} GB/s", field,
                        {field: recorded, "expected": expected, "time_s": time_s}))
    return out


RULE = Rule(order=15, check=check)
