"""Is phase's decode loop the bottleneck? phase plain vs Llama.generate (and llama-bench).

All contenders decode greedily on the same model, threads and flash-attention setting; each
timing covers exactly N single-token forward passes (prefill excluded). Runs are interleaved
(phase, Llama.generate, llama-bench, phase, ...) so drifting machine load hits all alike;
the rates reported are medians of --repeats runs.

    .venv/bin/python bench/decode_overhead.py                      # test model, 128 tokens
    .venv/bin/python bench/decode_overhead.py --model qwen2.5-coder-1.5b --threads 2
    .venv/bin/python bench/decode_overhead.py --llama-bench PATH   # also native llama.cpp

The target for phase plain is >= 0.97x llama-bench's tg rate; a ratio near 1.0 against
Llama.generate says only that both loops are equally cheap next to the forward pass.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from phase.decode import Engine, compare_to_plain, parse_strategy
from phase.decode.baseline import highlevel_generate
from phase.decode.native import physical_cores
from phase.models import TEST_MODEL, resolve

PROMPT = "Write a Python function that parses an ISO 8601 date and explain how it works."
NATIVE_DEFAULT = Path.home() / ".cache" / "phase" / "native" / "build" / "bin" / "llama-bench"


def llama_bench_rate(binary: Path, model: Path, tokens: int, threads: int, fa: str) -> float:
    """tg<tokens> rate (tok/s) of one llama-bench invocation with a single repetition."""
    cmd = [str(binary), "-m", str(model), "-p", "0", "-n", str(tokens), "-r", "1",
           "-t", str(threads), "-fa", fa, "-o", "json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    rows = json.loads(proc.stdout)
    return float(rows[0]["avg_ts"])


@click.command()
@click.option("--model", default=TEST_MODEL, show_default=True, help="Name or .gguf path.")
@click.option("--tokens", default=128, show_default=True, type=click.IntRange(min=8))
@click.option("--repeats", default=3, show_default=True, type=click.IntRange(min=1))
@click.option("--threads", default=None, type=click.IntRange(min=1),
              help="[default: physical cores, as llama-bench]")
@click.option("--flash-attn", "fa", type=click.Choice(["auto", "on", "off"]), default="auto",
              show_default=True, help="for all contenders (Llama() knows only on/off; auto=on)")
@click.option("--llama-bench", "bench_bin", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="llama-bench binary [default: on PATH or phase's native build]")
@click.option("--no-llama-bench", is_flag=True, help="Skip the native comparison.")
def main(model: str, tokens: int, repeats: int, threads: int | None, fa: str,
         bench_bin: Path | None, no_llama_bench: bool) -> None:
    path = resolve(model).path
    threads = threads or physical_cores()
    if not no_llama_bench and bench_bin is None:
        found = shutil.which("llama-bench")
        bench_bin = Path(found) if found else (NATIVE_DEFAULT if NATIVE_DEFAULT.exists() else None)

    phase_runs, base_runs, native = [], [], []
    with Engine(path, n_ctx=1024, n_threads=threads, n_threads_batch=threads,
                flash_attn=fa) as engine:
        prompt = engine.format_prompt(PROMPT)
        engine.run(prompt, parse_strategy("plain"), 8)  # warm-up: page in weights, grow buffers
        for _ in range(repeats):
            phase_runs.append(engine.run(prompt, parse_strategy("plain"), tokens))
            base_runs += highlevel_generate(path, prompt, tokens, n_ctx=1024, n_threads=threads,
                                            flash_attn=fa != "off", repeats=1)
            if bench_bin is not None and not no_llama_bench:
                native.append(llama_bench_rate(bench_bin, path, tokens, threads, fa))

    phase_rate = statistics.median(r.tokens_per_s for r in phase_runs)
    base_rate = statistics.median(tokens / s for _, s in base_runs)
    same, diverged = compare_to_plain(phase_runs[0].token_ids, base_runs[0][0])
    step_ms = statistics.median(s.verify_ms for s in phase_runs[-1].trace)
    click.echo(f"model {path.name}, {tokens} tokens, {threads} threads, flash-attn {fa}, "
               f"prompt {len(prompt)} tokens, medians of {repeats}")
    click.echo(f"phase plain      {phase_rate:8.1f} tok/s  "
               f"(runs {', '.join(f'{r.tokens_per_s:.1f}' for r in phase_runs)}; "
               f"median step {step_ms:.2f} ms)")
    click.echo(f"Llama.generate   {base_rate:8.1f} tok/s  "
               f"(runs {', '.join(f'{tokens / s:.1f}' for _, s in base_runs)})")
    if native:
        native_rate = statistics.median(native)
        click.echo(f"llama-bench tg{tokens} {native_rate:6.1f} tok/s  "
                   f"(runs {', '.join(f'{r:.1f}' for r in native)})")
    click.echo(f"ratio phase / Llama.generate  {phase_rate / base_rate:6.3f}")
    if native:
        click.echo(f"ratio phase / llama-bench     {phase_rate / native_rate:6.3f}")
        click.echo(f"ratio Llama.generate / bench  {base_rate / native_rate:6.3f}")
    click.echo("phase and Llama.generate produced the same tokens" if same
               else f"tokens differ from index {diverged}")


if __name__ == "__main__":
    main()
