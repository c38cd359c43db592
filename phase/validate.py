"""Validation rules: a pure function from a results file (plus rule settings) to findings.

Nothing here measures, writes or renders: `validate_results` reads a parsed results file and
returns a `Report`; the publisher decides how to show each finding (a rejected value is shown
struck through with its reason, an unstable condition is marked, a blocking finding stops the
build). The rules and their defaults:

schema        (blocking) the file parses and matches the model, and its cross-references hold
              (run ids unique, every energy window names a declared sensor, ...).
completeness  (warning)  every prompt x strategy of the config has the configured repeats.
variance      (warning)  per condition, (max - min) / mean of chip energy per token
              <= variance_max; with fewer than `variance_min_runs` usable chip energies the
              same rule applies to tokens/s. A failing condition is *unstable*.
sensor-lag    (rejected) a sensor smoothed with time constant tau under-reads a step from idle,
              integrated over a window T, by up to b(T) = (tau/T)(1 - e^(-T/tau)); that
              sensor's energy for the run is rejected when b(T) > lag_bias_max.
lag-confound  (rejected) over a campaign, when an enclosing sensor's energy divided by the chip
              energy correlates with window length (|Pearson r| >= confound_r over >=
              confound_min_runs runs), the enclosing sensor is rejected for every run: its error
              moves with the thing being compared (short strategies read low).
impossible    (rejected) an enclosing sensor reading no more than the chip over the same window;
              energy <= 0; mean power above the sensor's declared maximum; a counter that did not
              move during a run.
equivalence   (warning)  a run whose output differs from plain's, with the divergence index.

Decisions worth knowing:

* Enclosing scopes. Scopes nest chip < module < board < wall, so every sensor whose scope is in
  `enclosing_scopes` (default module, board and wall) must read more than any chip sensor over
  the same window, and those are the sensors the confound rule examines. When an enclosing
  sensor reads <= the chip, the *enclosing* value is rejected: chip sensors are normally
  counters read at the window edges, enclosing ones are normally smoothed power readings, and
  an under-reading lagged sensor is the usual cause. Chip values face their own rules.
* The chip sensor (the one "energy per token" means) is chosen by `choose_chip_sensor`: among
  chip-scope sensors, (1) one with at least one energy value in the runs, (2) a counter before
  a power reading (a counter integrates exactly; power readings are smoothed), (3) smaller
  declared smoothing, (4) earlier in the file's `sensors` list. `RuleSettings.chip_sensor`
  overrides it. The report exposes the choice and the ranked candidates.
* A rejected chip value is left out of the variance rule; a rejected enclosing value still
  counts for the confound rule (its error is exactly what that rule looks at).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from phase.errors import UsageProblem
from phase.results import (
    ResultsError,
    ResultsFile,
    Run,
    SensorInfo,
    SensorWindow,
    SummaryFile,
    load,
)

Severity = Literal["blocking", "rejected", "warning"]
SEVERITIES: tuple[Severity, ...] = ("blocking", "rejected", "warning")
RULES = (
    "schema",
    "completeness",
    "variance",
    "sensor-lag",
    "lag-confound",
    "impossible",
    "equivalence",
)
_SCOPES = ("chip", "module", "board", "wall")


@dataclass(frozen=True)
class RuleSettings:
    """Every threshold the rules use; recorded in each report and on each page."""

    variance_max: float = 0.05
    lag_bias_max: float = 0.05
    confound_r: float = 0.5
    confound_min_runs: int = 6
    # Fewer usable chip energies than this and the variance rule falls back to tokens/s.
    variance_min_runs: int = 2
    # Expected repeats per condition; None means the file's own config.repeats.
    repeats: int | None = None
    # Name of the sensor that "chip energy" means; None means the documented automatic choice.
    chip_sensor: str | None = None
    enclosing_scopes: tuple[str, ...] = ("module", "board", "wall")
    # Two sensors' windows count as "the same window" when both edges agree within this;
    # otherwise an enclosing-vs-chip comparison uses mean power over each window instead.
    window_match_s: float = 0.01

    def __post_init__(self) -> None:
        for name in ("variance_max", "lag_bias_max", "window_match_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise UsageProblem(f"rule setting {name} must be a finite number >= 0, not {value}")
        if not 0 <= self.confound_r <= 1:
            raise UsageProblem(f"rule setting confound_r must be in [0, 1], not {self.confound_r}")
        if self.confound_min_runs < 3:
            # Pearson r over two points is always +-1: the rule would reject on noise.
            raise UsageProblem(
                f"rule setting confound_min_runs must be >= 3, not {self.confound_min_runs}"
            )
        if self.variance_min_runs < 2:
            raise UsageProblem(
                f"rule setting variance_min_runs must be >= 2, not {self.variance_min_runs}"
            )
        if self.repeats is not None and self.repeats < 1:
            raise UsageProblem(f"rule setting repeats must be >= 1, not {self.repeats}")
        unknown = [s for s in self.enclosing_scopes if s not in _SCOPES or s == "chip"]
        if unknown:
            raise UsageProblem(
                f"rule setting enclosing_scopes: {', '.join(unknown)} is not module, board or wall"
            )

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["enclosing_scopes"] = list(self.enclosing_scopes)
        return out


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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

    @property
    def blocking(self) -> bool:
        """Something stops this file from being published at all."""
        return any(f.severity == "blocking" for f in self.findings)

    @property
    def failed(self) -> bool:
        """Any rule tripped, warnings included."""
        return bool(self.findings)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(SEVERITIES, 0)
        for f in self.findings:
            out[f.severity] += 1
        return out

    def is_rejected(self, run_id: str, sensor: str) -> Finding | None:
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

    def unstable_conditions(self) -> set[tuple[str, str]]:
        return {
            (f.prompt, f.strategy)
            for f in self.findings
            if f.rule == "variance" and f.prompt is not None and f.strategy is not None
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
            "failed": self.failed,
            "counts": self.counts(),
            "unstable_conditions": sorted([p, s] for p, s in self.unstable_conditions()),
            "findings": [f.to_dict() for f in self.findings],
        }


CHIP_SENSOR_RULE = (
    "chip-scope sensors ranked by: has energy in some run, counter before power reading, "
    "smaller declared smoothing, earlier in the file's sensor list; settings.chip_sensor overrides"
)


# --- the lag model --------------------------------------------------------------------------


def lag_bias(window_s: float, tau_s: float) -> float:
    """Worst-case fractional under-read of a step from idle by a first-order-lag sensor.

    A sensor smoothed with time constant tau reads P_idle + dP(1 - e^(-t/tau)) after a step of
    dP at t = 0; integrated over [0, T] it misses dP*tau*(1 - e^(-T/tau)) of the step's dP*T
    joules, a fraction b(T) = (tau/T)(1 - e^(-T/tau)). An unsmoothed sensor (tau 0) misses
    nothing; an empty window misses everything.
    """
    if tau_s <= 0:
        return 0.0
    if window_s <= 0:
        return 1.0
    x = window_s / tau_s
    return -math.expm1(-x) / x


def min_window(tau_s: float, bias_max: float) -> float:
    """Shortest window T with lag_bias(T, tau) <= bias_max (about tau / bias_max)."""
    if tau_s <= 0 or bias_max >= 1:
        return 0.0
    if bias_max <= 0:
        return math.inf
    lo, hi = 0.0, tau_s / bias_max  # b(hi) < bias_max since b(T) < tau/T
    for _ in range(200):
        mid = (lo + hi) / 2
        if lag_bias(mid, tau_s) > bias_max:
            lo = mid
        else:
            hi = mid
    return hi


# --- the chip sensor ------------------------------------------------------------------------


def choose_chip_sensor(results: ResultsFile) -> list[str]:
    """Chip-scope sensor names, best first (see CHIP_SENSOR_RULE)."""
    measured = {w.sensor for r in results.runs for w in r.energy if w.energy_j is not None}
    ranked = sorted(
        (
            (s.name not in measured, s.kind != "counter", s.smoothing_s, i, s.name)
            for i, s in enumerate(results.sensors)
            if s.scope == "chip"
        ),
    )
    names: list[str] = []
    for *_, name in ranked:
        if name not in names:
            names.append(name)
    return names


# --- running the rules ----------------------------------------------------------------------


class _Findings:
    """Collects findings in order and remembers which (run, sensor) values are rejected."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.items: list[Finding] = []
        self.rejected: set[tuple[str | None, str]] = set()

    def add(
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
    ) -> None:
        if run is not None:
            prompt, strategy = run.prompt, run.strategy
        run_id = run.id if run is not None else None
        clean = {k: float(v) for k, v in (numbers or {}).items() if math.isfinite(v)}
        self.items.append(
            Finding(
                rule=rule,
                severity=severity,
                file=self.file,
                message=message,
                run_id=run_id,
                prompt=prompt,
                strategy=strategy,
                sensor=sensor,
                numbers=clean,
                json_path=json_path,
            )
        )
        if severity == "rejected" and sensor is not None:
            self.rejected.add((run_id, sensor))

    def is_rejected(self, run_id: str, sensor: str) -> bool:
        return (run_id, sensor) in self.rejected or (None, sensor) in self.rejected


def validate_results(
    results: ResultsFile | SummaryFile, file: str, settings: RuleSettings = RuleSettings()
) -> Report:
    """Apply every rule to an already parsed results file. Pure: reads, never writes."""
    out = _Findings(file)
    if isinstance(results, SummaryFile):
        _check_summary(results, settings, out)
        return Report(file, settings, out.items, results)

    candidates = choose_chip_sensor(results)
    chip = _pick_chip(results, candidates, settings, out)
    _check_structure(results, out)
    _check_completeness(results, settings, out)
    _check_run_sensors(results, settings, out)
    _check_enclosing_vs_chip(results, settings, out)
    if chip is not None:
        _check_confound(results, chip, settings, out)
    _check_variance(results, chip, settings, out)
    _check_equivalence(results, out)
    return Report(file, settings, out.items, results, chip, candidates)


def validate_file(path: str | Path, settings: RuleSettings = RuleSettings()) -> Report:
    """Load and validate one file. A file that cannot be read or does not match the schema
    gives a Report with `results` None and one blocking schema finding naming the JSON path."""
    p = Path(path)
    file = str(path)
    try:
        results = load(p)
    except ResultsError as exc:
        return Report(file, settings, [_schema_finding(p, file, exc)], None)
    return validate_results(results, file, settings)


def exit_code(reports: Sequence[Report], *, strict: bool = False) -> int:
    """2 when a file could not be read as a results file, 1 when something blocks publishing
    (with strict: when any rule tripped), else 0."""
    if any(r.results is None for r in reports):
        return 2
    if any(r.blocking or (strict and r.failed) for r in reports):
        return 1
    return 0


# --- schema ---------------------------------------------------------------------------------

_PATH_RE = re.compile(r"^(\$(?:\.[^.\[\s:]+|\[\d+\])*): ")


def _schema_finding(p: Path, file: str, exc: ResultsError) -> Finding:
    text = str(exc)
    prefix = f"{p}: "
    detail = text[len(prefix) :] if text.startswith(prefix) else text
    match = _PATH_RE.match(detail)
    json_path = match.group(1) if match else None
    # json.loads in results.load stops at the first NaN/Infinity constant without saying where;
    # find it in the document so the finding points at the hand-edited field.
    bad = _non_finite_paths(p)
    if bad:
        json_path = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        detail = f"{json_path}: not a finite number; JSON has no NaN or Infinity{more}"
    return Finding(
        rule="schema",
        severity="blocking",
        file=file,
        message=detail,
        json_path=json_path,
    )


def _non_finite_paths(p: Path) -> list[str]:
    try:
        data = json.loads(p.read_text(encoding="utf-8"))  # Python's json accepts NaN/Infinity
    except (OSError, ValueError):
        return []
    return list(_walk_non_finite(data, "$"))


def _walk_non_finite(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, float) and not math.isfinite(value):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk_non_finite(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk_non_finite(item, f"{path}[{i}]")


def _check_structure(results: ResultsFile, out: _Findings) -> None:
    """Cross-references the pydantic model cannot express; each breaks linking or lookups."""
    declared: set[str] = set()
    for i, s in enumerate(results.sensors):
        if s.name in declared:
            out.add(
                "schema",
                "blocking",
                f"sensor name {s.name!r} is declared twice",
                sensor=s.name,
                json_path=f"$.sensors[{i}].name",
            )
        declared.add(s.name)
    seen_ids: set[str] = set()
    for i, run in enumerate(results.runs):
        if run.id in seen_ids:
            out.add(
                "schema",
                "blocking",
                f"run id {run.id!r} is used twice; raw-data links would be ambiguous",
                run=run,
                json_path=f"$.runs[{i}].id",
            )
        seen_ids.add(run.id)
        in_run: set[str] = set()
        for j, w in enumerate(run.energy):
            where = f"$.runs[{i}].energy[{j}].sensor"
            if w.sensor not in declared:
                out.add(
                    "schema",
                    "blocking",
                    f"energy window names sensor {w.sensor!r}, which $.sensors does not declare",
                    run=run,
                    sensor=w.sensor,
                    json_path=where,
                )
            elif w.sensor in in_run:
                out.add(
                    "schema",
                    "blocking",
                    f"sensor {w.sensor!r} has two energy windows in one run",
                    run=run,
                    sensor=w.sensor,
                    json_path=where,
                )
            in_run.add(w.sensor)
        for j, trace in enumerate(run.samples):
            if trace.sensor not in declared:
                out.add(
                    "schema",
                    "blocking",
                    f"sample trace names sensor {trace.sensor!r}, which $.sensors does not declare",
                    run=run,
                    sensor=trace.sensor,
                    json_path=f"$.runs[{i}].samples[{j}].sensor",
                )


def _pick_chip(
    results: ResultsFile, candidates: list[str], settings: RuleSettings, out: _Findings
) -> str | None:
    wanted = settings.chip_sensor
    if wanted is None:
        return candidates[0] if candidates else None
    if any(s.name == wanted for s in results.sensors):
        return wanted
    fallback = candidates[0] if candidates else None
    out.add(
        "schema",
        "warning",
        f"settings name chip sensor {wanted!r}, which this file does not declare; "
        f"using {fallback!r} by the automatic rule",
        sensor=wanted,
    )
    return fallback


# --- completeness ---------------------------------------------------------------------------


def conditions(results: ResultsFile) -> list[tuple[str, str]]:
    """Configured prompt x strategy pairs in config order, then any the runs add."""
    pairs = [(p.name, s) for p in results.config.prompts for s in results.config.strategies]
    for run in results.runs:
        if (run.prompt, run.strategy) not in pairs:
            pairs.append((run.prompt, run.strategy))
    return pairs


def runs_by_condition(results: ResultsFile) -> dict[tuple[str, str], list[Run]]:
    grouped: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in results.runs:
        grouped[(run.prompt, run.strategy)].append(run)
    return grouped


def _check_completeness(results: ResultsFile, settings: RuleSettings, out: _Findings) -> None:
    repeats = settings.repeats or results.config.repeats
    configured = {(p.name, s) for p in results.config.prompts for s in results.config.strategies}
    by_condition = runs_by_condition(results)

    if results.status != "complete":
        out.add(
            "completeness",
            "warning",
            f"campaign status is {results.status!r}, not 'complete'",
            numbers={"runs": len(results.runs)},
        )
    for prompt, strategy in conditions(results):
        runs = by_condition.get((prompt, strategy), [])
        if (prompt, strategy) not in configured:
            out.add(
                "completeness",
                "warning",
                f"{len(runs)} run(s) for a prompt x strategy the config does not list",
                prompt=prompt,
                strategy=strategy,
                numbers={"runs": len(runs)},
            )
            continue
        present = {r.repeat for r in runs if r.repeat < repeats}
        missing = [i for i in range(repeats) if i not in present]
        extra = len(runs) - len(present)
        if missing:
            shown = ", ".join(str(i) for i in missing[:10]) + ("…" if len(missing) > 10 else "")
            out.add(
                "completeness",
                "warning",
                f"{len(present)} of {repeats} repeats; missing repeat {shown}",
                prompt=prompt,
                strategy=strategy,
                numbers={"expected": repeats, "found": len(present), "missing": len(missing)},
            )
        if extra:
            out.add(
                "completeness",
                "warning",
                f"{extra} run(s) beyond the {repeats} configured repeats "
                "(a repeat index duplicated or out of range)",
                prompt=prompt,
                strategy=strategy,
                numbers={"expected": repeats, "runs": len(runs), "extra": extra},
            )


# --- per-run sensor rules -------------------------------------------------------------------


def _window_s(w: SensorWindow) -> float:
    return w.end_unix_s - w.start_unix_s


def _check_run_sensors(results: ResultsFile, settings: RuleSettings, out: _Findings) -> None:
    sensors = _sensor_map(results)
    for run in results.runs:
        for w in _first_windows(run):
            info = sensors.get(w.sensor)
            if info is None or w.energy_j is None:
                continue
            _check_lag(run, w, info, settings, out)
            _check_reading(run, w, info, out)


def _sensor_map(results: ResultsFile) -> dict[str, SensorInfo]:
    out: dict[str, SensorInfo] = {}
    for s in results.sensors:
        out.setdefault(s.name, s)
    return out


def _first_windows(run: Run) -> list[SensorWindow]:
    seen: set[str] = set()
    out = []
    for w in run.energy:
        if w.sensor not in seen:
            seen.add(w.sensor)
            out.append(w)
    return out


def _check_lag(
    run: Run, w: SensorWindow, info: SensorInfo, settings: RuleSettings, out: _Findings
) -> None:
    tau = info.smoothing_s
    window = _window_s(w)
    bias = lag_bias(window, tau)
    if bias > settings.lag_bias_max:
        needed = min_window(tau, settings.lag_bias_max)
        out.add(
            "sensor-lag",
            "rejected",
            f"a {window:.3g} s window on a sensor smoothed over {tau:.3g} s can under-read by "
            f"{bias:.1%} (limit {settings.lag_bias_max:.1%}; needs >= {needed:.3g} s)",
            run=run,
            sensor=info.name,
            numbers={
                "bias": bias,
                "limit": settings.lag_bias_max,
                "window_s": window,
                "smoothing_s": tau,
                "min_window_s": needed,
            },
        )


def _check_reading(run: Run, w: SensorWindow, info: SensorInfo, out: _Findings) -> None:
    energy = w.energy_j
    assert energy is not None
    window = _window_s(w)
    frozen = _frozen_trace(run, info)
    if info.kind == "counter" and (energy == 0 or frozen is not None):
        numbers = {"energy_j": energy, "window_s": window}
        if frozen is not None:
            numbers.update(frozen)
        out.add(
            "impossible",
            "rejected",
            "the energy counter did not change during the run (frozen or not updating)",
            run=run,
            sensor=info.name,
            numbers=numbers,
        )
    elif energy <= 0:
        out.add(
            "impossible",
            "rejected",
            f"energy {energy:.6g} J over a {window:.3g} s window; a running machine uses some",
            run=run,
            sensor=info.name,
            numbers={"energy_j": energy, "window_s": window},
        )
    if info.max_power_w is not None:
        implied = energy / window if window > 0 else None
        powers = [p for p in (implied, w.mean_power_w) if p is not None]
        if powers and max(powers) > info.max_power_w:
            numbers = {"max_power_w": info.max_power_w, "energy_j": energy, "window_s": window}
            if implied is not None:
                numbers["implied_power_w"] = implied
            if w.mean_power_w is not None:
                numbers["mean_power_w"] = w.mean_power_w
            out.add(
                "impossible",
                "rejected",
                f"mean power {max(powers):.4g} W exceeds the sensor's physical maximum "
                f"{info.max_power_w:.4g} W",
                run=run,
                sensor=info.name,
                numbers=numbers,
            )


def _frozen_trace(run: Run, info: SensorInfo) -> dict[str, float] | None:
    """A counter's raw samples over the run that never change (at least two samples)."""
    if info.kind != "counter":
        return None
    for trace in run.samples:
        if trace.sensor == info.name and len(trace.value) >= 2:
            if max(trace.value) == min(trace.value):
                return {"samples": len(trace.value), "counter_j": trace.value[0]}
            return None
    return None


def _check_enclosing_vs_chip(results: ResultsFile, settings: RuleSettings, out: _Findings) -> None:
    sensors = _sensor_map(results)
    for run in results.runs:
        windows = [w for w in _first_windows(run) if w.sensor in sensors and w.energy_j is not None]
        chips = [
            w
            for w in windows
            if sensors[w.sensor].scope == "chip"
            and w.energy_j is not None
            and w.energy_j > 0
            and not out.is_rejected(run.id, w.sensor)
        ]
        for big in windows:
            if sensors[big.sensor].scope not in settings.enclosing_scopes:
                continue
            assert big.energy_j is not None
            if big.energy_j <= 0:
                continue  # already rejected as energy <= 0; comparing adds nothing
            for chip in chips:
                _compare(run, big, chip, sensors, settings, out)


def _compare(
    run: Run,
    big: SensorWindow,
    chip: SensorWindow,
    sensors: dict[str, SensorInfo],
    settings: RuleSettings,
    out: _Findings,
) -> None:
    assert big.energy_j is not None and chip.energy_j is not None
    same = (
        abs(big.start_unix_s - chip.start_unix_s) <= settings.window_match_s
        and abs(big.end_unix_s - chip.end_unix_s) <= settings.window_match_s
    )
    scope = sensors[big.sensor].scope
    numbers = {
        "energy_j": big.energy_j,
        "chip_energy_j": chip.energy_j,
        "window_s": _window_s(big),
        "chip_window_s": _window_s(chip),
    }
    if same:
        if big.energy_j > chip.energy_j:
            return
        message = (
            f"{scope} energy {big.energy_j:.6g} J is not above chip sensor {chip.sensor!r}'s "
            f"{chip.energy_j:.6g} J over the same window"
        )
    else:
        if _window_s(big) <= 0 or _window_s(chip) <= 0:
            return
        big_w = big.energy_j / _window_s(big)
        chip_w = chip.energy_j / _window_s(chip)
        if big_w > chip_w:
            return
        numbers.update({"mean_power_w": big_w, "chip_mean_power_w": chip_w})
        message = (
            f"{scope} mean power {big_w:.4g} W is not above chip sensor {chip.sensor!r}'s "
            f"{chip_w:.4g} W (windows differ, so compared as power)"
        )
    out.add("impossible", "rejected", message, run=run, sensor=big.sensor, numbers=numbers)


# --- campaign-wide rules --------------------------------------------------------------------


def _energy(run: Run, sensor: str) -> SensorWindow | None:
    for w in run.energy:
        if w.sensor == sensor:
            return w
    return None


def _check_confound(
    results: ResultsFile, chip: str, settings: RuleSettings, out: _Findings
) -> None:
    for info in results.sensors:
        if info.scope not in settings.enclosing_scopes:
            continue
        windows: list[float] = []
        ratios: list[float] = []
        for run in results.runs:
            big, small = _energy(run, info.name), _energy(run, chip)
            if big is None or small is None or big.energy_j is None or small.energy_j is None:
                continue
            if big.energy_j <= 0 or small.energy_j <= 0 or out.is_rejected(run.id, chip):
                continue
            windows.append(_window_s(big))
            ratios.append(big.energy_j / small.energy_j)
        if len(windows) < settings.confound_min_runs:
            continue
        try:
            r = statistics.correlation(windows, ratios)
        except statistics.StatisticsError:
            continue  # constant windows or constant ratio: nothing correlates
        if not math.isfinite(r) or abs(r) < settings.confound_r:
            continue
        out.add(
            "lag-confound",
            "rejected",
            f"{info.scope}/chip energy ratio correlates with window length (r = {r:+.2f} over "
            f"{len(windows)} runs, limit |r| {settings.confound_r:.2f}); rejected for the whole "
            "campaign because its error moves with what is being compared",
            sensor=info.name,
            numbers={
                "r": r,
                "limit_r": settings.confound_r,
                "runs": len(windows),
                "min_window_s": min(windows),
                "max_window_s": max(windows),
                "min_ratio": min(ratios),
                "max_ratio": max(ratios),
            },
        )


def _check_variance(
    results: ResultsFile, chip: str | None, settings: RuleSettings, out: _Findings
) -> None:
    by_condition = runs_by_condition(results)
    for prompt, strategy in conditions(results):
        runs = by_condition.get((prompt, strategy), [])
        per_token: list[float] = []
        if chip is not None:
            for run in runs:
                w = _energy(run, chip)
                if w is not None and w.energy_j is not None and not out.is_rejected(run.id, chip):
                    per_token.append(w.energy_j / run.tokens)
        if len(per_token) >= settings.variance_min_runs:
            # sensor names the chip sensor when energy was judged, None when tokens/s was.
            values, metric, sensor = per_token, "chip energy per token", chip
        else:
            values = [r.tokens_per_s for r in runs]
            metric, sensor = "tokens/s (no usable chip energy)", None
        if len(values) < settings.variance_min_runs:
            continue
        mean = statistics.fmean(values)
        if mean <= 0:
            continue
        spread = (max(values) - min(values)) / mean
        if spread > settings.variance_max:
            out.add(
                "variance",
                "warning",
                f"unstable: {metric} spreads {spread:.1%} of its mean across {len(values)} runs "
                f"(limit {settings.variance_max:.1%})",
                prompt=prompt,
                strategy=strategy,
                sensor=sensor,
                numbers={
                    "spread": spread,
                    "limit": settings.variance_max,
                    "min": min(values),
                    "max": max(values),
                    "mean": mean,
                    "runs": len(values),
                },
            )


def _check_equivalence(results: ResultsFile, out: _Findings) -> None:
    for run in results.runs:
        if run.matches_plain is False:
            index = run.first_divergence
            assert index is not None  # the schema requires it when matches_plain is false
            out.add(
                "equivalence",
                "warning",
                f"output differs from plain decoding from token {index} of {run.tokens}",
                run=run,
                numbers={"first_divergence": index, "tokens": run.tokens},
            )


# --- summary files --------------------------------------------------------------------------


def _check_summary(summary: SummaryFile, settings: RuleSettings, out: _Findings) -> None:
    """A transcribed summary has no runs: check its rows form a complete, unambiguous table."""
    seen: dict[tuple[str, str, int | None], int] = {}
    for i, row in enumerate(summary.rows):
        key = (row.prompt, row.strategy, row.k)
        if key in seen:
            out.add(
                "schema",
                "blocking",
                f"row duplicates $.rows[{seen[key]}] (same prompt, strategy and k)",
                prompt=row.prompt,
                strategy=row.strategy,
                json_path=f"$.rows[{i}]",
            )
        else:
            seen[key] = i
        if row.n is not None and row.run_ids and row.n != len(row.run_ids):
            out.add(
                "completeness",
                "warning",
                f"row says n = {row.n} but lists {len(row.run_ids)} run id(s)",
                prompt=row.prompt,
                strategy=row.strategy,
                numbers={"n": row.n, "run_ids": len(row.run_ids)},
            )
        if settings.repeats is not None and row.n is not None and row.n < settings.repeats:
            out.add(
                "completeness",
                "warning",
                f"row averages {row.n} of {settings.repeats} expected repeats",
                prompt=row.prompt,
                strategy=row.strategy,
                numbers={"expected": settings.repeats, "found": row.n},
            )
    prompts = list(dict.fromkeys(r.prompt for r in summary.rows))
    strategies = list(dict.fromkeys(r.strategy for r in summary.rows))
    present = {(r.prompt, r.strategy) for r in summary.rows}
    for prompt in prompts:
        for strategy in strategies:
            if (prompt, strategy) not in present:
                out.add(
                    "completeness",
                    "warning",
                    "no row for this prompt x strategy, though both appear in other rows",
                    prompt=prompt,
                    strategy=strategy,
                )


# --- text output ----------------------------------------------------------------------------


def _clean(text: str) -> str:
    """Data-derived text for a terminal: control characters shown escaped, not interpreted."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.4g}"


def format_finding(f: Finding) -> str:
    where = []
    if f.json_path:
        where.append(f.json_path)
    if f.run_id is not None:
        where.append(f"run {f.run_id}")
    if f.prompt is not None or f.strategy is not None:
        where.append(f"{f.prompt} × {f.strategy}")
    if f.sensor is not None:
        where.append(f"sensor {f.sensor}")
    numbers = " ".join(f"{k}={_number(v)}" for k, v in f.numbers.items())
    line = f"  {f.severity:<8} {f.rule:<12} "
    line += f"[{', '.join(where)}] " if where else ""
    line += f.message
    line += f"  ({numbers})" if numbers else ""
    return _clean(line)


def format_report(report: Report) -> str:
    counts = report.counts()
    tally = ", ".join(f"{n} {sev}" for sev, n in counts.items())
    lines = []
    results = report.results
    if results is None:
        lines.append(f"{report.file}: cannot be read as a results file")
    else:
        size = (
            f"{len(results.runs)} runs"
            if isinstance(results, ResultsFile)
            else f"{len(results.rows)} summary rows"
        )
        chip = f", chip sensor {report.chip_sensor}" if report.chip_sensor else ""
        lines.append(f"{report.file}: {results.kind} {results.id}, {size}{chip}: {tally}")
    lines.extend(format_finding(f) for f in report.findings)
    if report.blocking:
        lines.append("  => blocked: this file cannot be published")
    elif report.failed:
        lines.append("  => publishable, with the findings above shown on the page")
    else:
        lines.append("  => ok: every rule passed")
    return "\n".join(_clean(line) for line in lines)
