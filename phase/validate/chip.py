"""Which sensor "chip energy" means in a file.

Among chip-scope sensors, best first: (1) one with at least one energy value in the runs,
(2) a counter before a power reading (a counter integrates exactly; power readings are
smoothed), (3) smaller declared smoothing, (4) earlier in the file's `sensors` list.
`RuleSettings.chip_sensor` overrides the choice; the report records it and the candidates.
"""

from __future__ import annotations

from phase.results import ResultsFile
from phase.validate.report import Context, Finding
from phase.validate.settings import RuleSettings


def choose_chip_sensor(results: ResultsFile) -> list[str]:
    """Chip-scope sensor names, best first (see CHIP_SENSOR_RULE)."""
    measured = {w.sensor for r in results.runs for w in r.energy if w.energy_j is not None}
    ranked = sorted(
        (s.name not in measured, s.kind != "counter", s.smoothing_s, i, s.name)
        for i, s in enumerate(results.sensors)
        if s.scope == "chip"
    )
    names: list[str] = []
    for *_, name in ranked:
        if name not in names:
            names.append(name)
    return names


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
