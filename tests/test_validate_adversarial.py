"""An adversarial set built from the REAL committed campaign: one defect per file, each caught
by the rule meant for it, and clean variants (sensors added the way real machines have them)
that no rule rejects.

The committed file (results/speculative-x86_64-2c-2026-11-30.json) is loaded, changed in
memory and written to tmp_path as phase writes files; `validate_file` reads it back. The
committed file has no energy sensor (that host exposed none), so the sensor classes add
sensors whose readings follow each run's real decode window: a RAPL package counter drawing
more with some strategies than others, a DRAM zone, psys, an NVML GPU, a wall meter.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
from factories import make_sensor, replaced, write_results

from phase.results import ResultsFile, Run, SensorInfo, load, token_sha256
from phase.validate import Report, validate_file
from phase.validate.lag import min_window

REPO = Path(__file__).resolve().parent.parent
COMMITTED = REPO / "results" / "speculative-x86_64-2c-2026-11-30.json"

PACKAGE = make_sensor("package-0", scope="chip", kind="counter", backend="rapl")
DRAM = make_sensor("dram", scope="module", kind="counter", backend="rapl")
PSYS = make_sensor("psys", scope="board", kind="counter", backend="rapl")
GPU = make_sensor("gpu0", scope="chip", kind="counter", backend="nvml")
WALL = make_sensor("wall", scope="wall", kind="power", backend="meter", smoothing_s=0.25)

Power = Callable[[Run, SensorInfo], float]


def package_w(run: Run) -> float:
    """Chip power that legitimately differs by strategy (speculation keeps more units busy)."""
    return 18.0 if run.strategy == "plain" else 24.0 + (run.k or 0) * 0.25


def realistic(run: Run, sensor: SensorInfo) -> float:
    chip = package_w(run)
    return {"package-0": chip, "dram": 3.0, "psys": chip + 9.0, "gpu0": 55.0,
            "wall": chip + 3.0 + 40.0}[sensor.name]


def decode_edges(run: Run) -> tuple[float, float]:
    start = run.started_unix_s + run.prefill_s
    return start, start + run.decode_s


def with_sensors(results: ResultsFile, sensors: list[SensorInfo],
                 power: Power = realistic) -> ResultsFile:
    """Every run gets one window per sensor over its decode window, energy = power x T."""
    runs = []
    for run in results.runs:
        start, end = decode_edges(run)
        windows = []
        for s in sensors:
            energy = power(run, s) * (end - start)
            windows.append({
                "sensor": s.name, "start_unix_s": start, "end_unix_s": end,
                "energy_j": energy, "energy_reason": None, "mean_power_w": energy / (end - start),
                "idle_power_w": 2.0, "idle_power_reason": None, "samples": 200, "gaps": 0,
            })
        runs.append(replaced(run, energy=windows))
    return replaced(results, sensors=sensors, runs=runs)


def change_run(results: ResultsFile, run_id: str, change: Callable[[Run], Run]) -> ResultsFile:
    return replaced(results, runs=[change(r) if r.id == run_id else r for r in results.runs])


@pytest.fixture(scope="module")
def committed() -> ResultsFile:
    return load(COMMITTED)


def first(results: ResultsFile, strategy: str, diverged: bool | None = None) -> Run:
    return next(r for r in results.runs if r.strategy == strategy
                and (diverged is None or (r.matches_plain is False) == diverged))


# --- the defects: (name, the rule meant to catch it, how to make the file) ---------------------


def _lie_about_matching(f: ResultsFile) -> ResultsFile:
    run = first(f, "draft-4", diverged=True)
    return change_run(f, run.id, lambda r: replaced(r, matches_plain=True, first_divergence=None))


def _forge_digest(f: ResultsFile) -> ResultsFile:
    run = first(f, "ngram")
    return change_run(f, run.id, lambda r: replaced(r, output_sha256=token_sha256(r.token_ids[1:])))


def _wrong_divergence(f: ResultsFile) -> ResultsFile:
    run = first(f, "draft-8", diverged=True)
    return change_run(f, run.id, lambda r: replaced(r, first_divergence=r.first_divergence + 1))


def _mismatch(f: ResultsFile) -> ResultsFile:
    """Clear-margin divergence: the speculative pass chose against a 3-logit gap."""
    run = first(f, "draft-2", diverged=True)
    return change_run(f, run.id, lambda r: replaced(r, divergence_gap_verify=0.01,
                                                    divergence_gap_reference=3.0))


def _short_run(f: ResultsFile) -> ResultsFile:
    def cut(r: Run) -> Run:
        ids = r.token_ids[:-1]
        return replaced(r, tokens=len(ids), token_ids=ids, output_sha256=token_sha256(ids),
                        trace=r.trace[:-1], steps=r.steps - 1,
                        tokens_per_s=len(ids) / r.decode_s)
    return change_run(f, first(f, "plain").id, cut)


def _time_travel(f: ResultsFile) -> ResultsFile:
    return change_run(f, first(f, "plain").id,
                      lambda r: replaced(r, ended_unix_s=r.started_unix_s - 1.0))


def _steps(f: ResultsFile) -> ResultsFile:
    return change_run(f, first(f, "draft-16").id, lambda r: replaced(r, steps=r.steps + 3))


def _speed(f: ResultsFile) -> ResultsFile:
    return change_run(f, first(f, "ngram").id,
                      lambda r: replaced(r, tokens_per_s=r.tokens_per_s * 1.05))


def _acceptance(f: ResultsFile) -> ResultsFile:
    return change_run(f, first(f, "draft-4").id, lambda r: replaced(r, acceptance=0.99))


def _k(f: ResultsFile) -> ResultsFile:
    return change_run(f, first(f, "draft-8").id, lambda r: replaced(r, k=4))


def _undeclared_strategy(f: ResultsFile) -> ResultsFile:
    return change_run(f, first(f, "draft-2").id, lambda r: replaced(r, strategy="draft-3", k=3))


def _schedule(f: ResultsFile) -> ResultsFile:
    a, b = f.runs[0], f.runs[1]
    return change_run(change_run(f, a.id, lambda r: replaced(r, order=b.order)), b.id,
                      lambda r: replaced(r, order=a.order))


def _five_kw_chip(f: ResultsFile) -> ResultsFile:
    run = first(f, "plain")
    return with_sensors(f, [PACKAGE, PSYS], lambda r, s: (
        5000.0 if r.id == run.id and s.name == "package-0" else realistic(r, s)))


def _frozen(f: ResultsFile) -> ResultsFile:
    run = first(f, "draft-4")

    def power(r: Run, s: SensorInfo) -> float:
        return 1e-6 / r.decode_s if r.id == run.id and s.name == "package-0" else realistic(r, s)
    return with_sensors(f, [PACKAGE, DRAM], power)


def _speed_spread(f: ResultsFile) -> ResultsFile:
    """8% tokens/s spread in a condition whose chip energy per token stays steady."""
    run = next(r for r in f.runs if (r.prompt, r.strategy) == ("code", "ngram"))

    def slow(r: Run) -> Run:
        decode_s = r.decode_s * 1.09
        return replaced(r, decode_s=decode_s, ended_unix_s=r.ended_unix_s + r.decode_s * 0.09,
                        tokens_per_s=r.tokens / decode_s)
    return with_sensors(change_run(f, run.id, slow), [PACKAGE],
                        lambda r, s: package_w(r) * (384 / r.tokens_per_s) / r.decode_s)


def _fake_backend(f: ResultsFile) -> ResultsFile:
    return with_sensors(f, [make_sensor("fake", scope="chip", kind="counter", backend="fixture")],
                        lambda r, s: 20.0)


def _psys_below_package(f: ResultsFile) -> ResultsFile:
    run = first(f, "ngram")
    return with_sensors(f, [PACKAGE, DRAM, PSYS], lambda r, s: (
        package_w(r) - 1.0 if r.id == run.id and s.name == "psys" else realistic(r, s)))


def _lagged_board(f: ResultsFile) -> ResultsFile:
    """psys read through an undeclared 0.8 s lag: short windows read low."""
    def power(r: Run, s: SensorInfo) -> float:
        if s.name != "psys":
            return realistic(r, s)
        true_w = realistic(r, s)
        return true_w - (true_w - 4.0) * 0.8 * -math.expm1(-r.decode_s / 0.8) / r.decode_s
    return with_sensors(f, [PACKAGE, PSYS], power)


def _window_too_short_for_lag(f: ResultsFile) -> ResultsFile:
    shortest = min(r.decode_s for r in f.runs)
    tau = (shortest + 0.002) / 20.0  # needs 20 tau: the shortest window misses by 2 ms
    lagged = make_sensor("wall", scope="wall", kind="power", backend="meter", smoothing_s=tau)
    return with_sensors(f, [PACKAGE, lagged])


DEFECTS: list[tuple[str, str, Callable[[ResultsFile], ResultsFile]]] = [
    ("1 matches_plain says true, tokens differ", "equivalence", _lie_about_matching),
    ("1 output_sha256 not the digest", "equivalence", _forge_digest),
    ("1 first_divergence off by one", "equivalence", _wrong_divergence),
    ("1 divergence against a clear margin", "equivalence", _mismatch),
    ("2 one token short of config.tokens", "consistency", _short_run),
    ("2 ends before it starts", "consistency", _time_travel),
    ("2 steps not the trace's length", "consistency", _steps),
    ("2 tokens/s not tokens / decode_s", "consistency", _speed),
    ("2 acceptance not accepted / drafted", "consistency", _acceptance),
    ("2 k not the strategy's", "consistency", _k),
    ("2 strategy not declared", "consistency", _undeclared_strategy),
    ("2 two runs' orders swapped", "consistency", _schedule),
    ("3 a 5 kW chip with no declared maximum", "plausibility", _five_kw_chip),
    ("4 a counter advancing 1 uJ over the run", "frozen", _frozen),
    ("5 8% tokens/s spread with chip energy present", "variance", _speed_spread),
    ("6 a fixture backend as the chip", "backend", _fake_backend),
    ("7 psys below the package it encloses", "enclosure", _psys_below_package),
    ("8 a lagged board sensor", "lag-confound", _lagged_board),
    ("9 a window 2 ms short of 20 tau", "sensor-lag", _window_too_short_for_lag),
]


# --- the clean variants -------------------------------------------------------------------------


def _near_ties(f: ResultsFile) -> ResultsFile:
    """Every divergence carries small gaps in both passes, the references their gap lists."""
    refs = [replaced(ref, top2_gaps=[0.8] * len(ref.token_ids)) for ref in f.references]
    for ref in refs:
        assert ref.top2_gaps is not None
    gaps = {ref.prompt: ref.top2_gaps for ref in refs}

    def evidence(r: Run) -> Run:
        if r.first_divergence is None:
            return r
        gaps[r.prompt][r.first_divergence] = 0.03  # type: ignore[index]
        return replaced(r, divergence_gap_verify=0.02)
    runs = [evidence(r) for r in f.runs]
    refs = [replaced(ref, top2_gaps=gaps[ref.prompt]) for ref in refs]
    return replaced(f, references=refs, runs=runs)


def _exactly_twenty_tau(f: ResultsFile) -> ResultsFile:
    shortest = min(r.decode_s for r in f.runs)
    meter = make_sensor("wall", scope="wall", kind="power", backend="meter",
                        smoothing_s=shortest / 20.0)
    assert min_window(meter.smoothing_s, 0.05) == pytest.approx(shortest)
    return with_sensors(f, [PACKAGE, meter])


def _declared(f: ResultsFile) -> ResultsFile:
    psys = make_sensor("psys", scope="board", kind="counter", backend="rapl",
                       encloses=["package-0"])
    wall = make_sensor("wall", scope="wall", kind="power", backend="meter", smoothing_s=0.25,
                       encloses=["package-0", "dram", "psys"])
    return with_sensors(f, [PACKAGE, DRAM, psys, wall])


CLEAN: list[tuple[str, Callable[[ResultsFile], ResultsFile]]] = [
    ("the committed file as it is", lambda f: f),
    ("RAPL package, dram below it, psys = package + 9 W", lambda f: with_sensors(
        f, [PACKAGE, DRAM, PSYS])),
    ("NVML GPU drawing more than RAPL psys", lambda f: with_sensors(f, [GPU, PACKAGE, PSYS])),
    ("a wall meter around everything", lambda f: with_sensors(f, [PACKAGE, DRAM, PSYS, WALL])),
    ("divergences recorded as near-ties", _near_ties),
    ("a lagged meter whose shortest window is exactly 20 tau", _exactly_twenty_tau),
    ("enclosures declared by the sensors", _declared),
    ("psys as the only sensor", lambda f: with_sensors(f, [PSYS])),
    ("an idle-looking DRAM zone (0.2 W)", lambda f: with_sensors(
        f, [PACKAGE, DRAM], lambda r, s: 0.2 if s.name == "dram" else package_w(r))),
    ("a GPU at 700 W", lambda f: with_sensors(f, [GPU], lambda r, s: 700.0)),
]


def judged(results: ResultsFile, tmp_path: Path, name: str) -> Report:
    path = write_results(results, tmp_path / f"{abs(hash(name))}.json")
    return validate_file(path)


def _new(report: Report, base: Report) -> list[tuple[str, str]]:
    before = {(f.rule, f.message) for f in base.findings}
    return [(f.rule, f.severity) for f in report.findings if (f.rule, f.message) not in before]


@pytest.fixture(scope="module")
def base(committed: ResultsFile, tmp_path_factory: pytest.TempPathFactory) -> Report:
    """The committed file's own report, which each defect's findings are held against."""
    return judged(committed, tmp_path_factory.mktemp("base"), "base")


@pytest.mark.parametrize(("name", "rule", "make"), DEFECTS, ids=[d[0] for d in DEFECTS])
def test_each_defect_is_flagged_by_its_rule(committed: ResultsFile, base: Report,
                                            tmp_path: Path, name: str, rule: str,
                                            make) -> None:
    report = judged(make(committed), tmp_path, name)
    assert report.results is not None  # every defect is schema-valid: the rules must see it
    new = _new(report, base)
    assert rule in {r for r, _ in new}, (name, new)
    if rule != "variance":
        assert any(sev in ("blocking", "rejected") for r, sev in new if r == rule)


@pytest.mark.parametrize(("name", "make"), CLEAN, ids=[c[0] for c in CLEAN])
def test_clean_variants_are_not_rejected(committed: ResultsFile, tmp_path: Path, name: str,
                                         make) -> None:
    report = judged(make(committed), tmp_path, name)
    assert report.results is not None
    bad = [(f.rule, f.severity, f.message) for f in report.findings
           if f.severity in ("blocking", "rejected")]
    assert bad == [], name


def test_the_committed_file_has_only_warnings(committed: ResultsFile, base: Report) -> None:
    report = base  # the committed file as phase writes it, validated once for the module
    assert not report.blocking
    assert {f.rule for f in report.findings} <= {"equivalence", "variance"}
    # Its divergences predate the recorded gaps: unclassified, shown, not blocking.
    diverged = [r for r in committed.runs if r.matches_plain is False]
    eq = [f for f in report.findings if f.rule == "equivalence"]
    assert len(eq) == len(diverged) and {f.category for f in eq} == {"unclassified"}
