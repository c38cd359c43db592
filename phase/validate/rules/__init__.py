"""The validation rules, one module each, found here and applied in their declared order.

A raw-file rule is `check(results, settings, ctx) -> list[Finding]`: it reads the parsed file
and the settings, asks `ctx` which values the rules before it rejected (and which sensor is the
chip), and returns its findings; it never writes. Order matters only through rejections: the
rules that reject single values (sensor-lag, impossible) come before those that leave rejected
values out (enclosure, lag-confound, variance). Each sensor is judged against its own
timestamps, samples and bounds (clocks, samples, plausibility, impossible, frozen,
sensor-lag, counter-edges) before any comparison between sensors.

Adding a rule: a module here with a docstring saying what it checks and its severity, a
`check` function, and at its end `RULE = Rule(order=..., check=check)` (phase.validate.registry:
the order places it among the others; `applies_to="summary"` for a summary-file rule), and a
test in tests/test_validate*.py that makes it trip and not trip. A module that is no rule
declares `RULE = Helper("why")`. Nothing else lists the rules.
"""

from __future__ import annotations

from phase.validate.registry import RawRule, SummaryRule, discover

_FOUND = discover(__name__, __path__)

RAW_RULES: tuple[RawRule, ...] = _FOUND.raw
SUMMARY_RULES: tuple[SummaryRule, ...] = _FOUND.summary
# The names findings carry in their `rule` field.
RULES: tuple[str, ...] = _FOUND.names

__all__ = ["RAW_RULES", "RULES", "SUMMARY_RULES", "RawRule", "SummaryRule"]
