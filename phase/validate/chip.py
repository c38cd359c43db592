"""Which sensor "chip energy" means in a file.

A file that records `primary_energy` (the device that ran the model) names its sensors
first, in its order. Then, among chip-scope sensors, best first: (1) one with at least one
energy value in the runs, (2) a counter before a power reading (a counter integrates exactly;
power readings are smoothed), (3) smaller declared smoothing, (4) earlier in the file's
`sensors` list (phase.analysis.ranked_chip_sensors). `RuleSettings.chip_sensor` overrides
the choice; the report records it and the candidates.
"""

from __future__ import annotations

from phase.analysis import ranked_chip_sensors
from phase.results import ResultsFile
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def choose_chip_sensor(results: ResultsFile) -> list[str]:
    """Chip sensor names, best first: the recorded primary sensors, then the ranking."""
    primary = list(results.primary_energy.sensors) if results.primary_energy else []
    return primary + [n for n in ranked_chip_sensors(results) if n not in primary]


def pick_chip(
    results: ResultsFile, candidates: list[str], settings: RuleSettings, ctx: Context
) -> tuple[str | None, list[Finding]]:
    """The chip sensor the rules use, and a warning when the settings name an unknown one."""
    wanted = settings.chip_sensor
    if wanted is None:
        return (candidates[0] if candidates else None), []
    if any(s.name == wanted for s in results.sensors):
        return wanted, []
    fallback = candidates[0] if candidates else None
    warning = ctx.finding(
        "schema",
        "warning",
        f"settings name chip sensor {wanted!r}, which this file does not declare; "
        f"using {fallback!r} by the automatic rule",
        sensor=wanted,
    )
    return fallback, [warning]
