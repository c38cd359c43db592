"""A merged campaign keeps every shard's cost profile: each shard profiled the fills of its
own prompts, so the merged file's profile pools their points (tests/shard_files.py inputs,
profiles from tests/cost_factories.py: chosen curves, not measurements)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from cost_factories import make_point, make_profile
from shard_files import edit, write_shards

from phase.cli import main
from phase.results import CostProfile, load_raw


def _profile(prompt: str, kv_tokens: int, ms: float) -> CostProfile:
    return make_profile(points=[make_point(kv_tokens, lambda b: ms + b, prompt=prompt)])


def test_merged_profile_pools_the_shards_points(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2)
    edit(shards[0], profile=_profile("p1", 100, 10.0))
    edit(shards[1], profile=_profile("p2", 300, 20.0))
    out = tmp_path / "merged.json"
    result = CliRunner().invoke(main, ["merge", str(out), *map(str, shards)])
    assert result.exit_code == 0, result.output
    profile = load_raw(out).profile
    assert profile is not None
    assert [(p.prompt, p.kv_tokens, p.target[0].ms) for p in profile.points] == [
        ("p1", 100, 11.0), ("p2", 300, 21.0)]
    assert profile.wall_s == 2.0  # each fixture profile took 1 s


def test_a_fill_profiled_by_two_shards_is_kept_once(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2, prompts=("p1",))  # split by repeats
    edit(shards[0], profile=_profile("p1", 100, 10.0))
    edit(shards[1], profile=_profile("p1", 100, 12.0))
    out = tmp_path / "merged.json"
    assert CliRunner().invoke(main, ["merge", str(out), *map(str, shards)]).exit_code == 0
    profile = load_raw(out).profile
    assert profile is not None
    assert [(p.prompt, p.target[0].ms) for p in profile.points] == [("p1", 11.0)]


def test_shards_without_profiles_merge_without_one(tmp_path: Path) -> None:
    shards = write_shards(tmp_path, count=2)
    out = tmp_path / "merged.json"
    assert CliRunner().invoke(main, ["merge", str(out), *map(str, shards)]).exit_code == 0
    assert load_raw(out).profile is None
