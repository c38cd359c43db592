"""The one bridge to llama.cpp: a loaded model with its own context, KV cache and batch.

Only the decode package imports `llama_cpp`; llama.cpp's process-wide start-up, its log and
what the build is are `backend.py`'s, which this module uses like the others. We use the C
API (through llama-cpp-python's ctypes bindings) rather than the high-level `Llama` class for
three reasons that matter to measurement:

- the context is created with llama.cpp's own defaults for flash attention ("auto"), as
  `llama-bench` does; `Llama` can only force it on or off;
- `Llama` keeps an n_batch × n_vocab float32 `scores` array (≈300 MB for a 152k vocabulary)
  and copies every logits row into it; decoding here never copies logits (`logits` copies a
  row for a benchmark that compares batch shapes);
- greedy sampling is an argmax over a zero-copy numpy view of exactly the rows we need.
"""

from __future__ import annotations

import contextlib
import ctypes
from dataclasses import dataclass
from pathlib import Path

import llama_cpp
import numpy as np

from phase.base.errors import PhaseError
from phase.decode import backend, cpu_buffers, placement
from phase.decode.cores import physical_cores
from phase.decode.logits import top2_gap
from phase.decode.model_text import ModelText

_FLASH_ATTN = {
    "auto": llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO,
    "on": llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
    "off": llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED,
}


class DecodeFailed(PhaseError):
    pass


@dataclass(frozen=True)
class ContextOptions:
    n_ctx: int
    n_threads: int | None = None
    n_threads_batch: int | None = None
    flash_attn: str = "auto"
    n_gpu_layers: int = -1
    # auto | on | off: llama.cpp's extra CPU buffer types (AMX, repacking); see cpu_buffers.
    extra_buffers: str = "auto"
    verbose: bool = False
    # Sequences the context holds at once (phase.decode.batched: one per active request).
    n_seq_max: int = 1


class NativeModel(ModelText):
    """A GGUF model with one context (sequence 0) and a reusable batch.

    The KV cache holds positions 0..n_past-1 of one sequence. Callers decode tokens at explicit
    positions and remove tails with `truncate`; nothing here tracks which tokens are cached.
    """

    def __init__(self, path: str | Path, options: ContextOptions) -> None:
        """Long because each step must free what the earlier ones allocated if it fails."""
        backend.init(options.verbose)
        self.path = str(path)
        if not Path(self.path).is_file():
            raise PhaseError(f"{self.path}: no such model file", exit_code=2)
        mparams = llama_cpp.llama_model_default_params()
        # -1 = every layer on the accelerator when the build has one (llama-bench's default);
        # a CPU-only build ignores it.
        mparams.n_gpu_layers = options.n_gpu_layers
        self.extra_buffers = cpu_buffers.resolve(options.extra_buffers, Path(self.path),
                                                 backend.system_info())
        mparams.use_extra_bufts = self.extra_buffers.enabled
        with backend.capturing() as load_log:
            self._model = llama_cpp.llama_model_load_from_file(self.path.encode(), mparams)
        if not self._model:
            raise PhaseError(
                f"{self.path}: llama.cpp could not load this GGUF file{backend.native_error()}",
                exit_code=2,
            )
        self._ctx = None
        self._batch: llama_cpp.llama_batch | None = None
        try:
            self.placement = placement.of_model(load_log, self._model)  # as llama.cpp logged
            self._vocab = llama_cpp.llama_model_get_vocab(self._model)
            self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
            threads = options.n_threads or physical_cores()
            threads_batch = options.n_threads_batch or threads
            if options.flash_attn not in _FLASH_ATTN:
                raise PhaseError(f"flash_attn must be one of {', '.join(_FLASH_ATTN)}")
            cparams = llama_cpp.llama_context_default_params()
            cparams.n_ctx = options.n_ctx
            # One llama_decode call may carry a whole prompt; llama.cpp splits it into ubatches
            # of 512 internally (llama-bench's default), so compute buffers stay small.
            cparams.n_batch = options.n_ctx
            cparams.n_ubatch = min(512, options.n_ctx)
            cparams.n_seq_max = options.n_seq_max
            # One KV buffer shared by every sequence, so each request may use the whole n_ctx
            # (split buffers would cap each at n_ctx / n_seq_max).
            cparams.kv_unified = options.n_seq_max > 1
            cparams.n_threads = threads
            cparams.n_threads_batch = threads_batch
            cparams.flash_attn_type = _FLASH_ATTN[options.flash_attn]
            cparams.no_perf = True
            self._ctx = llama_cpp.llama_init_from_model(self._model, cparams)
            if not self._ctx:
                raise PhaseError(
                    f"{self.path}: llama.cpp could not create a context of {options.n_ctx} tokens "
                    f"(out of memory?); try a smaller n_ctx{backend.native_error()}"
                )
            self.n_ctx = int(llama_cpp.llama_n_ctx(self._ctx))
            self.n_seq_max = int(llama_cpp.llama_n_seq_max(self._ctx))
            self.n_threads = threads
            self.n_threads_batch = threads_batch
            self._memory = llama_cpp.llama_get_memory(self._ctx)
            self._capacity = self.n_ctx
            self._batch = llama_cpp.llama_batch_init(self._capacity, 0, 1)
            for i in range(self._capacity):
                self._batch.n_seq_id[i] = 1
                self._batch.seq_id[i][0] = 0
        except BaseException:
            self.close()
            raise
        self._views: dict[int, np.ndarray] = {}
        self._get_logits_ith = llama_cpp.llama_get_logits_ith
        self._decode = llama_cpp.llama_decode

    # -- lifetime -------------------------------------------------------------------------

    def close(self) -> None:
        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx:
            llama_cpp.llama_free(self._ctx)
            self._ctx = None
        if self._model:
            llama_cpp.llama_model_free(self._model)
            self._model = None

    def __del__(self) -> None:
        # At interpreter shutdown the binding may already be gone.
        with contextlib.suppress(Exception):
            self.close()

    def set_threads(self, threads: int, threads_batch: int) -> None:
        """Change the context's thread counts (llama.cpp reads them at every decode), so a
        campaign can vary threads without reloading the weights."""
        llama_cpp.llama_set_n_threads(self._ctx, threads, threads_batch)
        self.n_threads, self.n_threads_batch = threads, threads_batch

    def context_threads(self) -> tuple[int, int]:
        """The thread counts llama.cpp's context decodes and prefills with, as it reports them."""
        return (int(llama_cpp.llama_n_threads(self._ctx)),
                int(llama_cpp.llama_n_threads_batch(self._ctx)))

    @property
    def n_batch(self) -> int:  # the largest llama_decode call (see vocab_file.check_fit)
        return int(llama_cpp.llama_n_batch(self._ctx))

    def info(self) -> dict[str, object]:
        buf = ctypes.create_string_buffer(256)
        llama_cpp.llama_model_desc(self._model, buf, 256)
        return {
            "path": self.path,
            "architecture": self.meta("general.architecture"),
            "name": self.meta("general.name"),
            "quant": self.quant(),
            "n_vocab": self.n_vocab,
            "n_params": int(llama_cpp.llama_model_n_params(self._model)),
            "n_ctx_train": int(llama_cpp.llama_model_n_ctx_train(self._model)),
            "description": buf.value.decode("utf-8", errors="replace"),
        }

    # -- KV cache and forward passes ------------------------------------------------------

    def clear(self) -> None:
        # Metadata only: emptied cells are never attended to, so zeroing buffers is wasted time.
        llama_cpp.llama_memory_clear(self._memory, False)

    def kv_positions(self) -> int:
        """How many positions the KV memory holds (the last one plus one; 0 when empty)."""
        return int(llama_cpp.llama_memory_seq_pos_max(self._memory, 0)) + 1

    def truncate(self, n_keep: int) -> None:
        """Drop every cached position >= n_keep."""
        if not llama_cpp.llama_memory_seq_rm(self._memory, 0, n_keep, -1):
            raise DecodeFailed(
                f"{self.path}: llama.cpp refused to remove KV positions >= {n_keep}"
                f"{backend.native_error()}"
            )

    def seq_remove(self, seq: int, p0: int) -> None:
        """Drop sequence `seq`'s cached positions >= p0 (p0 = 0: free the whole sequence)."""
        if not llama_cpp.llama_memory_seq_rm(self._memory, seq, p0, -1):
            raise DecodeFailed(
                f"{self.path}: llama.cpp refused to remove positions >= {p0} of sequence {seq}"
                f"{backend.native_error()}"
            )

    def synchronize(self) -> None:
        """Wait for the context's queued work: a GPU backend's llama_decode may return before
        its graph has run, so a pass is timed only after this (on the CPU it returns at once)."""
        llama_cpp.llama_synchronize(self._ctx)

    def seq_positions(self, seq: int) -> int:
        """How many positions sequence `seq` holds (its last one plus one; 0 when empty)."""
        return int(llama_cpp.llama_memory_seq_pos_max(self._memory, seq)) + 1

    def decode_rows(self, tokens: list[int], positions: list[int], seqs: list[int],
                    want: list[bool]) -> None:
        """One llama_decode over rows of several sequences: row i is `tokens[i]` at
        `positions[i]` of sequence `seqs[i]`, with logits where `want[i]`; `argmax(i)`,
        `logits(i)` then read row i itself (rows without logits have none)."""
        n = len(tokens)
        if n == 0 or n > self._capacity:
            raise DecodeFailed(f"cannot decode a batch of {n} tokens (capacity {self._capacity})")
        b = self._batch
        assert b is not None, "decoding with a closed model"
        tok, pos, sid, lg = b.token, b.pos, b.seq_id, b.logits
        for i in range(n):
            tok[i] = tokens[i]
            pos[i] = positions[i]  # type: ignore[call-overload]  # typed as arrays of arrays
            sid[i][0] = seqs[i]
            lg[i] = int(want[i])
        b.n_tokens = n
        rc = self._decode(self._ctx, b)
        # The one-sequence paths never set seq_id: leave every row as they expect it.
        for i in range(n):
            sid[i][0] = 0
        if rc != 0:
            raise DecodeFailed(f"llama_decode failed with code {rc} over {n} rows of sequences "
                               f"{sorted(set(seqs))}{backend.native_error()}")
        self._first_out = 0

    def decode(self, tokens: list[int], pos0: int, n_logits: int) -> None:
        """Forward `tokens` at positions pos0..; `argmax(i)` then reads the i-th (from 0) of
        the logits rows of the last `n_logits` tokens."""
        n = len(tokens)
        if n == 0 or n > self._capacity:
            raise DecodeFailed(f"cannot decode a batch of {n} tokens (capacity {self._capacity})")
        b = self._batch
        assert b is not None, "decoding with a closed model"
        first_out = n - n_logits
        tok, pos, lg = b.token, b.pos, b.logits
        for i in range(n):
            tok[i] = tokens[i]
            pos[i] = pos0 + i  # type: ignore[call-overload]  # the binding types pos as an array of arrays
            lg[i] = int(i >= first_out)
        b.n_tokens = n
        rc = self._decode(self._ctx, b)
        if rc != 0:
            raise DecodeFailed(
                f"llama_decode failed with code {rc} at position {pos0} (n={n})"
                f"{backend.native_error()}"
            )
        self._first_out = first_out

    def decode_one(self, token: int, pos: int) -> int:
        """The hot path of plain decoding: one token in, the greedy next token out."""
        b = self._batch
        assert b is not None, "decoding with a closed model"
        b.token[0] = token
        b.pos[0] = pos  # type: ignore[call-overload]  # the binding types pos as an array of arrays
        b.logits[0] = 1
        b.n_tokens = 1
        rc = self._decode(self._ctx, b)
        if rc != 0:
            raise DecodeFailed(
                f"llama_decode failed with code {rc} at position {pos}{backend.native_error()}"
            )
        self._first_out = 0
        return int(self._row(0).argmax())

    def argmax(self, i: int) -> int:
        """Greedy token for the i-th logits row of the last `decode`."""
        return int(self._row(self._first_out + i).argmax())

    def top2_gap(self, i: int) -> float:
        """Best minus second-best logit of row i of the last decode (or decode_one)."""
        return top2_gap(self._row(self._first_out + i))

    def logits(self, i: int) -> np.ndarray:
        """A copy of the i-th logits row of the last decode (or decode_one): the row itself
        is a view into llama.cpp's buffer, which the next pass overwrites."""
        return self._row(self._first_out + i).copy()

    def sample(self, sampler: object, i: int) -> int:
        """A token drawn by a llama.cpp sampler (phase.decode.chain) from the i-th logits row
        of the last decode: llama.cpp reads the row itself, nothing is copied."""
        return int(llama_cpp.llama_sampler_sample(sampler, self._ctx, self._first_out + i))

    def _row(self, row: int) -> np.ndarray:
        ptr = self._get_logits_ith(self._ctx, row)
        if not ptr:
            raise DecodeFailed(f"no logits for batch row {row}")
        # A zero-copy view over llama.cpp's logits buffer, cached by address: the buffer is
        # reused across decodes, so the same few row addresses come back every step.
        addr = ctypes.cast(ptr, ctypes.c_void_p).value or 0
        if (view := self._views.get(addr)) is None:
            view = self._views[addr] = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))
        return view
