"""Two campaigns a page shows side by side, and every way the comparability key says they
differ (phase.analysis.comparable): for the cross-host table (phase.publish.pages.builds), a
version's changes against the previous version, and a note citing another note."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from phase.analysis.comparable import Difference, differences
from phase.publish.data.datasets import Dataset


@dataclass(frozen=True)
class Side:
    label: str  # how the page names this campaign (a host class)
    dataset: Dataset


@dataclass(frozen=True)
class PairDifferences:
    """Two campaigns a page shows side by side and every way they differ."""

    a: Side
    b: Side
    diffs: tuple[Difference, ...]

    @property
    def build(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.diffs if d.kind == "build")

    @property
    def host(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.diffs if d.kind == "host")

    def sentences(self, kind: str) -> list[str]:
        return [d.sentence(self.a.label, self.b.label) for d in self.diffs if d.kind == kind]


def compare_sides(sides: Sequence[Side]) -> list[PairDifferences]:
    """Every pair of the sides that differs in anything the comparability key records."""
    out = []
    for a, b in combinations(sides, 2):
        ha, hb = a.dataset.raw_header, b.dataset.raw_header
        if ha is None or hb is None:
            continue  # a summary-only file records no build
        diffs = differences(ha, hb)
        if diffs:
            out.append(PairDifferences(a, b, tuple(diffs)))
    return out


def versus(previous: Sequence[Dataset], current: Sequence[Dataset],
           label_a: str, label_b: str) -> list[PairDifferences]:
    """Each raw campaign of `current` against the one of `previous` it follows (the same file,
    else one of the same experiment, else the first), where they differ."""
    before = [d for d in previous if d.raw_header is not None]
    out = []
    for new in (d for d in current if d.raw_header is not None):
        header = new.raw_header
        assert header is not None
        same = [d for d in before if d.name == new.name]
        kin = [d for d in before if d.raw_header is not None
               and d.raw_header.experiment == header.experiment]
        old = next(iter(same or kin or before), None)
        if old is None or old.name == new.name:
            continue
        out += compare_sides([Side(label_a, old), Side(label_b, new)])
    return out
