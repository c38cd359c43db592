"""Reference decoding loops for benchmarks only (bench/), never used to produce results.

The yardstick for phase's own loop is llama-cpp-python's high-level `Llama.generate`, the
loop most people write: it copies each logits row into numpy and samples through the
sampler chain. Kept here so that `llama_cpp` is still imported only inside phase.decode.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from phase.decode import cpu_buffers


def highlevel_generate(
    model_path: str | Path,
    prompt_tokens: Sequence[int],
    n_tokens: int,
    *,
    n_ctx: int = 4096,
    n_threads: int,
    flash_attn: bool = False,
    repeats: int = 3,
) -> list[tuple[list[int], float]]:
    """(first n_tokens generated ids, seconds for n_tokens decode steps) per repeat, greedy via
    Llama.generate.

    The clock starts at the first yielded token, whose logits came from the prompt pass, and
    stops at token n_tokens + 1: n_tokens single-token forward passes, the same work phase's
    decode window holds.
    """
    import llama_cpp.llama_cpp as binding
    from llama_cpp import Llama

    # Llama exposes no switch for extra CPU buffers; give it phase's decision (same kernels,
    # and no crash where AMX is broken) by wrapping the defaults it reads while loading.
    extra = cpu_buffers.for_this_build(Path(model_path)).enabled
    defaults = binding.llama_model_default_params

    def with_extra_buffers() -> binding.llama_model_params:
        params = defaults()
        params.use_extra_bufts = extra
        return params

    binding.llama_model_default_params = with_extra_buffers
    try:
        llm = Llama(str(model_path), n_ctx=n_ctx, n_threads=n_threads,
                    n_threads_batch=n_threads, flash_attn=flash_attn, verbose=False)
    finally:
        binding.llama_model_default_params = defaults
    try:
        runs = []
        for _ in range(repeats):
            llm.reset()
            out: list[int] = []
            t0 = 0.0
            for token in llm.generate(list(prompt_tokens), temp=0.0, top_k=1, reset=True):
                if not out:
                    t0 = time.perf_counter()
                out.append(int(token))
                if len(out) == n_tokens + 1:
                    break
            runs.append((out[:n_tokens], time.perf_counter() - t0))
        return runs
    finally:
        llm.close()
