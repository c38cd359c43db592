"""A GGUF file's vocabulary and metadata without its weights, for checks before loading.

llama.cpp's `vocab_only` model parameter reads the header, the metadata and the tokenizer but
no tensor data: tokenizing the prompts, checking that they fit the context, reading the
architecture and quant, and comparing a draft's vocabulary with the target's all happen
before the (possibly gigabytes of) weights are loaded, so bad input is refused in a fraction
of a second.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import llama_cpp

from phase.base.errors import PhaseError, UsageProblem
from phase.decode import backend
from phase.decode.model_text import ModelText


class VocabFile(ModelText):
    """Tokenizer and metadata of a GGUF file (no weights, no context). Use as a context
    manager, or `close` it. It reads metadata and tokens as a loaded model does (ModelText)."""

    def __init__(self, path: str | Path) -> None:
        backend.init(verbose=False)
        self.path = str(path)
        if not Path(self.path).is_file():
            raise PhaseError(f"{self.path}: no such model file", exit_code=2)
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        self._model = llama_cpp.llama_model_load_from_file(self.path.encode(), params)
        if not self._model:
            raise PhaseError(
                f"{self.path}: llama.cpp could not read this GGUF file{backend.native_error()}",
                exit_code=2,
            )
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))

    def info(self) -> dict[str, object]:
        """architecture, quant and n_vocab: what a results file records of a model."""
        return {"architecture": self.meta("general.architecture"), "quant": self.quant(),
                "n_vocab": self.n_vocab}

    def close(self) -> None:
        if self._model:
            llama_cpp.llama_model_free(self._model)
            self._model = None

    def __enter__(self) -> VocabFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def check_fit(prompt_tokens: int, n_tokens: int, n_ctx: int, what: str = "the prompt") -> None:
    """Refuse (exit 2) a generation that does not fit what llama.cpp will allocate for n_ctx.

    The engine asks llama.cpp for a context of n_ctx tokens and a batch of n_ctx tokens (the
    whole prefill goes in one llama_decode call). llama.cpp rounds the context up to a
    multiple of 256 but caps the batch at the n_ctx asked for, so a prompt plus generation
    that exceeds n_ctx may still fit the cache while its prefill overflows the batch (an
    abort inside llama.cpp). Within n_ctx, both fit.
    """
    if n_tokens < 1:
        raise UsageProblem(f"tokens to generate must be >= 1 (got {n_tokens})")
    if prompt_tokens < 1:
        raise UsageProblem(f"{what} has no tokens")
    if prompt_tokens + n_tokens > n_ctx:
        raise UsageProblem(
            f"{what} has {prompt_tokens} tokens; with {n_tokens} to generate it needs "
            f"{prompt_tokens + n_tokens} > context {n_ctx}: shorten it, generate fewer tokens, "
            "or raise the context size"
        )
