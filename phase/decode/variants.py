"""A model variant: a GGUF file re-stored in another format, derived reproducibly and cached.

`derive_variant(source, "Q8_0")` runs llama.cpp's own quantizer (phase.decode.quantize) on
the source file and keeps the result in the model cache under
`variants/<key>/`, where key = sha256(source sha256 + the recipe as canonical JSON). The
recipe names everything that decides the output bytes: the source's sha256, the format, the
quantizer's parameters (threads excepted: they change only how fast it runs) and the
binding's version. `recipe.json` beside the file records the recipe, the output's sha256 and
size, and the tensor types its header stores. A second call with the same recipe finds the
file, checks it against its sha256 stamp (phase.models.sources) and returns it without quantizing.
Derived files are never shipped in the repository: anyone with the source re-derives them.

Requantizing (a Q4_K_M file to Q8_0 or F16) stores the same weight values, dequantized, in
more bytes, to within the new format's rounding (F16: one f16 rounding of each value; Q8_0:
an 8-bit step per 32-weight block): a study of bytes per token then varies the bytes, not
what the weights learned. Not bit for bit, and the kernels differ by format, so greedy text
can still part: the test model's F16 and Q8_0 variants left its Q4_1 text at token 25 of 48
on one prompt. Going down (Q4_K_M to Q2_K) loses precision, as quantizing always does.

A model spec names a variant as `variant:SOURCE:FORMAT` (`parse_spec`): SOURCE is any model
spec (an embedded name, a .gguf path, hf:OWNER/REPO/FILE), FORMAT one of quantize.FTYPES, e.g.
`variant:qwen2.5-coder-0.5b:Q8_0`; a campaign derives it (or reuses the cached file) before
any weights load.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from phase.decode import quantize
from phase.decode.cores import physical_cores
from phase.models.gguf import GgufHeader, read_header
from phase.models.sources import (
    ModelError,
    ResolvedModel,
    cache_dir,
    resolve,
    sha256_file,
    stamp_matches,
    write_stamp,
)

Progress = Callable[[str], None]
RECIPE = "recipe.json"
VARIANT_PREFIX = "variant:"
# Parameters that change how the quantizer runs, not what it writes: recorded, not keyed.
_NOT_KEYED = ("nthread", "max_buf_size")
# Headroom over the estimated output size before quantizing into a nearly full disk.
_SPACE_MARGIN = 1.1


@dataclass(frozen=True)
class Variant:
    """A derived file and the record of how it was made."""

    model: ResolvedModel
    recipe: dict[str, object]
    stored_types: dict[str, int]  # ggml type name -> bytes of tensors stored in it
    cached: bool  # True where an earlier derivation was reused


def ftype_name(ftype: str) -> str:
    """The canonical name of a format, or a usage error listing the valid ones."""
    name = ftype.strip().upper()
    if name not in quantize.FTYPES:
        raise ModelError(f"unknown format {ftype!r}: use one of {', '.join(quantize.FTYPES)}",
                         exit_code=2)
    return name


def parse_spec(spec: str) -> tuple[str, str] | None:
    """(source, format) of a `variant:SOURCE:FORMAT` spec; None for a spec that names no
    variant; a usage error (exit 2) saying what to write for a malformed one."""
    if not spec.startswith(VARIANT_PREFIX):
        return None
    source, sep, ftype = spec[len(VARIANT_PREFIX):].rpartition(":")
    if not sep or not source or not ftype:
        raise ModelError(f"model spec {spec!r}: write variant:SOURCE:FORMAT, e.g. "
                         "variant:qwen2.5-coder-0.5b:Q8_0", exit_code=2)
    if source.startswith(VARIANT_PREFIX):
        raise ModelError(f"model spec {spec!r}: a variant's source must be a model, not "
                         "another variant; derive from the original file", exit_code=2)
    try:
        return source, ftype_name(ftype)
    except ModelError as exc:
        raise ModelError(f"model spec {spec!r}: {exc}", exit_code=2) from None


def recipe_for(source_sha256: str, ftype: str, nthread: int) -> dict[str, object]:
    name = ftype_name(ftype)
    return {"source_sha256": source_sha256, "ftype": name,
            "llama_ftype": quantize.FTYPES[name], "quantizer": "llama_model_quantize",
            "params": quantize.default_params(name, nthread), **quantize.versions()}


def cache_key(recipe: dict[str, object]) -> str:
    keyed = dict(recipe)
    params = recipe["params"]
    assert isinstance(params, dict)
    keyed["params"] = {k: v for k, v in params.items() if k not in _NOT_KEYED}
    text = json.dumps(keyed, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256((str(recipe["source_sha256"]) + text).encode()).hexdigest()


def stored_types(header: GgufHeader) -> dict[str, int]:
    """Bytes stored in each ggml type, largest first."""
    out: dict[str, int] = {}
    for t in header.tensors:
        out[t.type_name] = out.get(t.type_name, 0) + t.n_bytes
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _source(source: ResolvedModel | Path) -> ResolvedModel:
    path = source.path if isinstance(source, ResolvedModel) else Path(source)
    if not path.is_file():
        raise ModelError(f"{path}: the source model is missing; fetch it (`phase models fetch "
                         "NAME`) or give the path of a .gguf file", exit_code=2)
    return source if isinstance(source, ResolvedModel) else resolve(str(path))


def _reuse(path: Path, record_path: Path) -> dict[str, object] | None:
    """The recorded recipe where the cached file is the one it records, else None."""
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        return None
    sha = record.get("output_sha256") if isinstance(record, dict) else None
    if not isinstance(sha, str) or not path.is_file():
        return None
    if stamp_matches(path, sha):
        return record
    if sha256_file(path) == sha:
        write_stamp(path, sha)
        return record
    return None


def _estimate_bytes(header: GgufHeader, ftype: str) -> int:
    """An upper bound on the output's size: every matrix at 8.5 bits (Q8_0) or 16 (F16/BF16)
    or 32 (F32) per weight, the rest as stored."""
    per_weight = {"F32": 4.0, "F16": 2.0, "BF16": 2.0}.get(ftype, 34 / 32)
    return int(sum(t.n_elements * per_weight if len(t.shape) >= 2 else t.n_bytes
                   for t in header.tensors) * _SPACE_MARGIN) + header.data_offset


def _check_space(directory: Path, needed: int) -> None:
    free = shutil.disk_usage(directory).free
    if free < needed:
        raise ModelError(f"{directory}: {free / 1e6:.0f} MB free, the variant needs about "
                         f"{needed / 1e6:.0f} MB; free some space or set PHASE_CACHE to a "
                         "directory on a larger disk")


def _check_header(path: Path, name: str, llama_ftype: int) -> GgufHeader:
    header = read_header(path)
    if header.file_type() != llama_ftype:
        raise ModelError(f"{path}: general.file_type is {header.file_type()}, not {name}'s "
                         f"{llama_ftype}: llama.cpp did not write the format asked for")
    return header


def _derive_into(src: ResolvedModel, target: Path, recipe: dict[str, object],
                 say: Progress) -> dict[str, object]:
    """Quantize into a temporary file beside `target`, check it, then move it into place."""
    name = str(recipe["ftype"])
    params = recipe["params"]
    assert isinstance(params, dict)
    _check_space(target.parent, _estimate_bytes(read_header(src.path), name))
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".derive-") as tmp:
        partial = Path(tmp) / target.name
        say(f"quantizing {src.path.name} to {name} with llama.cpp "
            f"({params['nthread']} threads)")
        try:
            quantize.quantize(str(src.path), str(partial), params)
        except quantize.QuantizeFailed as exc:
            _check_space(target.parent, _estimate_bytes(read_header(src.path), name))
            raise ModelError(f"{src.path}: quantizing to {name} failed: {exc}") from None
        header = _check_header(partial, name, int(str(recipe["llama_ftype"])))
        say("hashing the variant")
        record = {**recipe, "output_sha256": sha256_file(partial),
                  "output_bytes": partial.stat().st_size, "stored_types": stored_types(header)}
        os.replace(partial, target)
    return record


def _write_record(record_path: Path, record: dict[str, object]) -> None:
    tmp = record_path.with_name(f".{record_path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    tmp.replace(record_path)


def _check_complete(path: Path) -> None:
    """Refuse a source whose tensors run past its end (a truncated download) before the
    cache is touched: the quantizer would only fail on it later."""
    end = read_header(path).data_end()
    size = path.stat().st_size
    if size < end:
        raise ModelError(f"{path}: truncated: its header places tensor data up to byte {end}, "
                         f"the file has {size}; fetch or copy it again", exit_code=2)


def _missing_dirs(directory: Path) -> list[Path]:
    """`directory` and those of its parents that do not exist yet, outermost first."""
    missing = []
    for d in (directory, *directory.parents):
        if d.exists():
            break
        missing.append(d)
    return missing[::-1]


def _derive_new(src: ResolvedModel, directory: Path, target: Path, recipe: dict[str, object],
                say: Progress) -> dict[str, object]:
    """Derive into the cache; on any failure remove what this call created (the variant, its
    directory and parents it made, while empty: another process's files are never touched)
    and nothing else."""
    made = _missing_dirs(directory)
    existed = target.exists()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        record = _derive_into(src, target, recipe, say)
        _write_record(directory / RECIPE, record)
        return record
    except BaseException as exc:
        if not existed:
            target.unlink(missing_ok=True)
        for d in reversed(made):
            try:
                d.rmdir()
            except OSError:
                break  # not empty (someone else's work) or gone: leave it
        if isinstance(exc, OSError):
            denied = exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS)
            raise ModelError(f"{directory}: cannot write the variant ({exc.strerror or exc}); "
                             "free some space or set PHASE_CACHE to a directory you can "
                             "write to", exit_code=2 if denied else 1) from None
        raise


def derive(source: ResolvedModel | Path, ftype: str, nthread: int | None = None,
           progress: Progress | None = None) -> Variant:
    """`source` re-stored as `ftype` by llama.cpp's quantizer, with its record; from the
    cache where an earlier call derived it with the same recipe. A source it cannot derive
    from (truncated, not GGUF) is refused with the cache untouched."""
    say = progress or (lambda _msg: None)
    name = ftype_name(ftype)  # a bad name is refused before the source is hashed
    src = _source(source)
    recipe = recipe_for(src.sha256, name, nthread or physical_cores())
    directory = cache_dir() / "variants" / cache_key(recipe)[:16]
    target = directory / f"{src.path.stem}.{name}.gguf"
    record = _reuse(target, directory / RECIPE)
    cached = record is not None
    if record is None:
        _check_complete(src.path)
        record = _derive_new(src, directory, target, recipe, say)
        write_stamp(target, str(record["output_sha256"]))
    else:
        say(f"cached: {target}")
    model = ResolvedModel(f"{src.name}-{name.lower()}", f"variant:{src.sha256}:{name}", target,
                          int(str(record["output_bytes"])), str(record["output_sha256"]))
    types = record.get("stored_types")
    kept = {str(k): int(v) for k, v in types.items()} if isinstance(types, dict) else {}
    return Variant(model, record, dict(sorted(kept.items(), key=lambda kv: -kv[1])), cached)


def derive_variant(source: ResolvedModel | Path, ftype: str, nthread: int | None = None,
                   progress: Progress | None = None) -> ResolvedModel:
    """The variant's file (see `derive` for its record)."""
    return derive(source, ftype, nthread, progress).model


def recipe_of(model: ResolvedModel) -> dict[str, object]:
    """The recorded recipe of a derived variant's file."""
    record_path = model.path.with_name(RECIPE)
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelError(f"{record_path}: no readable recipe ({exc}); derive the variant again "
                         "with `phase models variant`", exit_code=2) from None
    if not isinstance(record, dict):
        raise ModelError(f"{record_path}: not a recipe object; delete its directory and derive "
                         "the variant again", exit_code=2)
    return record
