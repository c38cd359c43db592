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

from phase.errors import PhaseError

MAGIC = b"GGUF"
# GGUF value types (gguf.md): fixed-size scalars by struct format, then string, array, bool.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 10: "<Q", 11: "<q",
            12: "<d"}
_BOOL, _STRING, _ARRAY = 7, 8, 9
# A header larger than this is not a header: a corrupt length would otherwise allocate it.
_MAX_STRING = 1 << 24
_MAX_ITEMS = 1 << 26
_MAX_DIMS = 8


class GgufError(PhaseError):
    """A file that is not a GGUF file phase can read."""

    def __init__(self, path: Path | str, problem: str) -> None:
        super().__init__(f"{path}: {problem}; is it a GGUF model file?", exit_code=2)


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    ggml_type: int

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class GgufHeader:
    version: int
    # Scalars as read; arrays as their length (the tokenizer's are large and never needed).
    metadata: dict[str, object]
    tensors: tuple[TensorInfo, ...]

    def file_type(self) -> int | None:
        """`general.file_type`: llama.cpp's LLAMA_FTYPE of the file, None where not recorded."""
        value = self.metadata.get("general.file_type")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

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
                r.unpack("<Q")  # the tensor's data offset
                tensors.append(TensorInfo(name, shape, ggml_type))
    except OSError as e:
        raise GgufError(path, f"cannot be read ({e.strerror or e})") from None
    return GgufHeader(version, metadata, tuple(tensors))
