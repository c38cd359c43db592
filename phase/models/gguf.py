"""A GGUF file's header read directly: metadata and tensor infos, never tensor data.

llama.cpp reads the same header, but its binding answers some questions wrongly for some
files (`llama_model_ftype` gave 0, "all F32", for the embedded Q4_K_M target in the binding
this project pins), and a header is all one needs to say what a file stores. The reader keeps
to the format as the GGUF specification (ggml's docs/gguf.md) defines it, versions 2 and 3,
and reads only the first bytes of the file, so it also works on a file's first part.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from phase.base.errors import PhaseError

MAGIC = b"GGUF"
# GGUF value types (gguf.md): fixed-size scalars by struct format, then string, array, bool.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 10: "<Q", 11: "<q",
            12: "<d"}
_BOOL, _STRING, _ARRAY = 7, 8, 9
# A header larger than this is not a header: a corrupt length would otherwise allocate it.
_MAX_STRING = 1 << 24
_MAX_ITEMS = 1 << 26
_MAX_DIMS = 8
# Where `general.alignment` is absent, tensor data is aligned to 32 bytes (gguf.md).
DEFAULT_ALIGNMENT = 32


@dataclass(frozen=True)
class GgmlType:
    """How ggml stores one tensor type: `block` elements in `block_bytes` bytes."""

    name: str
    block: int
    block_bytes: int


# ggml's types by id (ggml.h's enum ggml_type), with block size and bytes per block as
# ggml.c's type_traits defines them (blck_size, type_size). Ids 4-5, 31-33 and 36-38 are
# removed types no file stores. tests/test_gguf.py checks every row against the linked ggml.
GGML_TYPES: dict[int, GgmlType] = {i: GgmlType(n, b, s) for i, n, b, s in (
    (0, "F32", 1, 4), (1, "F16", 1, 2), (2, "Q4_0", 32, 18), (3, "Q4_1", 32, 20),
    (6, "Q5_0", 32, 22), (7, "Q5_1", 32, 24), (8, "Q8_0", 32, 34), (9, "Q8_1", 32, 36),
    (10, "Q2_K", 256, 84), (11, "Q3_K", 256, 110), (12, "Q4_K", 256, 144),
    (13, "Q5_K", 256, 176), (14, "Q6_K", 256, 210), (15, "Q8_K", 256, 292),
    (16, "IQ2_XXS", 256, 66), (17, "IQ2_XS", 256, 74), (18, "IQ3_XXS", 256, 98),
    (19, "IQ1_S", 256, 50), (20, "IQ4_NL", 32, 18), (21, "IQ3_S", 256, 110),
    (22, "IQ2_S", 256, 82), (23, "IQ4_XS", 256, 136), (24, "I8", 1, 1), (25, "I16", 1, 2),
    (26, "I32", 1, 4), (27, "I64", 1, 8), (28, "F64", 1, 8), (29, "IQ1_M", 256, 56),
    (30, "BF16", 1, 2), (34, "TQ1_0", 256, 54), (35, "TQ2_0", 256, 66),
    (39, "MXFP4", 32, 17), (40, "NVFP4", 64, 36), (41, "Q1_0", 128, 18), (42, "Q2_0", 64, 18),
)}


def ggml_type_name(ggml_type: int) -> str:
    known = GGML_TYPES.get(ggml_type)
    return known.name if known else f"type {ggml_type}"


class GgufError(PhaseError):
    """A file that is not a GGUF file phase can read."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}; is it a GGUF model file?", exit_code=2)


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    ggml_type: int
    # Where its data starts, relative to the data section (a multiple of the alignment).
    offset: int = 0

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def type_name(self) -> str:
        return ggml_type_name(self.ggml_type)

    @property
    def n_bytes(self) -> int:
        """Bytes its data takes in the file: ggml stores whole blocks along the first
        dimension, so a row of n elements is n / block blocks of block_bytes each."""
        kind = GGML_TYPES.get(self.ggml_type)
        if kind is None:
            raise PhaseError(f"tensor {self.name!r}: ggml type {self.ggml_type} is not one "
                             "phase knows (phase.models.gguf.GGML_TYPES); update phase",
                             exit_code=2)
        if self.shape and self.shape[0] % kind.block:
            raise PhaseError(f"tensor {self.name!r}: its rows of {self.shape[0]} are not whole "
                             f"{kind.name} blocks of {kind.block}", exit_code=2)
        return self.n_elements // kind.block * kind.block_bytes


@dataclass(frozen=True)
class GgufHeader:
    version: int
    # Scalars as read; arrays as their length (the tokenizer's are large and never needed).
    metadata: dict[str, object]
    tensors: tuple[TensorInfo, ...]
    # Where tensor data starts in the file: the header's end, padded to `alignment`.
    data_offset: int = 0
    alignment: int = DEFAULT_ALIGNMENT

    def file_type(self) -> int | None:
        """`general.file_type`: llama.cpp's LLAMA_FTYPE of the file, None where not recorded."""
        value = self.metadata.get("general.file_type")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def data_end(self) -> int:
        """Where the last tensor's data ends: a complete file is at least this long."""
        return self.data_offset + max((t.offset + t.n_bytes for t in self.tensors), default=0)

    def dominant_tensor_type(self) -> int | None:
        """The ggml type that stores the most weights among the matrices (tensors of two or
        more dimensions): what a file whose header has no file type mostly is."""
        counts: dict[int, int] = {}
        for t in self.tensors:
            if len(t.shape) >= 2:
                counts[t.ggml_type] = counts.get(t.ggml_type, 0) + t.n_elements
        return max(counts, key=lambda k: counts[k]) if counts else None


class _Reader:
    def __init__(self, f: BinaryIO, path: Path) -> None:
        self.f, self.path = f, path

    def take(self, n: int) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise GgufError(self.path, "the header ends early")
        return data

    def unpack(self, fmt: str) -> int | float:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def count(self, limit: int, what: str) -> int:
        n = int(self.unpack("<Q"))
        if n > limit:
            raise GgufError(self.path, f"a {what} of {n} is beyond any real header")
        return n

    def string(self) -> str:
        return self.take(self.count(_MAX_STRING, "string length")).decode("utf-8", "replace")

    def value(self, kind: int) -> object:
        if kind in _SCALARS:
            return self.unpack(_SCALARS[kind])
        if kind == _BOOL:
            return bool(self.unpack("<B"))
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item = int(self.unpack("<I"))
            n = self.count(_MAX_ITEMS, "array length")
            skip: Callable[[], object] = (
                (lambda: self.take(struct.calcsize(_SCALARS[item]))) if item in _SCALARS
                else lambda: self.value(item))
            for _ in range(n):
                skip()
            return n
        raise GgufError(self.path, f"unknown metadata value type {kind}")


def read_header(path: Path | str) -> GgufHeader:
    """The header of the GGUF file at `path` (or of its first part)."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            r = _Reader(f, path)
            if r.take(4) != MAGIC:
                raise GgufError(path, "no GGUF magic at its start")
            version = int(r.unpack("<I"))
            if version not in (2, 3):
                raise GgufError(path, f"GGUF version {version} (phase reads versions 2 and 3)")
            n_tensors = r.count(_MAX_ITEMS, "tensor count")
            n_kv = r.count(_MAX_ITEMS, "metadata count")
            metadata: dict[str, object] = {}
            for _ in range(n_kv):
                key = r.string()
                metadata[key] = r.value(int(r.unpack("<I")))
            tensors = []
            for _ in range(n_tensors):
                name = r.string()
                n_dims = int(r.unpack("<I"))
                if n_dims > _MAX_DIMS:
                    raise GgufError(path, f"tensor {name!r} has {n_dims} dimensions")
                shape = tuple(int(r.unpack("<Q")) for _ in range(n_dims))
                ggml_type = int(r.unpack("<I"))
                tensors.append(TensorInfo(name, shape, ggml_type, int(r.unpack("<Q"))))
            header_end = f.tell()
    except OSError as e:
        raise GgufError(path, f"cannot be read ({e.strerror or e})") from None
    align = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(align, int) or isinstance(align, bool) or align <= 0:
        raise GgufError(path, f"general.alignment is {align!r}, not a positive integer")
    data_offset = -(-header_end // align) * align
    return GgufHeader(version, metadata, tuple(tensors), data_offset, align)
