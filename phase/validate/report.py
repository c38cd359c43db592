"""Findings and the report of one file: what the rules found, and what publishing asks of it."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from phase.analysis.queries import Condition, condition_key, levels_text
from phase.results import ResultsFile, Run, SummaryFile
from phase.results.schedule import Levels
from phase.validate.settings import RuleSettings

Severity = Literal["blocking", "rejected", "warning"]
SEVERITIES: tuple[Severity, ...] = ("blocking", "rejected", "warning")

CHIP_SENSOR_RULE = (
    "chip-scope sensors ranked by: has energy in some run, counter before power reading, "
    "smaller declared smoothing, earlier in the file's sensor list; settings.chip_sensor overrides"
)


@dataclass(frozen=True)
class Finding:
    """One rule that tripped: where, on which sensor, the numbers, and a one-line reason."""

    rule: str
    severity: Severity
    file: str
    message: str
    run_id: str | None = None
    prompt: str | None = None
    strategy: str | None = None
    sensor: str | None = None
    numbers: dict[str, float] = field(default_factory=dict)
    # Where in the JSON document the problem is, for schema findings ("$.runs[3].tokens").
    json_path: str | None = None
    # A finer class within the rule, where it has one (equivalence: near-tie, mismatch,
    # unclassified).
    category: str | None = None
    # The condition's levels of the experiment's extra factors (Run.factors), where it has any.
    levels: Levels = ()

    def __post_init__(self) -> None:
        # Read back from JSON (the build cache) the pairs are lists: a condition must hash.
        object.__setattr__(self, "levels", tuple((str(n), v) for n, v in self.levels))

    @property
    def condition(self) -> Condition | None:
        if self.prompt is None or self.strategy is None:
            return None
        return (self.prompt, self.strategy, self.levels)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        # Written only where there are extra factors: reports of other files stay as they were.
        if not self.levels:
            del out["levels"]
        else:
            out["levels"] = dict(self.levels)
        return out


@dataclass
class Report:
    """All findings for one file, plus what the publisher needs to act on them."""

    file: str
    settings: RuleSettings
    findings: list[Finding]
    results: ResultsFile | SummaryFile | None
    chip_sensor: str | None = None
    # Chip-scope sensors, best first, as ranked by `choose_chip_sensor`.
    chip_candidates: list[str] = field(default_factory=list)
    # What the rules could not check and say so without a finding (a finding would show on
    # the published pages): e.g. a verification rule older files do not record.
    notes: list[str] = field(default_factory=list)

    @property
    def blocking(self) -> bool:
        """Something stops this file from being published at all."""
        return any(f.severity == "blocking" for f in self.findings)

    @property
    def has_findings(self) -> bool:
        """Any rule tripped, warnings included (what `phase validate --strict` fails on)."""
        return bool(self.findings)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = dict.fromkeys(SEVERITIES, 0)
        for f in self.findings:
            out[f.severity] += 1
        return out

    def rejection_of(self, run_id: str, sensor: str) -> Finding | None:
        """The finding that rejects this sensor's energy in this run, or None if it stands.

        Campaign-wide rejections (run_id None, e.g. lag-confound) apply to every run.
        """
        for f in self.findings:
            if (
                f.severity == "rejected"
                and f.sensor == sensor
                and (f.run_id == run_id or f.run_id is None)
            ):
                return f
        return None

    def unstable_conditions(self) -> set[Condition]:
        return {
            condition
            for f in self.findings
            if f.rule == "variance" and (condition := f.condition) is not None
        }

    def to_dict(self) -> dict[str, Any]:
        results = self.results
        return {
            "file": self.file,
            "kind": results.kind if results is not None else None,
            "id": results.id if results is not None else None,
            "settings": self.settings.as_dict(),
            "chip_sensor": self.chip_sensor,
            "chip_candidates": list(self.chip_candidates),
            "chip_sensor_rule": CHIP_SENSOR_RULE,
            "blocking": self.blocking,
            "has_findings": self.has_findings,
            "counts": self.counts(),
            "unstable_conditions": sorted([p, s, *([levels_text(lv)] if lv else [])]
                                          for p, s, lv in self.unstable_conditions()),
            "findings": [f.to_dict() for f in self.findings],
            **({"notes": list(self.notes)} if self.notes else {}),
        }


class Context:
    """What a rule sees besides the file and the settings: the file's name (for findings), the
    chip sensor, and which (run, sensor) values the rules before it rejected."""

    def __init__(
        self,
        file: str,
        chip_sensor: str | None = None,
        rejected: frozenset[tuple[str | None, str]] = frozenset(),
    ) -> None:
        self.file = file
        self.chip_sensor = chip_sensor
        self._rejected = set(rejected)

    def finding(
        self,
        rule: str,
        severity: Severity,
        message: str,
        *,
        run: Run | None = None,
        prompt: str | None = None,
        strategy: str | None = None,
        sensor: str | None = None,
        numbers: dict[str, float] | None = None,
        json_path: str | None = None,
        category: str | None = None,
        levels: Levels = (),
    ) -> Finding:
        """A finding about this file; a run names its prompt and strategy too, and numbers
        that are not finite are left out (JSON has no NaN)."""
        if run is not None:
            prompt, strategy, levels = condition_key(run)
        clean = {k: float(v) for k, v in (numbers or {}).items() if math.isfinite(v)}
        return Finding(
            rule=rule,
            severity=severity,
            file=self.file,
            message=message,
            run_id=run.id if run is not None else None,
            prompt=prompt,
            strategy=strategy,
            sensor=sensor,
            numbers=clean,
            json_path=json_path,
            category=category,
            levels=levels,
        )

    def record(self, findings: list[Finding]) -> None:
        for f in findings:
            if f.severity == "rejected" and f.sensor is not None:
                self._rejected.add((f.run_id, f.sensor))

    def is_rejected(self, run_id: str, sensor: str) -> bool:
        """Whether an earlier finding rejected this value (or the sensor campaign-wide)."""
        return (run_id, sensor) in self._rejected or (None, sensor) in self._rejected
