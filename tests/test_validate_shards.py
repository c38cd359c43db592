"""Issue 30, class 3: merged and sharded files re-checked from the file alone, with the checks
`phase merge` itself makes (phase.validate.sharding).

Files are a campaign's shards written by tests/shard_files.py and merged by `phase merge`,
and the committed campaign, each altered the way a hand-edit, a mislabelled shard or a
resumed shard would alter it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from factories import replaced
from shard_files import write_shards

from phase.campaign.merge import merge_files
from phase.results import HostInfo, ResultsFile, load_raw
from phase.validate import Finding, RuleSettings, validate_results

REPO = Path(__file__).resolve().parent.parent
CAMPAIGN = REPO / "results" / "speculative-x86_64-2c-2026-11-30-2.json"


def shards(results: ResultsFile) -> list[Finding]:
    return [f for f in validate_results(results, "r.json").findings if f.rule == "shards"]


def _merged(tmp_path: Path, **kw: object) -> ResultsFile:
    paths = write_shards(tmp_path, **kw)  # type: ignore[arg-type]
    out = tmp_path / "merged.json"
    merge_files(out, paths)
    return load_raw(out)


def test_a_merged_campaign_and_its_shards_pass(tmp_path: Path) -> None:
    merged = _merged(tmp_path)
    assert shards(merged) == [] and not validate_results(merged, "m.json").blocking
    for path in sorted(tmp_path.glob("*-shard-*.json")):
        assert shards(load_raw(path)) == []
    assert shards(load_raw(CAMPAIGN)) == []


def test_a_run_naming_a_host_the_file_does_not_list_blocks(tmp_path: Path) -> None:
    merged = _merged(tmp_path)
    runs = list(merged.runs)
    runs[3] = replaced(runs[3], host="node7")
    [f] = shards(replaced(merged, runs=runs))
    assert (f.severity, f.run_id, f.json_path) == ("blocking", runs[3].id, "$.runs[3].host")
    assert "node7" in f.message


def test_the_committed_campaign_with_a_run_from_an_unlisted_host_blocks() -> None:
    results = load_raw(CAMPAIGN)
    runs = list(results.runs)
    runs[10] = replaced(runs[10], host="vm-2")
    [f] = shards(replaced(results, runs=runs))
    assert f.run_id == runs[10].id and f.json_path == "$.runs[10].host"


@pytest.mark.parametrize(("field", "value"), [("ram_gib", 32), ("accelerator", "cuda"),
                                               ("cpu_model", "Fixture CPU 9100")])
def test_hosts_of_different_classes_in_one_file_block(tmp_path: Path, field: str,
                                                       value: object) -> None:
    merged = _merged(tmp_path)
    hosts = list(merged.hosts)
    hosts[1] = replaced(hosts[1], identity=replaced(hosts[1].identity, **{field: value}))
    [f] = shards(replaced(merged, hosts=hosts))
    assert f.json_path == f"$.hosts[1].identity.{field}" and "node0" in f.message


def test_a_shard_holding_another_shards_prompt_blocks(tmp_path: Path) -> None:
    paths = write_shards(tmp_path)
    first, second = load_raw(paths[0]), load_raw(paths[1])
    # A shard that kept a run of the other shard's prompt (p2) after a resume went wrong.
    stray = next(r for r in second.runs if r.strategy == "plain")
    runs = sorted([*first.runs, stray], key=lambda r: r.order)
    found = shards(replaced(first, runs=runs))
    i = runs.index(stray)
    assert [(f.run_id, f.json_path) for f in found] == [(stray.id, f"$.runs[{i}].prompt")]
    assert "another shard's part" in found[0].message


def test_a_shard_recording_a_part_its_index_does_not_get_blocks(tmp_path: Path) -> None:
    paths = write_shards(tmp_path)
    first = load_raw(paths[0])
    assert first.shard is not None
    wrong = replaced(first, shard=replaced(first.shard, prompts=["p1", "p2"]))
    found = shards(wrong)
    assert [f.json_path for f in found] == ["$.shard.prompts"]


def test_a_merged_run_attributed_to_the_host_that_did_not_run_its_shard_blocks(
        tmp_path: Path) -> None:
    merged = _merged(tmp_path)
    i = next(i for i, r in enumerate(merged.runs) if r.prompt == "p2")
    runs = list(merged.runs)
    runs[i] = replaced(runs[i], host="node0")
    [f] = shards(replaced(merged, runs=runs))
    assert f.json_path == f"$.runs[{i}].host" and "node1" in f.message


def test_a_merged_file_missing_a_shard_or_listing_it_twice_blocks(tmp_path: Path) -> None:
    merged = _merged(tmp_path)
    doubled = replaced(merged, merged_from=[merged.merged_from[0], merged.merged_from[0]])
    messages = " ".join(f.message for f in shards(doubled))
    assert "shard 0 given twice" in messages and "shard(s) 1 of 2 missing" in messages


def test_host_spread_tells_apart_two_machines_sharing_a_name(tmp_path: Path) -> None:
    # Two containers both called "localhost" ran one repeat block each; the second ran 20%
    # slower. Grouped by name they would be one host and the spread would be invisible.
    paths = write_shards(tmp_path, prompts=("p1",), repeats=4,
                         decode_s=lambda slot: 1.2 if slot.repeat >= 2 else 1.0)
    for path in paths:
        results = load_raw(path)
        host = HostInfo(hostname="localhost", host_class="fixture-2c",
                        identity=results.hosts[0].identity, shards=results.hosts[0].shards)
        path.write_text(replaced(results, hosts=[host]).model_dump_json(), encoding="utf-8")
    out = tmp_path / "merged.json"
    merge_files(out, paths)
    report = validate_results(load_raw(out), "m.json", RuleSettings())
    spread = [f for f in report.findings if f.rule == "host-spread"]
    assert spread and "localhost (shard 0)" in spread[0].message
    assert "localhost (shard 1)" in spread[0].message
    assert [f for f in report.findings if f.rule == "shards"] == []


def test_one_shard_merged_twice_under_two_names_blocks(tmp_path: Path) -> None:
    """Issue 47: the same bytes listed as two shards (another name and index, one sha256)."""
    merged = _merged(tmp_path)
    first, second = merged.merged_from
    twice = replaced(merged, merged_from=[first, replaced(second, sha256=first.sha256)])
    found = [f for f in shards(twice) if f.json_path == "$.merged_from[1].sha256"]
    assert len(found) == 1 and "the same file merged twice" in found[0].message
    assert found[0].severity == "blocking"
