"""Cost profiles for tests: curves chosen by the test, never measurements.

    from cost_factories import make_profile
    profile = make_profile(target=lambda b: 10 + 5 * b, draft=lambda b: 2 * b)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from phase.results import CostProfile, PassCost, ProfilePoint

TARGET_SIZES = tuple(range(1, 18))
DRAFT_SIZES = (1, 2, 4, 8, 16)


def make_pass(b: int, ms: float, energy_j: dict[str, float] | None = None) -> PassCost:
    energy = energy_j or {}
    return PassCost(tokens=b, ms=ms, ms_spread=0.0, block_ms=[ms, ms], block_passes=[3, 3],
                    energy_j=energy, energy_spread={n: 0.0 for n in energy},
                    block_energy_j={n: [j, j] for n, j in energy.items()})


def make_point(kv_tokens: int, target: Callable[[int], float],
               draft: Callable[[int], float] | None = None,
               joules_per_ms: dict[str, float] | None = None,
               prompt: str | None = None) -> ProfilePoint:
    """A point whose pass of b tokens costs target(b) ms (draft(b) ms); where joules_per_ms
    is given, each sensor reads that many J per ms of pass."""
    def energy(ms: float) -> dict[str, float] | None:
        return {n: ms * f for n, f in joules_per_ms.items()} if joules_per_ms else None

    return ProfilePoint(
        prompt=prompt, kv_tokens=kv_tokens,
        target=[make_pass(b, target(b), energy(target(b))) for b in TARGET_SIZES],
        draft=[make_pass(b, draft(b), energy(draft(b))) for b in DRAFT_SIZES] if draft else [],
    )


def make_profile(target: Callable[[int], float] = lambda b: 10.0 + 5.0 * b,
                 draft: Callable[[int], float] | None = None, *,
                 kv_tokens: Sequence[int] = (100,), lookup_ms: float = 0.05,
                 joules_per_ms: dict[str, float] | None = None,
                 points: list[ProfilePoint] | None = None) -> CostProfile:
    pts = points or [make_point(kv, target, draft, joules_per_ms) for kv in kv_tokens]
    has_energy = any(c.energy_j for p in pts for c in p.target)
    return CostProfile(
        points=pts, position_rule="fixture", blocks=2, min_block_s=0.0,
        ngram_lookup_ms=lookup_ms, ngram_lookup_ms_spread=0.0,
        draft_reason=None if any(p.draft for p in pts) else "fixture: no draft",
        energy_reason=None if has_energy else "fixture: no sensor", wall_s=1.0,
    )
