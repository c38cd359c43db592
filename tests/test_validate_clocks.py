"""Issue 30, class 9: every timestamp a file records is held against where measuring puts it.

Files are the committed campaigns or factory campaigns, altered the way a clock bug or an
instrument on another clock would alter them.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from factories import make_results, make_sensor, make_trace, replaced
from shard_files import write_shards

from phase.campaign.merge import merge_files
from phase.results import ResultsFile, Run, load_raw
from phase.validate import Finding, validate_results

REPO = Path(__file__).resolve().parent.parent
COMMITTED = sorted((REPO / "results").glob("speculative-x86_64-2c-2026-11-30*.json"))
AUTO_CAMPAIGN = REPO / "results" / "speculative-x86_64-2c-2026-11-30-2.json"


def clocks(results: ResultsFile) -> list[Finding]:
    return [f for f in validate_results(results, "r.json").findings if f.rule == "clocks"]


def shifted(run: Run, seconds: float) -> Run:
    """The run with every Unix timestamp it records moved by `seconds` (a clock off)."""
    return replaced(
        run, started_unix_s=run.started_unix_s + seconds, ended_unix_s=run.ended_unix_s + seconds,
        energy=[replaced(w, start_unix_s=w.start_unix_s + seconds,
                         end_unix_s=w.end_unix_s + seconds) for w in run.energy])


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_the_committed_campaigns_keep_their_clocks(path: Path) -> None:
    assert clocks(load_raw(path)) == []


def test_a_run_stamped_an_hour_early_is_named_not_its_neighbours() -> None:
    # A local-time stamp taken for UTC: one run an hour before the file existed, which also
    # puts it before the run the schedule ran just ahead of it.
    results = load_raw(AUTO_CAMPAIGN)
    i = next(i for i, r in enumerate(results.runs) if r.order == 30)
    runs = list(results.runs)
    runs[i] = shifted(runs[i], -3600.0)
    found = clocks(replaced(results, runs=runs))
    assert {f.run_id for f in found} == {runs[i].id}
    assert all(f.severity == "blocking" for f in found)
    messages = " ".join(f.message for f in found)
    assert "before the campaign was created" in messages and "overlaps run" in messages
    assert {f.json_path for f in found} == {f"$.runs[{i}].started_unix_s"}


def test_a_run_stamped_late_is_the_one_named_when_it_overlaps_the_next() -> None:
    results = load_raw(AUTO_CAMPAIGN)
    i = next(i for i, r in enumerate(results.runs) if r.order == 12)
    runs = list(results.runs)
    runs[i] = shifted(runs[i], 40.0)  # ran into order 13's time
    [finding] = clocks(replaced(results, runs=runs))
    assert finding.run_id == runs[i].id and finding.json_path == f"$.runs[{i}].ended_unix_s"


def test_a_campaign_created_after_its_runs_blocks_every_run() -> None:
    results = load_raw(AUTO_CAMPAIGN)
    late = replaced(results, created=results.created + timedelta(days=1))
    found = clocks(late)
    assert len(found) == len(results.runs) and all(f.severity == "blocking" for f in found)


def _metered(**kw: object) -> ResultsFile:
    sensors = [make_sensor("pkg"), make_sensor("psys", scope="board", kind="power",
                                                 smoothing_s=0.0)]
    return make_results(sensors=sensors, repeats=3, decode_s=2.0, **kw)


def test_a_window_on_the_monotonic_clock_is_rejected_for_its_sensor_and_run() -> None:
    # A backend that stamped its window with time.monotonic() (seconds since boot).
    results = _metered()
    run = results.runs[1]
    boot = 8123.5
    energy = [replaced(w, start_unix_s=boot, end_unix_s=boot + 2.0) if w.sensor == "psys"
              else w for w in run.energy]
    altered = replaced(results, runs=[results.runs[0], replaced(run, energy=energy),
                                      results.runs[2]])
    [finding] = clocks(altered)
    assert (finding.severity, finding.run_id, finding.sensor) == ("rejected", run.id, "psys")
    assert finding.json_path == "$.runs[1].energy[1].start_unix_s"
    report = validate_results(altered, "r.json")
    assert report.rejection_of(run.id, "psys") == finding
    assert report.rejection_of(run.id, "pkg") is None
    assert clocks(results) == []


@pytest.mark.parametrize(
    ("t_s", "words"),
    [
        ([1_767_225_600.0 + 0.1 * i for i in range(20)], "past the"),  # Unix, not relative
        ([0.0, 0.1, 0.2, 0.15, 0.3], "before sample 2"),
        ([-0.5, 0.0, 0.1], "before the idle window began"),
    ],
)
def test_a_trace_on_another_clock_is_rejected(t_s: list[float], words: str) -> None:
    results = _metered()
    run = results.runs[0]
    trace = replaced(make_trace("pkg", [10.0 + i for i in range(len(t_s))]), t_s=t_s)
    altered = replaced(results, runs=[replaced(run, samples=[trace]), *results.runs[1:]])
    [finding] = clocks(altered)
    assert (finding.run_id, finding.sensor, finding.severity) == (run.id, "pkg", "rejected")
    assert words in finding.message and finding.json_path.startswith("$.runs[0].samples[0].t_s")


@pytest.mark.parametrize("same_name", [False, True])
def test_shards_running_at_once_on_two_machines_do_not_overlap(tmp_path: Path,
                                                               same_name: bool) -> None:
    # Two machines ran their shards at the same time; two containers may share a name.
    paths = write_shards(tmp_path, prompts=("p1",), repeats=4)
    first = load_raw(paths[0])
    for path in paths:
        results = load_raw(path)
        shift = first.runs[0].started_unix_s - min(r.started_unix_s for r in results.runs)
        hosts = [replaced(h, hostname="localhost") for h in results.hosts] if same_name \
            else results.hosts
        runs = [replaced(shifted(r, shift), host=hosts[0].hostname) for r in results.runs]
        path.write_text(replaced(results, runs=runs, hosts=hosts).model_dump_json(),
                        encoding="utf-8")
    out = tmp_path / "merged.json"
    merge_files(out, paths)
    merged = load_raw(out)
    assert len({r.host for r in merged.runs}) == (1 if same_name else 2)
    assert clocks(merged) == []
    # On one machine, the same runs would overlap.
    one = replaced(merged, merged_from=[], hosts=merged.hosts[:1],
                   runs=[replaced(r, host=merged.hosts[0].hostname) for r in merged.runs])
    assert clocks(one)
