"""The validation rules, one module each, applied in the order listed here.

A raw-file rule is `check(results, settings, ctx) -> list[Finding]`: it reads the parsed file
and the settings, asks `ctx` which values the rules before it rejected (and which sensor is the
chip), and returns its findings; it never writes. Order matters only through rejections: the
rules that reject single values (sensor-lag, impossible) come before those that leave rejected
values out (enclosure, lag-confound, variance). Each sensor is judged against its own
timestamps, samples and bounds (clocks, samples, plausibility, impossible, frozen,
sensor-lag, counter-edges) before any comparison between sensors.

Adding a rule: a module here with a docstring saying what it checks and its severity, a
`check` function, one line in RAW_RULES (or SUMMARY_RULES), its name in RULES, and a test in
tests/test_validate*.py that makes it trip and not trip.
"""

from __future__ import annotations

from collections.abc import Callable

from phase.results import ResultsFile, SummaryFile
from phase.validate.report import Context, Finding
from phase.validate.rules import (
    adaptive,
    backend,
    clocks,
    completeness,
    confirmation,
    consistency,
    counter_edges,
    decisions,
    enclosure,
    enclosure_sum,
    equivalence,
    frozen,
    host_spread,
    impossible,
    lag_confound,
    passes,
    plausibility,
    profile,
    samples,
    schema,
    sensor_lag,
    shards,
    summary,
    variance,
)
from phase.validate.settings import RuleSettings

RawRule = Callable[[ResultsFile, RuleSettings, Context], list[Finding]]
SummaryRule = Callable[[SummaryFile, RuleSettings, Context], list[Finding]]

RAW_RULES: tuple[RawRule, ...] = (
    schema.check,
    backend.check,
    consistency.check,
    passes.check,
    decisions.check,
    profile.check,
    shards.check,
    completeness.check,
    adaptive.check,
    confirmation.check,
    equivalence.check,
    clocks.check,
    samples.check,
    plausibility.check,
    impossible.check,
    frozen.check,
    sensor_lag.check,
    counter_edges.check,
    enclosure.check,
    enclosure_sum.check,
    lag_confound.check,
    variance.check,
    host_spread.check,
)
SUMMARY_RULES: tuple[SummaryRule, ...] = (summary.check,)

# The names findings carry in their `rule` field.
RULES = (
    "schema",
    "backend",
    "consistency",
    "passes",
    "decisions",
    "profile",
    "shards",
    "completeness",
    "adaptive",
    "confirmation",
    "equivalence",
    "clocks",
    "samples",
    "plausibility",
    "impossible",
    "frozen",
    "sensor-lag",
    "counter-edges",
    "enclosure",
    "enclosure-sum",
    "lag-confound",
    "variance",
    "host-spread",
)

__all__ = ["RAW_RULES", "RULES", "SUMMARY_RULES", "RawRule", "SummaryRule"]
