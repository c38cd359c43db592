"""A cost profile as its data page shows it: every pass size of every profiled point, with the
blocks its median came from, each row anchored so that the cost-model tables of a note can
link a figure to the measurements behind it.
"""

from __future__ import annotations

from dataclasses import dataclass

from phase.analysis.formatting import DASH, fmt, pct
from phase.publish.markup.anchors import profile_anchor
from phase.results import CostProfile, PassCost


@dataclass(frozen=True)
class BlockRow:
    anchor: str
    role: str  # target | draft
    tokens: int
    logits: str
    ms: str
    spread: str
    blocks: str  # each block's per-pass ms and its pass count
    energy: str  # per-pass joules by sensor, with each block's


@dataclass(frozen=True)
class ProfilePointView:
    anchor: str
    title: str
    rows: list[BlockRow]


@dataclass(frozen=True)
class ProfileView:
    points: list[ProfilePointView]
    facts: list[tuple[str, str]]


def _energy(cost: PassCost) -> str:
    if not cost.energy_j:
        return DASH
    return "; ".join(
        f"{name}: {fmt(joules, 4)} J ("
        + ", ".join(fmt(b, 4) for b in cost.block_energy_j.get(name, [])) + ")"
        for name, joules in cost.energy_j.items())


def _row(point: int, role: str, cost: PassCost) -> BlockRow:
    return BlockRow(
        anchor=profile_anchor(point, role, cost.tokens),
        role=role,
        tokens=cost.tokens,
        logits=DASH if cost.logits is None else str(cost.logits),
        ms=fmt(cost.ms, 3),
        spread=pct(cost.ms_spread, 1),
        blocks=", ".join(f"{fmt(ms, 3)} ms × {n}"
                         for ms, n in zip(cost.block_ms, cost.block_passes, strict=True)),
        energy=_energy(cost),
    )


def profile_view(profile: CostProfile | None) -> ProfileView | None:
    if profile is None:
        return None
    points = [
        ProfilePointView(
            anchor=profile_anchor(i),
            title=f"KV fill {p.kv_tokens}" + (f" (prompt {p.prompt})" if p.prompt else ""),
            rows=[_row(i, "target", c) for c in p.target]
            + [_row(i, "draft", c) for c in p.draft],
        )
        for i, p in enumerate(profile.points)
    ]
    facts = [("how fills were chosen", profile.position_rule),
             ("blocks per pass size", str(profile.blocks)),
             ("shortest block", f"{fmt(profile.min_block_s, 3)} s"),
             ("n-gram lookup", DASH if profile.ngram_lookup_ms is None
              else f"{fmt(profile.ngram_lookup_ms, 4)} ms"),
             ("wall time", f"{fmt(profile.wall_s, 1)} s")]
    facts += [(label, text) for label, text in (("no draft", profile.draft_reason),
                                                ("no energy", profile.energy_reason)) if text]
    return ProfileView(points, facts)
