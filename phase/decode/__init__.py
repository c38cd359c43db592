"""Greedy fixed-length decoding over llama.cpp: plain, draft-k and n-gram speculation.

This package is the only place in phase that imports `llama_cpp`.
"""

from phase.decode.backend import system_info
from phase.decode.engine import Engine
from phase.decode.placement import Device, ModelPlacement, this_build
from phase.decode.proposers import DraftProposer, NgramProposer, Proposer
from phase.decode.result import DecodeResult, compare_to_plain
from phase.decode.strategy import (
    DEFAULT_DRAFT_KS,
    NGRAM_K,
    NGRAM_N_MAX,
    NGRAM_N_MIN,
    Strategy,
    parse_strategy,
)
from phase.decode.vocab import IncompatibleVocab, VocabInfo, check_compatible
from phase.decode.vocab_file import VocabFile, check_fit

__all__ = [
    "DEFAULT_DRAFT_KS",
    "NGRAM_K",
    "NGRAM_N_MAX",
    "NGRAM_N_MIN",
    "DecodeResult",
    "Device",
    "DraftProposer",
    "Engine",
    "IncompatibleVocab",
    "ModelPlacement",
    "NgramProposer",
    "Proposer",
    "Strategy",
    "VocabFile",
    "VocabInfo",
    "check_compatible",
    "check_fit",
    "compare_to_plain",
    "parse_strategy",
    "system_info",
    "this_build",
]
