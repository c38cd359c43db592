"""Bytes read per generated token (phase.costmodel.bytes_per_token), on the real test model's
header and on headers written here with the shapes the formula must handle."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_gguf import write_gguf

from phase.costmodel.bytes_per_token import (
    BytesPerTokenError,
    bytes_per_token,
    kv_shape,
    of_file,
    weight_bytes,
)
from phase.models import gguf

GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0 = 0, 1, 2, 8


def test_tensor_sizes_fill_the_real_files_data_section(test_model_path: Path) -> None:
    # Every tensor's stored bytes from ggml's block table, laid out at its offset: together
    # they must reach exactly the end of the file, with only alignment padding between.
    header = gguf.read_header(test_model_path)
    ordered = sorted(header.tensors, key=lambda t: t.offset)
    end = 0
    for t in ordered:
        assert t.offset % header.alignment == 0
        assert 0 <= t.offset - end < header.alignment, t.name
        end = t.offset + t.n_bytes
    data = test_model_path.stat().st_size - header.data_offset
    assert end == data
    assert data - sum(t.n_bytes for t in ordered) < header.alignment * len(ordered)


def test_real_model_kv_shape_and_total_by_hand(test_model_path: Path) -> None:
    # SmolLM2-135M: 30 layers, 9 heads of which 3 KV heads, width 576 -> head_dim 64.
    est = of_file(test_model_path, fill=1000)
    assert (est.kv.n_layer, est.kv.n_kv_heads, est.kv.d_k, est.kv.d_v) == (30, 3, 64, 64)
    assert est.kv.bytes_per_position == 30 * 3 * 2 * 64 * 2 == 23_040
    assert est.kv_bytes == 23_040 * 1000
    # Tied output (no output.weight): the embedding counts once, whole, and so W is every
    # tensor's bytes, i.e. the whole data section.
    header = gguf.read_header(test_model_path)
    assert est.tied_output and est.embedding_row == 0
    assert est.weights == sum(t.n_bytes for t in header.tensors)
    assert est.total == est.weights + 23_040_000
    q8 = of_file(test_model_path, fill=1000, kv_type="q8_0")
    assert q8.kv_bytes == pytest.approx(30 * 3 * 128 * 34 / 32 * 1000)


def test_untied_embedding_reads_one_row(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "m.gguf", {
        "general.architecture": "llama", "llama.block_count": 2,
        "llama.embedding_length": 64, "llama.attention.head_count": 4,
        "llama.attention.head_count_kv": 2, "llama.attention.key_length": 32,
        "llama.attention.value_length": 16,
    }, [("token_embd.weight", (64, 1000), GGML_Q8_0), ("output.weight", (64, 1000), GGML_F16),
        ("blk.0.attn_q.weight", (64, 64), GGML_Q4_0), ("blk.0.attn_norm.weight", (64,), GGML_F32)])
    weights, row, tied = weight_bytes(gguf.read_header(path))
    # Q8_0 row of 64 = 2 blocks x 34 B; output F16 64x1000x2; Q4_0 64x64 = 128 blocks x 18 B.
    assert (row, tied) == (68, False)
    assert weights == 68 + 128_000 + 128 * 18 + 64 * 4
    est = bytes_per_token(gguf.read_header(path), fill=10)
    # key_length and value_length differ and are taken as given, not width / heads.
    assert est.kv_bytes == 2 * 2 * (32 + 16) * 2 * 10
    text = "\n".join(est.lines())
    assert "one embedding row of 68 B" in text and "2 x 2 x (32 + 16) x 2 x 10" in text
    assert est.terms()["KV"] == est.kv_bytes and est.terms()["W"] == weights


def test_missing_kv_fields_and_bad_input_are_named(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "m.gguf", {"general.architecture": "llama",
                                            "llama.embedding_length": 64},
                      [("blk.0.attn_q.weight", (64, 64), GGML_Q4_0)])
    with pytest.raises(BytesPerTokenError, match=r"llama\.block_count is None"):
        kv_shape(gguf.read_header(path))
    with pytest.raises(BytesPerTokenError, match=r"KV cache type 'f17'.*F16"):
        kv_shape(gguf.read_header(path), "f17")
    with pytest.raises(BytesPerTokenError, match="fill -1"):
        bytes_per_token(gguf.read_header(path), -1)
