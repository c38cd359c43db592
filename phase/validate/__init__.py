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
    sharding   what makes files parts of one campaign (shared with `phase merge`)
    chip       which sensor "chip energy" means
    apply      validate_results / validate_file / exit_code
    format     reports as terminal text

The rules and their severities (each module's docstring gives the details):

    schema        blocking  shape, types, cross-references
    provenance    blocking  models' formats, sizes and bytes/token, and the bandwidth
                            figures, recomputed from each other
    covers        blocking  an enclosure or a summed set that what each sensor covers
                            contradicts; an empty enclosure on a sensor that has members;
                            primary_energy.covers not its sensors'
    backend       blocking  a sensor backend outside the publishable allow-list
    levels        blocking  a run or reference at levels of factors the config never declared
    consistency   blocking  a run disagreeing with its own data or the config (its trace too:
                            proposals within the tokens left, the steps' time within decode_s)
    reruns        blocking  a re-run of a run the file lacks, of an undisturbed attempt, or
                            past config.max_reruns
    passes        blocking  passes against their windows (lost ones too); rejected: a pass
                            with other tokens
    decisions     blocking  `auto`'s recorded decisions replayed from its trace and the profile;
                            a decision field on any other strategy's step
    profile       blocking  the cost profile against its blocks, its units and physics
    shards        blocking  hosts, shards and merged files: what `phase merge` checks, again
    completeness  warning   missing or extra repeats, campaign not complete
    equivalence   blocking  a recorded flag or digest that disagrees with the token ids, a
                            divergence classed mismatch, or divergence evidence on a run that
                            matches; warning for a near-tie or unclassified
    clocks        blocking  a run outside the campaign's span, order or host's one-at-a-time;
                  rejected  a window outside its run, samples on another clock
    samples       rejected  a window's energy its own samples contradict (a wrap counted twice)
    plausibility  rejected  power above the sensor's own bound (declared, or per scope)
    impossible    rejected  energy <= 0
    frozen        rejected  a counter that barely moved, power below the scope's floor
    sensor-lag    rejected  a window too short for the sensor's smoothing
    counter-edges rejected  a counter window whose edge error (recorded, or from its declared
                            update period) is too large a share of it; blocking: a recorded
                            error below what its update period allows
    enclosure     rejected  an enclosing sensor not above what it encloses: the reading the
                            evidence (lag, each sensor's history) blames, or both
    enclosure-sum rejected  an enclosing sensor below the sum of the disjoint sensors of its
                            backend it encloses (psys < packages + DRAM), beyond tolerance
    lag-confound  rejected  campaign-wide: an enclosing sensor's rest power falling with 1/T
    variance      warning   speed or energy spread too wide (marks a condition unstable)
    host-spread   warning   one condition measured differently by the machines of one class

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
