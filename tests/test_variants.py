"""Model variants (phase.decode.variants): the test model re-stored by llama.cpp's own
quantizer, cached by recipe, its record kept beside it, its header checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from phase.cli import main
from phase.decode.variants import cache_key, derive, derive_variant, recipe_for, recipe_of
from phase.models import gguf
from phase.models.sources import ModelError, resolve
from phase.policy.strategies import parse_strategy

GGML_Q8_0, GGML_Q4_0, GGML_F32 = 8, 2, 0
LLAMA_FTYPE_Q8_0, LLAMA_FTYPE_Q4_0 = 7, 2


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PHASE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _matrix_types(path: Path, skip: str = "") -> set[int]:
    return {t.ggml_type for t in gguf.read_header(path).tensors
            if len(t.shape) >= 2 and t.name != skip}


def test_second_derivation_is_a_cache_hit_with_its_recipe(cache: Path,
                                                          test_model_path: Path) -> None:
    source = resolve(str(test_model_path))
    said: list[str] = []
    first = derive(source, "q8_0", nthread=1, progress=said.append)
    assert not first.cached and any("quantizing" in m for m in said)
    assert first.model.path.is_relative_to(cache / "variants")
    header = gguf.read_header(first.model.path)
    assert header.file_type() == LLAMA_FTYPE_Q8_0
    assert _matrix_types(first.model.path) == {GGML_Q8_0}
    recipe = recipe_of(first.model)
    assert recipe["source_sha256"] == source.sha256 and recipe["ftype"] == "Q8_0"
    assert recipe["llama_ftype"] == LLAMA_FTYPE_Q8_0
    assert recipe["params"]["allow_requantize"] is True  # type: ignore[index]
    assert recipe["llama_cpp_python"] and recipe["output_sha256"] == first.model.sha256
    assert first.stored_types["Q8_0"] > first.stored_types["F32"] > 0
    mtime = first.model.path.stat().st_mtime_ns

    said.clear()
    # Threads change how fast it runs, not the file: the same recipe, so the same entry.
    again = derive(test_model_path, "Q8_0", nthread=2, progress=said.append)
    assert again.cached and not any("quantizing" in m for m in said)
    assert again.model == first.model and first.model.path.stat().st_mtime_ns == mtime


def test_a_tampered_cached_file_is_derived_again(cache: Path, test_model_path: Path) -> None:
    path = derive_variant(test_model_path, "Q4_0", nthread=1).path
    good = recipe_of(resolve(str(path)))["output_sha256"]
    with path.open("r+b") as fh:
        fh.seek(path.stat().st_size - 10)
        fh.write(b"0123456789")
    said: list[str] = []
    redone = derive(test_model_path, "Q4_0", nthread=1, progress=said.append)
    assert not redone.cached and any("quantizing" in m for m in said)
    assert redone.model.sha256 == good


def test_recipe_key_follows_source_and_format_not_threads() -> None:
    base = cache_key(recipe_for("a" * 64, "Q8_0", 1))
    assert cache_key(recipe_for("a" * 64, "Q8_0", 7)) == base
    assert cache_key(recipe_for("b" * 64, "Q8_0", 1)) != base
    assert cache_key(recipe_for("a" * 64, "Q4_0", 1)) != base


def test_bad_input_names_the_fix(cache: Path, tmp_path: Path, test_model_path: Path) -> None:
    with pytest.raises(ModelError, match=r"unknown format 'Q9_9': use one of .*Q4_K_M.*Q2_K"):
        derive(test_model_path, "Q9_9")
    with pytest.raises(ModelError, match="source model is missing; fetch it"):
        derive(tmp_path / "absent.gguf", "Q8_0")
    result = CliRunner().invoke(main, ["models", "variant", str(test_model_path), "Q9"])
    assert result.exit_code == 2 and "use one of F32, F16" in result.stderr
    assert "Traceback" not in result.output


def test_cli_prints_the_path_and_recipe(cache: Path, test_model_path: Path) -> None:
    result = CliRunner().invoke(main, ["models", "variant", str(test_model_path), "Q4_0",
                                       "--threads", "1", "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert Path(record["path"]).is_file() and record["ftype"] == "Q4_0"
    assert "derived in" in result.stderr and "Q4_0" in result.stderr


@pytest.mark.model
def test_a_variant_loads_and_generates(cache: Path, test_model_path: Path) -> None:
    from phase.decode import Engine

    path = derive_variant(test_model_path, "Q4_0", nthread=1).path
    # The tied embedding stays at a higher precision (llama.cpp's choice for the output
    # matrix); every other matrix is Q4_0, as asked.
    assert _matrix_types(path, skip="token_embd.weight") == {GGML_Q4_0}
    with Engine(path, n_ctx=128, n_threads=1) as engine:
        prompt = engine.format_prompt("def add(a, b):", chat_template=False)
        result = engine.run(prompt, parse_strategy("plain"), 8)
    assert len(result.token_ids) == 8 and result.text and result.tokens_per_s > 0
