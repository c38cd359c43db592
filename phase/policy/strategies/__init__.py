"""Decoding strategies by name: `plain`, `draft-K`, `ngram` / `ngram-K`, `auto`."""

from phase.policy.strategies.registry import (
    AUTO_K,
    DEFAULT_DRAFT_KS,
    NGRAM_ADAPTIVE,
    NGRAM_K,
    NGRAM_N_MAX,
    NGRAM_N_MIN,
    Strategy,
    parse_strategy,
)

__all__ = ["AUTO_K", "DEFAULT_DRAFT_KS", "NGRAM_ADAPTIVE", "NGRAM_K", "NGRAM_N_MAX",
           "NGRAM_N_MIN", "Strategy", "parse_strategy"]
