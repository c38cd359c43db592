"""Decoding strategies by name: `plain`, `draft-K`, `ngram` / `ngram-K`, `auto`,
`ngram-simple-K`.

One module per family (plain, draft, ngram, auto, ngram_simple), each registered here;
registry.py holds the Family interface, the lookups and the Strategy value. Adding a
strategy is one module plus one `register` line below.
"""

from phase.costmodel.predict import Proposing
from phase.policy.strategies.auto import Auto
from phase.policy.strategies.costs import run_terms, step_costs
from phase.policy.strategies.draft import Draft
from phase.policy.strategies.ngram import Ngram
from phase.policy.strategies.ngram_simple import NgramSimple
from phase.policy.strategies.plain import Plain
from phase.policy.strategies.registry import (
    AUTO_K,
    DEFAULT_DRAFT_KS,
    NGRAM_ADAPTIVE,
    NGRAM_K,
    NGRAM_N_MAX,
    NGRAM_N_MIN,
    Family,
    Options,
    Proposers,
    Strategy,
    by_proposer,
    decides,
    families,
    family,
    family_of,
    fixed_proposer,
    is_baseline,
    needs_draft,
    parse_strategy,
    proposer_families,
    proposes_nothing,
    proposing_of,
    register,
    registered,
    unregister,
)

for _family in (Plain(), Draft(), Ngram(), Auto(), NgramSimple()):
    register(_family)

# The label the others' ratios are to. Code builds labels with it (scheduling plain runs, a
# condition's plain key); to tell whether a label is the baseline it asks `is_baseline`.
BASELINE = Plain.name

__all__ = [
    "AUTO_K",
    "BASELINE",
    "DEFAULT_DRAFT_KS",
    "NGRAM_ADAPTIVE",
    "NGRAM_K",
    "NGRAM_N_MAX",
    "NGRAM_N_MIN",
    "Family",
    "Options",
    "Proposers",
    "Proposing",
    "Strategy",
    "by_proposer",
    "decides",
    "families",
    "family",
    "family_of",
    "fixed_proposer",
    "is_baseline",
    "needs_draft",
    "parse_strategy",
    "proposer_families",
    "proposes_nothing",
    "proposing_of",
    "register",
    "registered",
    "run_terms",
    "step_costs",
    "unregister",
]
