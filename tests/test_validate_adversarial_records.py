"""Issue 47 (Integrity III): the records added since the first adversarial sets, recomputed.

Each class below was a hand-altered copy of a committed campaign that validated with no
blocking finding. Every case alters a copy of a committed file in memory (re-runs, factor
levels, models and bandwidth of the memory-bound study; divergence evidence of the second
speculative campaign; sensors added to the first one the way tests/test_validate_adversarial
adds them), writes it to tmp_path as phase writes files, and validates it from there: the
class's rule must block, naming the JSON path. The unaltered files, honest variants of the
same records, and every committed campaign re-serialised with sorted keys validate as before.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from factories import make_sensor, replaced, shifted, write_results
from test_validate_adversarial import change_run, package_w, with_sensors

from phase.analysis.summary import summarize
from phase.results import FigureInterval, Pass, ResultsFile, Run, SensorInfo, SummaryFile, load
from phase.results.schedule import planned_schedule
from phase.validate import Report, validate_file, validate_results
from phase.validate.rules.counter_edges import least_edge_error

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
MEMORY = RESULTS / "memory_bound-x86_64-2c-2026-12-03.json"
SAMPLING = RESULTS / "speculative_sampling-x86_64-2c-2026-12-03.json"
GAPS = RESULTS / "speculative-x86_64-2c-2026-11-30-2.json"
SPECULATIVE = RESULTS / "speculative-x86_64-2c-2026-11-30.json"
COMMITTED = sorted(p for p in RESULTS.glob("*.json") if p.name != "schema.json")

Change = Callable[[ResultsFile], ResultsFile]


@pytest.fixture(scope="module")
def files() -> dict[Path, ResultsFile]:
    return {p: load(p) for p in (MEMORY, SAMPLING, GAPS, SPECULATIVE)}


@pytest.fixture(scope="module")
def committed_report(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Report]:
    """validate_file of a copy of a committed file, once per file: the key-order and the
    committed-files tests read the same report (neither changes it)."""
    copies = tmp_path_factory.mktemp("committed")
    return cache(lambda path: validate_file(shutil.copyfile(path, copies / path.name)))


def judged(results: ResultsFile | SummaryFile, tmp_path: Path, name: str = "altered") -> Report:
    return validate_file(write_results(results, tmp_path / f"{name}.json"))


def blocking(report: Report, rule: str) -> list[tuple[str | None, str]]:
    return [(f.json_path, f.message) for f in report.findings
            if f.rule == rule and f.severity == "blocking"]


# --- 1. re-run bookkeeping ---------------------------------------------------------------------


def _disturbed(run: Run) -> Run:
    return replaced(run, foreign_load=0.9, disturbed=True)


def _attempt(results: ResultsFile, slot: Run, n: int, *, disturbed: bool = False) -> Run:
    """Attempt n of the slot's run, as phase records one: the slot's run again after every
    run so far, its order the slot's plus n x the schedule's length."""
    length = len(planned_schedule(results.config))
    last = max(r.ended_unix_s for r in results.runs)
    again = shifted(slot, last + 1.0 - slot.started_unix_s)
    return replaced(again, id=f"{slot.id}-rerun{n}", rerun_of=slot.id,
                    order=slot.order + n * length, foreign_load=0.9 if disturbed else 0.001,
                    disturbed=disturbed)


def _with_reruns(results: ResultsFile, attempts: int, *, first_disturbed: bool = True,
                 drop_first: bool = False) -> tuple[ResultsFile, Run]:
    # A slot of the last repeat: its re-runs come after every run, at the end of that repeat.
    slot = next(r for r in results.runs if r.repeat == results.config.repeats - 1)
    if first_disturbed:
        results = change_run(results, slot.id, _disturbed)
        slot = next(r for r in results.runs if r.id == slot.id)
    for n in range(1, attempts + 1):
        results = replaced(results, runs=[*results.runs, _attempt(
            results, slot, n, disturbed=n < attempts)])
    if drop_first:
        results = replaced(results, runs=[r for r in results.runs if r.id != slot.id])
    return results, slot


def test_a_rerun_of_a_disturbed_run_is_clean(files: dict[Path, ResultsFile],
                                             tmp_path: Path) -> None:
    results, _ = _with_reruns(files[SAMPLING], 2)
    report = judged(results, tmp_path)
    assert [(f.rule, f.message) for f in report.findings if f.severity == "blocking"] == []


@pytest.mark.parametrize(("case", "words"), [
    ("missing first attempt", "no first attempt this file holds"),
    ("undisturbed", "which is not disturbed"),
    ("over budget", "more than config.max_reruns (2)"),
])
def test_rerun_bookkeeping_that_does_not_add_up_blocks(files: dict[Path, ResultsFile],
                                                       tmp_path: Path, case: str,
                                                       words: str) -> None:
    results = files[SAMPLING]
    if case == "missing first attempt":
        altered, _ = _with_reruns(results, 1, drop_first=True)
    elif case == "undisturbed":
        altered, _ = _with_reruns(results, 1, first_disturbed=False)
    else:
        altered, _ = _with_reruns(results, 3)
    found = blocking(judged(altered, tmp_path), "reruns")
    index = len(altered.runs) - 1  # the last attempt: the one that does not add up
    assert any(words in message for _, message in found), found
    assert any(path == f"$.runs[{index}].rerun_of" for path, _ in found), found


# --- 2. passes lost while the window kept them -------------------------------------------------


def _passes(results: ResultsFile, kept: int) -> ResultsFile:
    """Every run decoded three times in a window three decodes long (its energy over all
    three); the list keeps `kept` of them."""
    def three(run: Run) -> Run:
        one = Pass(decode_s=run.decode_s, tokens=run.tokens, output_sha256=run.output_sha256)
        windows = [replaced(w, end_unix_s=w.start_unix_s + 3 * run.decode_s,
                            energy_j=(w.energy_j or 0.0) * 3) for w in run.energy]
        return replaced(run, passes=[one] * kept, energy=windows,
                        ended_unix_s=run.ended_unix_s + 2 * run.decode_s)
    sensed = with_sensors(results, [make_sensor("package-0", scope="chip", kind="counter",
                                                backend="rapl")])
    return replaced(sensed, runs=[three(r) for r in sensed.runs])


@pytest.mark.parametrize("kept", [1, 2])
def test_passes_lost_from_the_list_block(files: dict[Path, ResultsFile], tmp_path: Path,
                                         kept: int) -> None:
    found = blocking(judged(_passes(files[SPECULATIVE], kept), tmp_path), "passes")
    assert found and all(path is not None and path.endswith(".passes") for path, _ in found)
    assert "unaccounted" in found[0][1]
    whole = blocking(judged(_passes(files[SPECULATIVE], 3), tmp_path, "whole"), "passes")
    assert whole == []


def test_a_sized_campaign_without_passes_blocks(files: dict[Path, ResultsFile],
                                                tmp_path: Path) -> None:
    results = files[SPECULATIVE]
    sized = replaced(results, config=replaced(results.config, window_min_s=1.0, max_passes=8))
    found = blocking(judged(sized, tmp_path), "passes")
    assert len(found) == len(results.runs) and found[0][0] == "$.runs[0].passes"


# --- 3. a counter edge error below what its updates allow -------------------------------------

NVML = make_sensor("nvml:gpu0", scope="chip", kind="counter", backend="nvml",
                   update_period_s=0.1)


def _edge_errors(results: ResultsFile, error: Callable[[SensorInfo, Run, float], float]
                 ) -> ResultsFile:
    sensed = with_sensors(results, [NVML], lambda r, s: 3.0 * package_w(r))

    def record(run: Run) -> Run:
        return replaced(run, energy=[replaced(w, edge_error_j=error(NVML, run, w.energy_j or 0))
                                     for w in run.energy])
    return replaced(sensed, runs=[record(r) for r in sensed.runs])


def test_an_edge_error_smaller_than_the_update_period_allows_blocks(
        files: dict[Path, ResultsFile], tmp_path: Path) -> None:
    forged = _edge_errors(files[SPECULATIVE], lambda s, r, e: 1e-6)
    floors = [least_edge_error(w, NVML) or 0.0 for r in forged.runs for w in r.energy]
    found = blocking(judged(forged, tmp_path), "counter-edges")
    assert len(found) == sum(f > 1e-6 for f in floors) > len(forged.runs) // 2
    assert all(path is not None and path.endswith(".edge_error_j") for path, _ in found)
    # One update's energy at the window's mean power: what the sampler records at most.
    honest = _edge_errors(files[SPECULATIVE], lambda s, r, e: e / r.decode_s * 0.1)
    assert blocking(judged(honest, tmp_path, "honest"), "counter-edges") == []


# --- 4. covers and enclosures ------------------------------------------------------------------

R_PACKAGE = make_sensor("rapl:package-0", scope="chip", kind="counter", backend="rapl",
                        encloses=[])
R_DRAM = make_sensor("rapl:dram", scope="module", kind="counter", backend="rapl", encloses=[])
R_PSYS = make_sensor("rapl:psys", scope="board", kind="counter", backend="rapl",
                     encloses=["rapl:package-0", "rapl:dram"])
WALL = make_sensor("wall", scope="wall", kind="power", backend="meter", smoothing_s=0.25)


def _rapl_power(run: Run, s: SensorInfo) -> float:
    return {"rapl:package-0": package_w(run), "rapl:dram": 3.0,
            "rapl:psys": package_w(run) + 9.0, "wall": package_w(run) + 45.0}[s.name]


def _rapl(results: ResultsFile, *sensors: SensorInfo) -> ResultsFile:
    return with_sensors(results, list(sensors) or [R_PACKAGE, R_DRAM, R_PSYS], _rapl_power)


COVERS: list[tuple[str, Change, str]] = [
    ("a package declared around the DRAM it does not cover",
     lambda f: _rapl(f, replaced(R_PACKAGE, encloses=["rapl:dram"]), R_DRAM, R_PSYS),
     "$.sensors[0].encloses"),
    ("psys declaring no members", lambda f: _rapl(
        f, R_PACKAGE, R_DRAM, replaced(R_PSYS, encloses=[])), "$.sensors[2].encloses"),
    ("a wall meter declaring no members", lambda f: _rapl(
        f, R_PACKAGE, R_DRAM, R_PSYS, replaced(WALL, encloses=[])), "$.sensors[3].encloses"),
]


@pytest.mark.parametrize(("name", "make", "path"), COVERS, ids=[c[0] for c in COVERS])
def test_covers_that_do_not_hold_block(files: dict[Path, ResultsFile], tmp_path: Path,
                                       name: str, make: Change, path: str) -> None:
    found = blocking(judged(make(files[SPECULATIVE]), tmp_path), "covers")
    assert [p for p, _ in found] == [path], found


def test_primary_energy_covers_are_recomputed(files: dict[Path, ResultsFile],
                                              tmp_path: Path) -> None:
    from phase.results.covers import PrimaryEnergy
    base = _rapl(files[SPECULATIVE])
    primary = PrimaryEnergy(sensors=["rapl:package-0"], device="cpu", reason="fixture",
                            chosen_by="auto", covers=["cpu", "uncore"])
    honest = replaced(base, primary_energy=primary)
    assert blocking(judged(honest, tmp_path, "honest"), "covers") == []
    claimed = replaced(base, primary_energy=replaced(primary, covers=["cpu", "uncore", "dram"]))
    found = blocking(judged(claimed, tmp_path), "covers")
    assert [p for p, _ in found] == ["$.primary_energy.covers"]


def test_declared_rapl_and_a_wall_meter_around_them_are_clean(
        files: dict[Path, ResultsFile], tmp_path: Path) -> None:
    report = judged(_rapl(files[SPECULATIVE], R_PACKAGE, R_DRAM, R_PSYS,
                          replaced(WALL, encloses=["rapl:psys"])), tmp_path)
    assert [(f.rule, f.message) for f in report.findings
            if f.severity in ("blocking", "rejected")] == []


# --- 5. a summary interval that excludes its own centre ----------------------------------------


def test_a_summary_interval_excluding_its_centre_blocks(files: dict[Path, ResultsFile],
                                                        tmp_path: Path) -> None:
    raw = files[GAPS]
    summary = summarize(raw, validate_results(raw, GAPS.name), GAPS.name)
    assert not judged(summary, tmp_path, "derived").blocking
    i, row = next((i, r) for i, r in enumerate(summary.rows) if "speed_vs_plain" in r.intervals)
    assert row.speed_vs_plain is not None
    moved = FigureInterval(low=row.speed_vs_plain * 1.1, high=row.speed_vs_plain * 1.3, n=3)
    rows = list(summary.rows)
    rows[i] = replaced(row, intervals={**row.intervals, "speed_vs_plain": moved})
    found = blocking(judged(replaced(summary, rows=rows), tmp_path), "consistency")
    assert [p for p, _ in found] == [f"$.rows[{i}].intervals.speed_vs_plain"]


def test_a_summary_row_count_its_run_ids_do_not_back_blocks(files: dict[Path, ResultsFile],
                                                            tmp_path: Path) -> None:
    raw = files[GAPS]
    summary = summarize(raw, validate_results(raw, GAPS.name), GAPS.name)
    i, row = next((i, r) for i, r in enumerate(summary.rows) if r.run_ids and r.n)
    assert row.n is not None
    rows = list(summary.rows)
    rows[i] = replaced(row, run_ids=row.run_ids[:-1])  # a run id lost, n kept
    found = blocking(judged(replaced(summary, rows=rows), tmp_path), "consistency")
    assert [p for p, _ in found] == [f"$.rows[{i}].n"] and f"n = {row.n}" in found[0][1]


# --- 6. a run at a factor level the experiment never declared ----------------------------------

LEVELS: list[tuple[str, Callable[[dict[str, object]], dict[str, object]], str]] = [
    ("a level not declared", lambda lv: {**lv, "threads": 3}, "factors.threads"),
    ("a level of another type", lambda lv: {**lv, "threads": "2"}, "factors.threads"),
    ("a factor not declared", lambda lv: {**lv, "batch": 4}, "factors.batch"),
    ("a factor missing", lambda lv: {k: v for k, v in lv.items() if k != "fill"}, "factors"),
]


@pytest.mark.parametrize(("name", "change", "tail"), LEVELS, ids=[c[0] for c in LEVELS])
def test_a_run_at_undeclared_levels_blocks(files: dict[Path, ResultsFile], tmp_path: Path,
                                           name: str, change, tail: str) -> None:
    results = files[MEMORY]
    run = results.runs[7]
    altered = change_run(results, run.id, lambda r: replaced(r, factors=change(dict(r.factors))))
    found = blocking(judged(altered, tmp_path), "levels")
    assert [p for p, _ in found] == [f"$.runs[7].{tail}"], found


def test_a_reference_at_an_undeclared_level_blocks(files: dict[Path, ResultsFile],
                                                   tmp_path: Path) -> None:
    results = files[MEMORY]
    refs = list(results.references)
    refs[2] = replaced(refs[2], factors={**refs[2].factors, "fill": 4096})
    found = blocking(judged(replaced(results, references=refs), tmp_path), "levels")
    assert [p for p, _ in found] == ["$.references[2].factors.fill"]


def test_a_model_loaded_for_an_undeclared_level_blocks(files: dict[Path, ResultsFile],
                                                       tmp_path: Path) -> None:
    results = files[MEMORY]
    models = list(results.models)
    models[1] = replaced(models[1], level="F32")
    found = blocking(judged(replaced(results, models=models), tmp_path), "levels")
    assert [p for p, _ in found] == ["$.models[1].level"]


@pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
def test_key_order_never_matters(path: Path, tmp_path: Path,
                                 committed_report: Callable[[Path], Report]) -> None:
    """The same data with every object's keys sorted validates with exactly the same
    findings (factor levels are read by name, never by position)."""
    resorted = tmp_path / path.name
    resorted.write_text(json.dumps(json.loads(path.read_text()), sort_keys=True))

    def seen(report: Report) -> list[tuple[object, ...]]:
        return sorted((f.rule, f.severity, f.message, f.json_path, f.run_id, f.levels)
                      for f in report.findings)
    original, again = committed_report(path), validate_file(resorted)
    assert seen(again) == seen(original)
    assert not original.blocking


# --- 7. an equivalence mismatch downgraded by omitting the recorded gap ------------------------


def _mismatch(results: ResultsFile) -> tuple[ResultsFile, int, int]:
    """A divergence against a clear margin: the reference's gap there 3.0."""
    i, run = next((i, r) for i, r in enumerate(results.runs) if r.first_divergence is not None)
    j, ref = next((j, ref) for j, ref in enumerate(results.references)
                  if ref.prompt == run.prompt)
    assert ref.top2_gaps is not None and run.first_divergence is not None
    gaps = list(ref.top2_gaps)
    gaps[run.first_divergence] = 3.0
    refs = list(results.references)
    refs[j] = replaced(ref, top2_gaps=gaps)
    results = replaced(results, references=refs)
    return change_run(results, run.id, lambda r: replaced(r, divergence_gap_reference=3.0)), i, j


def test_a_mismatch_without_its_gaps_still_blocks(files: dict[Path, ResultsFile],
                                                  tmp_path: Path) -> None:
    mismatch, i, j = _mismatch(files[GAPS])
    assert any(f.category == "mismatch" and f.severity == "blocking"
               for f in judged(mismatch, tmp_path, "mismatch").findings)
    no_verify = change_run(mismatch, mismatch.runs[i].id,
                           lambda r: replaced(r, divergence_gap_verify=None))
    found = blocking(judged(no_verify, tmp_path, "no-verify"), "equivalence")
    assert f"$.runs[{i}].divergence_gap_verify" in [p for p, _ in found]
    refs = list(mismatch.references)
    refs[j] = replaced(refs[j], top2_gaps=None)
    near = change_run(replaced(mismatch, references=refs), mismatch.runs[i].id,
                      lambda r: replaced(r, divergence_gap_reference=0.01))
    found = blocking(judged(near, tmp_path, "near"), "equivalence")
    assert f"$.references[{j}].top2_gaps" in [p for p, _ in found]


# --- 8. provenance -----------------------------------------------------------------------------


def _model(index: int, **changes: object) -> Change:
    def change(f: ResultsFile) -> ResultsFile:
        models = list(f.models)
        models[index] = replaced(models[index], **changes)
        return replaced(f, models=models)
    return change


def _bandwidth(**changes: object) -> Change:
    def change(f: ResultsFile) -> ResultsFile:
        assert f.bandwidth is not None
        return replaced(f, bandwidth=[replaced(f.bandwidth[0], **changes), *f.bandwidth[1:]])
    return change


def _weights_bytes(f: ResultsFile) -> ResultsFile:
    estimate = f.models[0].bytes_per_token
    assert estimate is not None
    return _model(0, bytes_per_token=replaced(estimate, weights_bytes=f.models[0].size_bytes
                                              + 1))(f)


def _recipe(**changes: object) -> Change:
    def change(f: ResultsFile) -> ResultsFile:
        variant = f.models[1].variant
        assert variant is not None
        recipe = {**variant.recipe, **changes}
        return _model(1, variant=replaced(variant, recipe=recipe))(f)
    return change


PROVENANCE: list[tuple[str, Change, str]] = [
    ("a variant whose GGUF file type is F32's", _recipe(llama_ftype=0),
     "$.models[1].variant.recipe.llama_ftype"),
    ("a variant of other bytes than its recipe made", _recipe(output_bytes=1),
     "$.models[1].variant.recipe.output_bytes"),
    ("a Q4_K_M file recorded as F32", _model(0, quant="F32"), "$.models[0].quant"),
    ("an F16 variant recorded as Q4_K_M", _model(1, quant="Q4_K_M"), "$.models[1].quant"),
    ("bytes per token above the file", _weights_bytes,
     "$.models[0].bytes_per_token.weights_bytes"),
    ("a best bandwidth not its times'", _bandwidth(best_gb_s=20.0), "$.bandwidth[0].best_gb_s"),
    ("a median bandwidth not its times'", _bandwidth(median_gb_s=15.0),
     "$.bandwidth[0].median_gb_s"),
    ("a time dropped", _bandwidth(times_s=[0.0645, 0.0641, 0.0617, 0.0603]),
     "$.bandwidth[0].times_s"),
]


@pytest.mark.parametrize(("name", "make", "path"), PROVENANCE, ids=[c[0] for c in PROVENANCE])
def test_provenance_that_does_not_add_up_blocks(files: dict[Path, ResultsFile], tmp_path: Path,
                                                name: str, make: Change, path: str) -> None:
    found = blocking(judged(make(files[MEMORY]), tmp_path), "provenance")
    assert path in [p for p, _ in found], found


# --- the committed campaigns as they are -------------------------------------------------------


@pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
def test_the_committed_files_do_not_block(path: Path,
                                          committed_report: Callable[[Path], Report]) -> None:
    report = committed_report(path)
    assert report.results is not None
    assert [(f.rule, f.message) for f in report.findings if f.severity == "blocking"] == []
