"""Version 11's records for a memory study: how a derived model variant was made, the inputs of
a model's bytes-per-token estimate, and the machine's memory bandwidth as phase measured it.
"""

from __future__ import annotations

from typing import Any, Literal

from phase.results.base import NonNegFloat, NonNegInt, PosInt, Strict


class VariantInfo(Strict):
    """A model re-stored in another GGUF format: the spec that named it, the recipe
    (source sha256, format, quantizer parameters and version) and the bytes stored in each
    ggml tensor type of the output."""

    spec: str
    recipe: dict[str, Any]
    stored_types: dict[str, NonNegInt]


class BytesEstimate(Strict):
    """The inputs of bytes/token(n) = W + KV(n) (phase.costmodel.bytes_per_token): an
    estimate from the GGUF header, stated with its formula."""

    weights_bytes: NonNegInt  # W
    kv_bytes_per_position: NonNegFloat  # KV(n) / n
    kv_type: str
    formula: str


class BandwidthMeasurement(Strict):
    """The machine's memory bandwidth by one STREAM-style kernel at one thread count
    (phase.bandwidth): best and median GB/s (10^9 bytes/s) of its timed passes, and how."""

    kernel: Literal["copy", "triad"]
    threads: PosInt
    array_bytes: PosInt
    repeats: PosInt
    bytes_per_pass: PosInt
    best_gb_s: NonNegFloat
    median_gb_s: NonNegFloat
    times_s: list[NonNegFloat]
    llc_bytes: PosInt | None
    meets_llc_rule: bool
    write_allocate_counted: bool
    method: str
    # When: "before" or "after" the runs.
    measured: Literal["before", "after"]
