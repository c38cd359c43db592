"""Validation: a pure function from a results file (plus rule settings) to findings.

Nothing here measures, writes or renders: `validate_results` reads a parsed results file and
returns a `Report`; the publisher decides how to show each finding (a rejected value is shown
struck through with its reason, an unstable condition is marked, a blocking finding stops the
build).

    settings   RuleSettings: every threshold, with its default
    report     Finding, Report (what publishing asks of a file), Context (what a rule sees)
    rules/     one module per rule and the ordered registry (rules/__init__.py says how to add one)
    lag        b(T), the lag model the sensor-lag rule uses
    enclosures which sensor's reading physically includes which other's
    chip       which sensor "chip energy" means
    apply      validate_results / validate_file / exit_code
    format     reports as terminal text

The rules and their severities (each module's docstring gives the details):

    schema        blocking  shape, types, cross-references
    backend       blocking  a sensor backend outside the publishable allow-list
    consistency   blocking  a run disagreeing with its own data or the config
    completeness  warning   missing or extra repeats, campaign not complete
    equivalence   blocking  a recorded flag or digest that disagrees with the token ids, or a
                            divergence classed mismatch; warning for a near-tie or unclassified
    plausibility  rejected  power above the sensor's own bound (declared, or per scope)
    impossible    rejected  energy <= 0
    frozen        rejected  a counter that barely moved, power below the scope's floor
    sensor-lag    rejected  a window too short for the sensor's smoothing
    counter-edges rejected  a counter window whose edge error is too large a share of it
    enclosure     rejected  an enclosing sensor not above what it encloses
    lag-confound  rejected  campaign-wide: an enclosing sensor's rest power falling with 1/T
    variance      warning   speed or energy spread too wide (marks a condition unstable)
    host-spread   warning   one condition measured differently by hosts of one class (merged)

A rejected chip value is left out of the later rules; a rejected enclosing value still
counts for the confound rule (its error is exactly what that rule looks at).
"""

from phase.validate.apply import exit_code, validate_file, validate_results
from phase.validate.chip import choose_chip_sensor
from phase.validate.format import format_finding, format_report
from phase.validate.lag import lag_bias, min_window
from phase.validate.report import CHIP_SENSOR_RULE, SEVERITIES, Finding, Report, Severity
from phase.validate.rules import RULES
from phase.validate.settings import RuleSettings

__all__ = [
    "CHIP_SENSOR_RULE",
    "RULES",
    "SEVERITIES",
    "Finding",
    "Report",
    "RuleSettings",
    "Severity",
    "choose_chip_sensor",
    "exit_code",
    "format_finding",
    "format_report",
    "lag_bias",
    "min_window",
    "validate_file",
    "validate_results",
]
