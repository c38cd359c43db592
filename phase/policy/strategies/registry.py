"""The strategy registry: one Family per strategy family, looked up by name.

A strategy's name is `<family>` or `<family>-K`; its family says which spellings it takes,
what the canonical label is, which proposer its steps record, what it needs (a draft model,
a cost profile), how phase.decode builds its proposer (greedy or sampled) and which cost-model
terms its steps are charged (phase.costmodel stays strategy-agnostic: the family names its
terms). Code outside this package and the display layer asks the family instead of comparing
names. Adding a strategy is one module (a Family subclass) plus `register` (or, in a test,
the `registered` context manager).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Protocol

from phase.base.errors import UsageProblem
from phase.costmodel.breakeven import ExpectedStep
from phase.costmodel.predict import Proposing
from phase.results import Step

DEFAULT_DRAFT_KS: tuple[int, ...] = (2, 4, 8, 16)

# ngram defaults: propose only after a verbatim match of at least 6 tokens of context (keys
# of 6 to 16 tokens are indexed; a match is extended backwards to measure its context).
# Where a batched verification costs nearly a one-token pass per row (a CPU with few cores),
# a kept guess saves only the fixed part of a pass while a rejected one costs a whole row, so
# a guess must be right most of the time to pay. A long verbatim context is what makes a
# guess that likely: replaying the prompts' plain outputs through the proposer
# (bench/ngram_replay.py), contexts of 6+ tokens were mostly kept on the edit task and rarely
# fired on new code or prose, while the previous defaults (2-4 token suffixes, 8 tokens) spent
# long verifications on guesses kept less than half the time and ran slower than plain.
# How many tokens: bare `ngram` adapts its length (ngram_length: from 4, +2 after a proposal
# kept whole, -1 after a rejection) up to NGRAM_K; `ngram-K` proposes up to K every step.
# A fixed 4 was the best fixed length in replays, and the adaptive length beat it on the edit
# task's long copy runs (see ngram_length). One host's figures for all of this:
# bench/results/notes-from-docstrings.md.
NGRAM_N_MIN = 6
NGRAM_N_MAX = 16
NGRAM_K = 16
NGRAM_ADAPTIVE = True
# `auto` considers proposals of up to this many tokens: the profile measures passes of up to
# AUTO_K + 1 tokens.
AUTO_K = 16

# A family name, then an optional "-K" (a negative K parses, to be refused by name).
_PATTERN = re.compile(r"^([a-z][a-z_]*(?:-[a-z_]+)*?)(?:-(-?\d+))?$")


@dataclass(frozen=True)
class Options:
    """The campaign's ngram settings, which parsing a bare or sized name applies."""

    ngram_n_min: int = NGRAM_N_MIN
    ngram_n_max: int = NGRAM_N_MAX
    ngram_k: int = NGRAM_K
    ngram_adaptive: bool = NGRAM_ADAPTIVE


class Proposers(Protocol):
    """What phase.decode offers a family to build its proposer from: greedy proposers
    (phase.decode.proposers, auto) or their sampled variants (phase.decode.sampled), the
    same calls either way (phase.decode.proposer_kits). Each returns a phase.decode
    proposer; a family without a sampled variant says so (`Family.samples`)."""

    def draft(self) -> Any:
        """The draft model's proposer; None when no draft model is loaded."""

    def ngram(self, n_min: int, n_max: int, k_max: int | None) -> Any:
        """An n-gram proposer; with `k_max`, one that adapts its length up to it."""

    def auto(self, kv_tokens: int, k_max: int) -> Any:
        """auto's per-step chooser, deciding with the costs at `kv_tokens`."""


class Family:
    """One strategy family. Class attributes describe it; methods parse, check, label,
    build its proposer and cost its steps. Subclasses override what differs."""

    name: ClassVar[str]
    # How the name is spelt, for error messages: in full, and without the example.
    grammar: ClassVar[str]
    short_grammar: ClassVar[str]
    order: ClassVar[int]  # where it comes among families (plain first)
    title: ClassVar[str]  # the display label of the family
    proposer_name: ClassVar[str | None] = None  # what its steps record as their proposer
    takes_k: ClassVar[bool] = True  # proposes up to k tokens a step
    adapts: ClassVar[bool] = False  # may adapt its length (ngram)
    uses_draft: ClassVar[bool] = False  # the draft model serves it where one is given
    needs_draft: ClassVar[bool] = False  # it cannot run without one
    needs_profile: ClassVar[bool] = False  # it decides with a measured cost profile
    decides: ClassVar[bool] = False  # it chooses per step (its steps record decisions)
    samples: ClassVar[bool] = True  # it has a sampled variant (temperature > 0)
    proposing: ClassVar[Proposing] = Proposing.NONE  # the cost terms of its steps
    every_step: ClassVar[bool] = False  # its proposer is asked even where it proposes none


    def expected(self) -> ExpectedStep | None:
        """Its step's cost from acceptance alone (break-even, best k), or None. A method, not
        a class attribute, so the function is never bound to the family."""
        return None

    def parse(self, text: str, k_text: str | None, options: Options) -> Strategy:
        """`text` (`name-K`, split into `k_text`) as this family's strategy."""
        if k_text is None:
            raise UsageProblem(f"'{text}': say how many tokens to propose, e.g. {self.name}-4")
        return Strategy(self.name, _k(text, k_text), ngram_n_min=options.ngram_n_min,
                        ngram_n_max=options.ngram_n_max)

    def check(self, strategy: Strategy) -> None:
        if strategy.k is None or strategy.k < 1:
            raise UsageProblem(f"{self.name} needs k >= 1 (got {strategy.k})")

    def label(self, strategy: Strategy) -> str:
        return self.name if strategy.adaptive else f"{self.name}-{strategy.k}"

    def proposer(self, strategy: Strategy, proposers: Proposers, kv_tokens: int) -> Any:
        """The proposer a run of `strategy` uses (None: it proposes nothing)."""
        raise NotImplementedError

    def step_proposing(self, step: Step) -> Proposing:
        """The cost terms of one of its steps: a recorded proposer's (auto records its
        choice, "none" included: it looked for a match first), else the family's."""
        return recorded_proposing(step, self.proposing)


def recorded_proposing(step: Step, otherwise: Proposing) -> Proposing:
    """The cost terms of the proposer `step` recorded; `otherwise` where it recorded none."""
    if step.proposer is None:
        return otherwise
    recorded = by_proposer(step.proposer)
    return recorded.proposing if recorded is not None else Proposing.LOOKUP


def _k(text: str, k_text: str) -> int:
    k = int(k_text)
    if k < 1:
        raise UsageProblem(f"'{text}': k must be >= 1")
    return k


_FAMILIES: dict[str, Family] = {}


def register(family: Family) -> None:
    if family.name in _FAMILIES:
        raise ValueError(f"a strategy family '{family.name}' is already registered")
    _FAMILIES[family.name] = family


def unregister(name: str) -> None:
    del _FAMILIES[name]


@contextmanager
def registered(family: Family) -> Iterator[Family]:
    """`family` registered for the block (tests: a toy strategy that must not leak)."""
    register(family)
    try:
        yield family
    finally:
        unregister(family.name)


def families() -> list[Family]:
    """Every registered family, in display order."""
    return sorted(_FAMILIES.values(), key=lambda f: f.order)


def _grammar(short: bool) -> str:
    names = [f.short_grammar if short else f.grammar for f in families()]
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)


def family(name: str) -> Family:
    """The family called `name` (not a label: see `family_of`)."""
    try:
        return _FAMILIES[name]
    except KeyError:
        raise UsageProblem(f"unknown strategy '{name}': use {_grammar(short=True)}") from None


@lru_cache(maxsize=4096)
def _spelled_family(label: str) -> str | None:
    """The family name a label spells, registered or not: a results file's few labels are
    looked up once per step of every run (a site build asked about a million times), and
    the name, unlike the family, does not change when a family is registered."""
    m = _PATTERN.match(label.strip())
    return m.group(1) if m else None


def family_of(label: str) -> Family | None:
    """The family of a strategy label as results files record it (`draft-4`, `ngram`);
    None for a label no registered family spells."""
    name = _spelled_family(label)
    return _FAMILIES.get(name) if name is not None else None


def is_baseline(label: str) -> bool:
    """Whether `label` is a strategy that proposes nothing (plain), the others' baseline."""
    fam = family_of(label)
    return fam is not None and not fam.takes_k


def decides(label: str) -> bool:
    """Whether `label` is a strategy that chooses per step (auto)."""
    fam = family_of(label)
    return fam is not None and fam.decides


def needs_draft(label: str) -> bool:
    """Whether `label` is a strategy that cannot run without a draft model (draft-K)."""
    fam = family_of(label)
    return fam is not None and fam.needs_draft


def fixed_proposer(label: str) -> str:
    """The proposer every step of a `label` run used ("none" for plain, and for auto, whose
    steps record their own)."""
    fam = family_of(label)
    return fam.proposer_name if fam is not None and fam.proposer_name is not None else "none"


def proposes_nothing(proposer: str | None) -> bool:
    """Whether a step's recorded proposer is the choice to propose nothing ("none"); None, a
    step that recorded no proposer, is not that choice."""
    return proposer == "none"


def proposing_of(proposer: str | None) -> Proposing:
    """The cost terms of a recorded proposer ("draft": DRAFT, "ngram": LOOKUP); NONE for
    "none", None or a proposer no family records."""
    recorded = by_proposer(proposer) if proposer is not None else None
    return recorded.proposing if recorded is not None else Proposing.NONE


def by_proposer(proposer: str) -> Family | None:
    """The family whose steps record `proposer` ("draft", "ngram"); None for "none"."""
    return next((f for f in _FAMILIES.values() if f.proposer_name == proposer), None)


def proposer_families() -> list[Family]:
    """The families with a proposer of their own, in display order."""
    return [f for f in families() if f.proposer_name is not None]


@dataclass(frozen=True)
class Strategy:
    """`name` is a registered family's name; `k` is the most tokens proposed per step (None
    for plain). `ngram_n_min` is the shortest matched context the ngram proposer proposes
    after, `ngram_n_max` the longest key it indexes (matches are extended past it);
    `adaptive` (ngram only): the length grows and shrinks with the outcomes, up to k
    (`ngram_length`)."""

    name: str
    k: int | None = None
    ngram_n_min: int = NGRAM_N_MIN
    ngram_n_max: int = NGRAM_N_MAX
    adaptive: bool = False

    def __post_init__(self) -> None:
        fam = family(self.name)
        fam.check(self)
        if self.adaptive and not fam.adapts:
            raise UsageProblem(f"only ngram adapts its length, not {self.name}")
        if not 1 <= self.ngram_n_min <= self.ngram_n_max:
            raise UsageProblem(
                f"ngram n range must satisfy 1 <= n_min <= n_max "
                f"(got {self.ngram_n_min}..{self.ngram_n_max})"
            )

    @property
    def family(self) -> Family:
        return family(self.name)

    @property
    def label(self) -> str:
        """The canonical spelling: plain, draft-4, ngram-4 (fixed), ngram (adaptive), auto."""
        return self.family.label(self)

    @property
    def max_proposal(self) -> int:
        return self.k or 0

    def __str__(self) -> str:
        return self.label


def parse_strategy(text: str, *, ngram_n_min: int = NGRAM_N_MIN,
                   ngram_n_max: int = NGRAM_N_MAX, ngram_k: int = NGRAM_K,
                   ngram_adaptive: bool = NGRAM_ADAPTIVE) -> Strategy:
    """plain | draft-K | ngram | ngram-K (K >= 1) | auto, or another registered family's
    spelling (each family's `parse` says which it takes and what a bare name means)."""
    m = _PATTERN.match(text.strip())
    fam = _FAMILIES.get(m.group(1)) if m else None
    if m is None or fam is None:
        raise UsageProblem(f"unknown strategy '{text}': use {_grammar(short=False)}")
    return fam.parse(text, m.group(2), Options(ngram_n_min, ngram_n_max, ngram_k,
                                               ngram_adaptive))
