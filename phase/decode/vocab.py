"""Can a draft model speak for a target? The vocabulary check done before pairing them.

Speculation compares token ids across models, so the ids must mean the same text. The rules
follow llama.cpp's own speculative example (common_speculative_are_compatible): same
tokenizer type, same BOS/EOS handling, vocabulary sizes within 128 (models are often padded
differently), and identical token texts from id 5 on (the first few ids are special tokens
that families legitimately renumber).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from phase.base.errors import PhaseError

MAX_VOCAB_SIZE_DIFFERENCE = 128
FIRST_CHECKED_TOKEN = 5


@dataclass(frozen=True)
class VocabInfo:
    vocab_type: int
    n_vocab: int
    bos: int
    eos: int
    add_bos: bool
    add_eos: bool
    token_text: Callable[[int], bytes]


class IncompatibleVocab(PhaseError):
    pass


def _show(text: bytes) -> str:
    return repr(text.decode("utf-8", errors="replace"))


def check_compatible(target: VocabInfo, draft: VocabInfo, *, names: tuple[str, str] = (
        "target", "draft")) -> None:
    """Raise IncompatibleVocab naming the first difference; return None when they match."""
    t_name, d_name = names
    prefix = f"draft model {d_name} cannot be paired with target {t_name}"
    if target.vocab_type != draft.vocab_type:
        raise IncompatibleVocab(
            f"{prefix}: tokenizer types differ ({target.vocab_type} vs {draft.vocab_type})"
        )
    if target.add_bos != draft.add_bos or target.bos != draft.bos:
        raise IncompatibleVocab(
            f"{prefix}: BOS differs (target id {target.bos}, add_bos={target.add_bos}; "
            f"draft id {draft.bos}, add_bos={draft.add_bos})"
        )
    if target.add_eos != draft.add_eos or target.eos != draft.eos:
        raise IncompatibleVocab(
            f"{prefix}: EOS differs (target id {target.eos}, add_eos={target.add_eos}; "
            f"draft id {draft.eos}, add_eos={draft.add_eos})"
        )
    diff = abs(target.n_vocab - draft.n_vocab)
    if diff > MAX_VOCAB_SIZE_DIFFERENCE:
        raise IncompatibleVocab(
            f"{prefix}: vocabulary sizes differ by {diff} (target {target.n_vocab}, "
            f"draft {draft.n_vocab}; at most {MAX_VOCAB_SIZE_DIFFERENCE} allowed)"
        )
    for token in range(FIRST_CHECKED_TOKEN, min(target.n_vocab, draft.n_vocab)):
        a, b = target.token_text(token), draft.token_text(token)
        if a != b:
            raise IncompatibleVocab(
                f"{prefix}: token {token} differs (target {_show(a)}, draft {_show(b)})"
            )
