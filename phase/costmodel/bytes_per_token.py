"""Bytes a decoder reads from memory per generated token, estimated from a GGUF header.

An estimate, stated with its formula: generating one token runs one forward pass, which
streams every weight matrix once (a token's matrix-vector products touch each weight) and
reads the KV cache of every earlier position in every layer. So

    bytes/token(n) = W + KV(n)
    W     = sum of the stored bytes of every weight tensor, except the token embedding,
            of which a lookup reads one row; where the output matrix is tied to the token
            embedding (no `output.weight`), the embedding is read whole, once, as the output
            matrix
    KV(n) = n_layer x n_kv_heads x (d_k + d_v) x b x n     (d_k = d_v = head_dim: 2 x head_dim)

with n the context fill (positions already in the cache), b the bytes per cached element (2:
llama.cpp's default f16 cache), d_k and d_v from `<arch>.attention.key_length` and
`.value_length` where the header has them, else embedding_length / head_count. A tensor's
stored bytes follow from ggml's block sizes (phase.models.gguf.GGML_TYPES). What it leaves out:
activations and logits (kilobytes against megabytes of weights), caches reused between
layers, and sliding-window layers, which read at most their window (counted at the full
fill: an upper bound for such models). `<arch>.attention.head_count_kv` given per layer (an
array) is not read, as phase's header reader keeps only an array's length, and is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from phase.base.errors import PhaseError
from phase.models.gguf import GGML_TYPES, GgufHeader, read_header

TOKEN_EMBEDDING = "token_embd.weight"
OUTPUT = "output.weight"
KV_DEFAULT_TYPE = "F16"  # llama.cpp's default type_k and type_v

FORMULA = ("bytes/token(n) = W + KV(n); W = bytes of every weight tensor except the token "
           "embedding (one row of it read per token; read whole, once, where the output matrix "
           "is tied to it); KV(n) = n_layer x n_kv_heads x (d_k + d_v) x b x n")


class BytesPerTokenError(PhaseError):
    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)


@dataclass(frozen=True)
class KvShape:
    """What one cached position costs: per layer, K and V for each KV head."""

    n_layer: int
    n_kv_heads: int
    d_k: int
    d_v: int
    bytes_per_element: float
    kv_type: str

    @property
    def bytes_per_position(self) -> float:
        return self.n_layer * self.n_kv_heads * (self.d_k + self.d_v) * self.bytes_per_element


@dataclass(frozen=True)
class BytesPerToken:
    """The estimate at one fill, with each term, so a note can print how it was reached."""

    weights: int  # W: bytes of weights streamed per token
    embedding_row: int  # bytes of the one token-embedding row in W (0 where tied)
    tied_output: bool
    kv: KvShape
    fill: int  # n

    @property
    def kv_bytes(self) -> float:
        return self.kv.bytes_per_position * self.fill

    @property
    def total(self) -> float:
        return self.weights + self.kv_bytes

    @property
    def formula(self) -> str:
        return FORMULA

    def terms(self) -> dict[str, float | int | str | bool]:
        k = self.kv
        return {"W": self.weights, "embedding_row": self.embedding_row,
                "tied_output": self.tied_output, "n_layer": k.n_layer,
                "n_kv_heads": k.n_kv_heads, "d_k": k.d_k, "d_v": k.d_v,
                "b": k.bytes_per_element, "kv_type": k.kv_type, "n": self.fill,
                "KV": self.kv_bytes, "total": self.total}

    def lines(self) -> list[str]:
        """The formula, then the figures put into it, for a note or the terminal."""
        k = self.kv
        tied = ("output tied to the embedding: read whole once" if self.tied_output
                else f"incl. one embedding row of {self.embedding_row:,} B")
        return [self.formula,
                f"W = {self.weights:,} B ({tied})",
                f"KV({self.fill}) = {k.n_layer} x {k.n_kv_heads} x ({k.d_k} + {k.d_v}) x "
                f"{k.bytes_per_element:g} x {self.fill} = {self.kv_bytes:,.0f} B",
                f"bytes/token({self.fill}) = {self.total:,.0f} B"]


def weight_bytes(header: GgufHeader) -> tuple[int, int, bool]:
    """(W, the embedding row's bytes within it, whether the output is tied to the embedding)."""
    names = {t.name for t in header.tensors}
    tied = OUTPUT not in names
    total, row = 0, 0
    for t in header.tensors:
        if t.name == TOKEN_EMBEDDING and not tied:
            # shape is (embedding_length, vocab): ggml's first dimension is the row length.
            rows = t.shape[-1] if len(t.shape) > 1 else 1
            row = t.n_bytes // rows
            total += row
        else:
            total += t.n_bytes
    return total, row, tied


def _int_field(header: GgufHeader, key: str, required: bool = True) -> int | None:
    value = header.metadata.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise BytesPerTokenError(
            f"GGUF metadata {key} is {value!r}, not a positive integer: the KV cache's shape "
            "cannot be read from this header (give a model whose header records it)")
    return value


def kv_shape(header: GgufHeader, kv_type: str = KV_DEFAULT_TYPE) -> KvShape:
    """The KV cache's shape per position, from the header's `<arch>.*` metadata."""
    arch = header.metadata.get("general.architecture")
    if not isinstance(arch, str):
        raise BytesPerTokenError("GGUF metadata general.architecture is missing: the KV "
                                 "fields are named after it")
    kinds = {t.name: t for t in GGML_TYPES.values()}
    kind = kinds.get(kv_type.upper())
    if kind is None:
        raise BytesPerTokenError(f"KV cache type {kv_type!r} is not a ggml type; use one of "
                                 f"{', '.join(sorted(kinds))}")
    n_layer = _int_field(header, f"{arch}.block_count")
    heads = _int_field(header, f"{arch}.attention.head_count")
    n_kv = _int_field(header, f"{arch}.attention.head_count_kv", required=False) or heads
    d_k = _int_field(header, f"{arch}.attention.key_length", required=False)
    d_v = _int_field(header, f"{arch}.attention.value_length", required=False)
    if d_k is None or d_v is None:
        width = _int_field(header, f"{arch}.embedding_length")
        assert width is not None and heads is not None
        d_k, d_v = d_k or width // heads, d_v or width // heads
    assert n_layer is not None and n_kv is not None
    return KvShape(n_layer, n_kv, d_k, d_v, kind.block_bytes / kind.block, kind.name)


def bytes_per_token(header: GgufHeader, fill: int, kv_type: str = KV_DEFAULT_TYPE
                    ) -> BytesPerToken:
    """The estimate for a token generated with `fill` positions already in the cache."""
    if fill < 0:
        raise BytesPerTokenError(f"context fill {fill} is negative; give 0 or more positions")
    weights, row, tied = weight_bytes(header)
    return BytesPerToken(weights, row, tied, kv_shape(header, kv_type), fill)


def of_file(path: Path | str, fill: int, kv_type: str = KV_DEFAULT_TYPE) -> BytesPerToken:
    """`bytes_per_token` of the GGUF file at `path` (its header only is read)."""
    return bytes_per_token(read_header(path), fill, kv_type)
