"""What a GGUF model says about itself: metadata, storage format and vocabulary, read through
llama.cpp. A loaded model (native.NativeModel) and a vocabulary-only file (vocab_file.VocabFile)
both read them the same way, from the same model handle."""

from __future__ import annotations

import ctypes
from typing import Any

import llama_cpp

from phase.base.errors import PhaseError
from phase.decode.vocab import VocabInfo
from phase.models import gguf

# File-type names from the binding's own constants (LLAMA_FTYPE_MOSTLY_Q4_K_M -> Q4_K_M), so
# a new llama.cpp quant type is named without a table here going stale.
_FTYPE_NAMES: dict[int, str] = {
    value: name.removeprefix("LLAMA_FTYPE_").removeprefix("MOSTLY_").removeprefix("ALL_")
    for name, value in vars(llama_cpp).items()
    if name.startswith("LLAMA_FTYPE_") and isinstance(value, int) and name != "LLAMA_FTYPE_GUESSED"
}
_FTYPE_GUESSED = getattr(llama_cpp, "LLAMA_FTYPE_GUESSED", 1024)
_GGML_TYPE_NAMES: dict[int, str] = {
    value: name.removeprefix("GGML_TYPE_") for name, value in vars(llama_cpp).items()
    if name.startswith("GGML_TYPE_") and isinstance(value, int) and name != "GGML_TYPE_COUNT"
}


def ftype_name(ftype: int) -> str:
    guessed = bool(ftype & _FTYPE_GUESSED)
    name = _FTYPE_NAMES.get(ftype & ~_FTYPE_GUESSED, f"ftype {ftype & ~_FTYPE_GUESSED}")
    return f"{name} (guessed)" if guessed else name


class ModelText:
    """Metadata and tokenizer of a model handle (`_model`, `_vocab`) loaded from `path`."""

    path: str
    n_vocab: int
    _model: Any  # llama_model_p (a ctypes pointer)
    _vocab: Any  # llama_vocab_p

    # -- metadata -------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        size = 256
        while True:
            buf = ctypes.create_string_buffer(size)
            n = llama_cpp.llama_model_meta_val_str(self._model, key.encode(), buf, size)
            if n < 0:
                return None
            if n < size:
                return buf.value.decode("utf-8", errors="replace")
            size = n + 1

    def chat_template(self) -> str | None:
        raw = llama_cpp.llama_model_chat_template(self._model, None)
        return raw.decode("utf-8", errors="replace") if raw else None

    def quant(self) -> str:
        """The file's storage format as its GGUF header records it (`general.file_type`),
        else the tensor type that stores most of its weights. `llama_model_ftype` is the last
        resort only: in the pinned binding it answers 0 ("all F32") for Q4_K_M files."""
        recorded = self.meta("general.file_type")
        if recorded is not None and recorded.strip().isdigit():
            return ftype_name(int(recorded))
        dominant = gguf.read_header(self.path).dominant_tensor_type()
        if dominant is not None:
            name = _GGML_TYPE_NAMES.get(dominant, f"ggml type {dominant}")
            return f"mostly {name} (no file type in the header)"
        return ftype_name(int(llama_cpp.llama_model_ftype(self._model)))

    def is_end(self, token: int) -> bool:
        """Whether `token` ends a generation (llama.cpp's end-of-generation set: EOS, EOT...)."""
        return bool(llama_cpp.llama_vocab_is_eog(self._vocab, token))

    def token_text(self, token: int) -> bytes:
        return llama_cpp.llama_vocab_get_text(self._vocab, token) or b""

    def vocab_info(self) -> VocabInfo:
        v = self._vocab
        return VocabInfo(
            vocab_type=int(llama_cpp.llama_vocab_type(v)),
            n_vocab=self.n_vocab,
            bos=int(llama_cpp.llama_vocab_bos(v)),
            eos=int(llama_cpp.llama_vocab_eos(v)),
            add_bos=bool(llama_cpp.llama_vocab_get_add_bos(v)),
            add_eos=bool(llama_cpp.llama_vocab_get_add_eos(v)),
            token_text=self.token_text,
        )

    @property
    def bos_text(self) -> str:
        bos = llama_cpp.llama_vocab_bos(self._vocab)
        return self.token_text(bos).decode("utf-8", errors="replace") if bos >= 0 else ""

    @property
    def eos_text(self) -> str:
        eos = llama_cpp.llama_vocab_eos(self._vocab)
        return self.token_text(eos).decode("utf-8", errors="replace") if eos >= 0 else ""

    # -- text <-> tokens ------------------------------------------------------------------

    def tokenize(self, text: str, *, add_special: bool, parse_special: bool) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 16
        buf = (llama_cpp.llama_token * cap)()
        n = llama_cpp.llama_tokenize(self._vocab, data, len(data), buf, cap, add_special,
                                     parse_special)
        if n < 0:  # buffer too small: llama.cpp returns minus the size it needs
            cap = -n
            buf = (llama_cpp.llama_token * cap)()
            n = llama_cpp.llama_tokenize(self._vocab, data, len(data), buf, cap, add_special,
                                         parse_special)
        if n < 0:
            raise PhaseError(f"tokenization failed ({n})")
        return list(buf[:n])

    def detokenize(self, tokens: list[int]) -> str:
        """Text of `tokens` with special tokens rendered (generation ignores end-of-sequence,
        so a generated <|im_end|> is part of what the model produced and stays visible)."""
        if not tokens:
            return ""
        arr = (llama_cpp.llama_token * len(tokens))(*tokens)
        cap = max(64, 8 * len(tokens))
        for _ in range(2):
            buf = ctypes.create_string_buffer(cap)
            n = llama_cpp.llama_detokenize(self._vocab, arr, len(tokens), buf, cap, False, True)
            if n >= 0:
                return buf.raw[:n].decode("utf-8", errors="replace")
            cap = -n + 1
        raise PhaseError("detokenization failed")
