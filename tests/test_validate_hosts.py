"""host-spread: the same condition measured on several hosts of one class must agree."""

from __future__ import annotations

from pathlib import Path

from shard_files import write_shards

from phase.campaign.merge import merge_files
from phase.validate import RuleSettings, validate_file


def _merged(tmp_path: Path, decode_s: object) -> Path:
    """Two hosts, one prompt split by repeats: every condition has runs on both hosts."""
    shards = write_shards(tmp_path, count=2, prompts=("p1",), repeats=4, decode_s=decode_s)
    out = tmp_path / "merged.json"
    merge_files(out, shards)
    return out


def test_hosts_that_agree_raise_nothing(tmp_path: Path) -> None:
    report = validate_file(_merged(tmp_path, 1.0))
    assert [f for f in report.findings if f.rule == "host-spread"] == []


def test_a_host_that_measures_differently_is_its_own_finding(tmp_path: Path) -> None:
    # Repeats 2 and 3 ran on node1 and took 20% longer; the chip counter reads the same
    # power, so energy per token differs by the same 20% between the hosts.
    out = _merged(tmp_path, lambda slot: 1.2 if slot.repeat >= 2 else 1.0)
    found = [f for f in validate_file(out).findings if f.rule == "host-spread"]
    assert {(f.prompt, f.strategy) for f in found} == {("p1", "plain"), ("p1", "draft-4")}
    f = found[0]
    assert f.severity == "warning" and f.sensor == "chip"
    assert f.numbers["hosts"] == 2
    assert abs(f.numbers["spread"] - 0.2 / 1.1) < 1e-9
    assert "node0" in f.message and "node1" in f.message
    # A looser limit lets it pass.
    loose = validate_file(out, RuleSettings(host_spread_max=0.25))
    assert [f for f in loose.findings if f.rule == "host-spread"] == []


def test_a_split_by_prompts_keeps_each_condition_on_one_host(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2, decode_s=lambda slot: 2.0 if slot.prompt == "p2"
                          else 1.0)
    out = tmp_path / "merged.json"
    merge_files(out, shards)
    assert [f for f in validate_file(out).findings if f.rule == "host-spread"] == []
