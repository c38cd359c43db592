"""`phase models variant` on a source it cannot derive from leaves the model cache as it found
it: a truncated GGUF (cut in its tensor data or in its header), a file that is not GGUF, and a
full disk while llama.cpp's quantizer writes (a real file-size limit, RLIMIT_FSIZE) are each one
`error:` line, and no `variants/<key>/` directory (nor `variants/` itself, where phase made it)
stays behind; a `variants/` that was already there is kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox import assert_one_line_error, run_phase


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _cut(source: Path, to: Path, size: int) -> Path:
    with source.open("rb") as f:
        to.write_bytes(f.read(size))
    return to


@pytest.mark.parametrize("existing", [False, True], ids=["fresh-cache", "variants-there"])
@pytest.mark.parametrize(("make", "needle"), [
    (lambda src, d: _cut(src, d / "cut-data.gguf", 3_000_000), "truncated: its header places"),
    (lambda src, d: _cut(src, d / "cut-header.gguf", 100), "the header ends early"),
    (lambda src, d: (d / "text.gguf", (d / "text.gguf").write_text("not a model\n"))[0],
     "not a GGUF file"),
], ids=["cut-in-data", "cut-in-header", "not-gguf"])
def test_a_bad_source_is_refused_and_the_cache_is_untouched(
        tmp_path: Path, test_model_path: Path, make: object, needle: str,
        existing: bool) -> None:
    cache = tmp_path / "cache"
    (cache / "variants" if existing else cache).mkdir(parents=True)
    source = make(test_model_path, tmp_path)  # type: ignore[operator]
    before = _listing(cache)
    proc = run_phase(["models", "variant", str(source), "Q8_0", "--threads", "1"],
                     env={"PHASE_CACHE": str(cache)}, timeout=120)
    assert_one_line_error(proc, 2, str(source.name), needle)
    assert _listing(cache) == before


def test_a_full_disk_while_quantizing_leaves_no_variant_directory(
        tmp_path: Path, test_model_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    proc = run_phase(["models", "variant", str(test_model_path), "Q8_0", "--threads", "1"],
                     env={"PHASE_CACHE": str(cache)}, fsize=1 << 20, timeout=120)
    assert_one_line_error(proc, 1, "quantizing to Q8_0 failed")
    assert _listing(cache) == []
