"""How a validation rule declares itself: each module of phase.validate.rules ends with one
`RULE = Rule(order=..., check=check)` (or `RULE = Helper(...)` for a module the rules share),
and the package finds them (phase.validate.rules.discover); there is no list to keep beside.

The order is declared, not left to the file listing: rules run in ascending `order` (two
rules of a kind may not share one), and matters only through rejections (the rules that
reject single values come before those that leave rejected values out).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, cast

from phase.results import ResultsFile, SummaryFile
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings

RawRule = Callable[[ResultsFile, RuleSettings, Context], list[Finding]]
SummaryRule = Callable[[SummaryFile, RuleSettings, Context], list[Finding]]


@dataclass(frozen=True)
class Rule:
    """A validation rule: `check` reads a raw results file (or, `applies_to="summary"`, a
    summary file) and runs in ascending `order` among the rules of its kind."""

    order: int
    check: RawRule | SummaryRule
    applies_to: Literal["raw", "summary"] = "raw"


@dataclass(frozen=True)
class Helper:
    """A module of the rules package that is no rule: code several rules share."""

    why: str


@dataclass(frozen=True)
class Found:
    """The rules of a package, each kind in its declared order; `names` are the raw rules'
    (their module names, `_` spelt `-`: the name their findings carry)."""

    raw: tuple[RawRule, ...]
    summary: tuple[SummaryRule, ...]
    names: tuple[str, ...]


def discover(package: str, path: Sequence[str]) -> Found:
    """Import every module of `package` (whose directories are `path`) and collect its
    declaration. A module that declares neither a Rule nor a Helper, or two rules of a kind
    at one order, is refused: a new module is either run or said not to be a rule."""
    declared: list[tuple[str, Rule]] = []
    for info in sorted(pkgutil.iter_modules(path), key=lambda i: i.name):
        module = importlib.import_module(f"{package}.{info.name}")
        rule = getattr(module, "RULE", None)
        if isinstance(rule, Rule):
            declared.append((info.name, rule))
        elif not isinstance(rule, Helper):
            raise TypeError(f"{module.__name__} declares no RULE = Rule(...) or Helper(...)")
    for kind in ("raw", "summary"):
        orders = [r.order for _, r in declared if r.applies_to == kind]
        if len(orders) != len(set(orders)):
            raise ValueError(f"two {kind} rules of {package} share an order: {sorted(orders)}")
    ordered = sorted(declared, key=lambda d: d[1].order)
    raw = [(name, r) for name, r in ordered if r.applies_to == "raw"]
    return Found(
        raw=tuple(cast(RawRule, r.check) for _, r in raw),
        summary=tuple(cast(SummaryRule, r.check) for _, r in ordered
                      if r.applies_to == "summary"),
        names=tuple(name.replace("_", "-") for name, _ in raw),
    )
