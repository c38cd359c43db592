"""Issue 30, class 2: the cost profile against its own blocks, its units and physics.

Files are the committed campaign's measured profile (which has llama.cpp's kernel switch: a
16-token pass cheaper than 12-15 tokens) and a factory profile with energy, each altered the
way a profiler bug or a unit slip would alter it.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from cost_factories import make_profile
from factories import make_results, make_sensor, replaced

from phase.results import CostProfile, PassCost, ResultsFile, load_raw
from phase.validate import Finding, validate_results

REPO = Path(__file__).resolve().parent.parent
CAMPAIGN = REPO / "results" / "speculative-x86_64-2c-2026-11-30-2.json"


def profile_findings(results: ResultsFile) -> list[Finding]:
    return [f for f in validate_results(results, "r.json").findings if f.rule == "profile"]


def with_pass(results: ResultsFile, point: int, role: str, index: int,
              change) -> ResultsFile:
    profile = results.profile
    assert profile is not None
    points = list(profile.points)
    passes = list(getattr(points[point], role))
    passes[index] = change(passes[index])
    points[point] = replaced(points[point], **{role: passes})
    return replaced(results, profile=replaced(profile, points=points))


def scaled(cost: PassCost, factor: float) -> PassCost:
    """The pass as if every block had run `factor` times as long (its median follows)."""
    return replaced(cost, ms=cost.ms * factor, block_ms=[m * factor for m in cost.block_ms])


def test_the_measured_profile_passes_with_its_kernel_switch() -> None:
    results = load_raw(CAMPAIGN)
    assert results.profile is not None
    target = {c.tokens: c.ms for c in results.profile.points[0].target}
    assert all(target[16] < target[b] for b in range(12, 16))  # what real kernels do
    assert profile_findings(results) == []


def test_a_nine_token_verification_cheaper_than_a_one_token_pass_is_flagged() -> None:
    # The profiler timed the 9-token pass without its logits rows (or swapped two sizes).
    results = load_raw(CAMPAIGN)
    target = results.profile.points[1].target  # type: ignore[union-attr]
    j = next(j for j, c in enumerate(target) if c.tokens == 9)
    factor = 0.8 * target[0].ms / target[j].ms
    [f] = profile_findings(with_pass(results, 1, "target", j, lambda c: scaled(c, factor)))
    assert (f.severity, f.json_path) == ("warning", f"$.profile.points[1].target[{j}].ms")
    assert "9-token pass" in f.message and "1-token pass" in f.message


def test_a_cost_that_is_not_the_median_of_its_blocks_blocks() -> None:
    # A profiler that stored the mean instead of the median.
    results = load_raw(CAMPAIGN)
    [f] = profile_findings(with_pass(
        results, 0, "draft", 2, lambda c: replaced(c, ms=statistics.fmean(c.block_ms))))
    assert f.json_path == "$.profile.points[0].draft[2].ms" and "median" in f.message


def test_a_pass_timed_in_seconds_blocks() -> None:
    results = load_raw(CAMPAIGN)
    [f] = profile_findings(with_pass(results, 0, "target", 0, lambda c: scaled(c, 1e-3)))
    assert f.json_path == "$.profile.points[0].target[0].block_ms[0]"
    assert "min_block_s" in f.message


def test_a_point_off_its_prompts_mid_run_fill_blocks() -> None:
    results = load_raw(CAMPAIGN)
    profile = results.profile
    assert profile is not None
    points = [replaced(profile.points[0], kv_tokens=profile.points[0].kv_tokens + 64),
              *profile.points[1:]]
    [f] = profile_findings(replaced(results, profile=replaced(profile, points=points)))
    assert f.json_path == "$.profile.points[0].kv_tokens"


def _with_energy(profile: CostProfile) -> ResultsFile:
    return make_results(sensors=[make_sensor("chip")], profile=profile)


def test_energy_per_pass_in_the_wrong_unit_or_off_its_blocks_blocks() -> None:
    clean = _with_energy(make_profile(joules_per_ms={"chip": 0.012}))  # 12 W
    assert profile_findings(clean) == []
    # Millijoules stored as joules: 12 kW from a chip counter.
    mj = with_pass(clean, 0, "target", 3, lambda c: replaced(
        c, energy_j={"chip": c.energy_j["chip"] * 1e3},
        block_energy_j={"chip": [j * 1e3 for j in c.block_energy_j["chip"]]}))
    [f] = profile_findings(mj)
    assert f.json_path == "$.profile.points[0].target[3].energy_j" and "wrong unit" in f.message
    # A per-pass energy that its blocks do not give.
    off = with_pass(clean, 0, "target", 5, lambda c: replaced(
        c, energy_j={"chip": c.energy_j["chip"] * 1.3}))
    [f] = profile_findings(off)
    assert f.json_path == "$.profile.points[0].target[5].energy_j" and "median" in f.message
    # A sensor the file does not declare.
    ghost = with_pass(clean, 0, "target", 1, lambda c: replaced(
        c, energy_j={**c.energy_j, "gpu": 1.0}, block_energy_j={**c.block_energy_j,
                                                                 "gpu": [1.0, 1.0]}))
    assert any("does not declare" in f.message for f in profile_findings(ghost))


@pytest.mark.parametrize("factor", [0.97, 1.0, 1.5])
def test_a_pass_within_the_stated_noise_of_the_one_token_pass_passes(factor: float) -> None:
    # Two-token passes cost about a one-token pass on a CPU; 3% cheaper is within the 1%
    # floor plus the two passes' spreads (2% each here).
    profile = make_profile(target=lambda b: 100.0)
    results = make_results(sensors=[], profile=profile)

    def noisy(c: PassCost) -> PassCost:
        ms = c.ms * factor
        return replaced(c, ms=ms, block_ms=[ms * 0.99, ms * 1.01], ms_spread=0.02)

    results = with_pass(results, 0, "target", 0, lambda c: replaced(
        c, block_ms=[99.0, 101.0], ms_spread=0.02))
    assert profile_findings(with_pass(results, 0, "target", 1, noisy)) == []
