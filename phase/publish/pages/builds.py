"""Whether the campaigns a page puts side by side were measured on comparable builds, and
what the page says where they were not (phase.analysis.comparable computes the differences).

A cross-host table refuses campaigns whose builds differ (llama.cpp, its binding, the kernels
compiled in, the weight buffers, the accelerator, the models): `MixedBuildsError` names both
files and every differing field. It shows them only when asked: by `phase site
--allow-mixed-builds`, or where each file is cited by a note that says `mixed_builds: true` in
its front matter (both sides consent); the page then states every difference above its
tables. Differences of the host alone (CPU, flags, cores, GPUs, threads: what a cross-host
table is for) are stated without refusing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from phase.base.errors import PhaseError
from phase.publish.data.datasets import Dataset
from phase.publish.notes.source import NoteSource
from phase.publish.numbers.builds import PairDifferences

ALLOW_FLAG = "--allow-mixed-builds"
ALLOW_KEY = "mixed_builds: true"


class MixedBuildsError(PhaseError):
    """A page would put campaigns measured on different builds side by side, unasked."""


def allowed_by_notes(notes: Sequence[NoteSource],
                     versions: Sequence[Sequence[Sequence[Dataset]]]) -> frozenset[Path]:
    """The results files cited (in any version) by a note with `mixed_builds: true`: two
    campaigns may stand side by side though their builds differ where both are among them
    (each side consents, so a new campaign on another build is still refused)."""
    out: set[Path] = set()
    for note, by_version in zip(notes, versions, strict=True):
        if note.meta.mixed_builds:
            out.update(ds.path for files in by_version for ds in files)
    return frozenset(out)


def check_builds(what: str, pairs: Sequence[PairDifferences], *, allow_all: bool,
                 allowed: frozenset[Path]) -> None:
    """Refuse (MixedBuildsError) the first pair whose builds differ, unless asked."""
    if allow_all:
        return
    for pair in pairs:
        if not pair.build:
            continue
        if {pair.a.dataset.path, pair.b.dataset.path} <= allowed:
            continue
        fields = "; ".join(pair.sentences("build"))
        raise MixedBuildsError(
            f"{what} would put {pair.a.dataset.name} ({pair.a.label}) beside "
            f"{pair.b.dataset.name} ({pair.b.label}), measured on different builds: {fields}. "
            f"Their figures are not like for like; to show them anyway, cite each file in a "
            f"note with `{ALLOW_KEY}` in its front matter, or build with `{ALLOW_FLAG}` "
            f"(the page then states every difference)")
